package approval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dsh-go/dsh/plugins/tools"
)

// ErrWithdrawn is returned to an answer given after its request was
// withdrawn (the call was cancelled, the deadline was reached, or the
// service was closed): by [Pending.Respond], and shown by [Terminal]. The
// error also matches the withdrawal's cause ([ErrTimeout], [ErrClosed],
// context.Canceled or the caller's cause). Such an answer grants nothing.
var ErrWithdrawn = errors.New("approval: request withdrawn")

// ErrAnswered is returned by [Pending.Respond] for a second response.
var ErrAnswered = errors.New("approval: request already answered")

type slotState uint8

const (
	slotPending slotState = iota
	slotAnswered
	slotWithdrawn
)

// slot is one request's single decision: it goes from pending to answered
// or to withdrawn once, and the first transition wins.
//
// Withdrawal is decided by construction, not by timing: check reports
// whether a withdrawal condition holds (the call's context is done, the
// deadline is reached, the service is closed) and is evaluated, under mu,
// before every transition and every read of the state. So once a condition
// holds, the request is withdrawn for everybody who looks, even if the
// goroutine that waits for the condition has not run yet, and an answer
// can win only if it was given before the condition held.
type slot struct {
	check      func() (cause error) // non-nil: withdraw with this cause
	onWithdraw func(cause error)    // called once, after the withdrawal, without mu
	done       chan struct{}        // closed by the transition

	mu      sync.Mutex
	state   slotState
	outcome tools.ApprovalOutcome // answered
	err     error                 // answered with a failure, or the withdrawal's cause
}

func newSlot(check func() error, onWithdraw func(error)) *slot {
	return &slot{check: check, onWithdraw: onWithdraw, done: make(chan struct{})}
}

// contextSlot is the slot of a request answered outside the service (a
// [Queue] or [Terminal] called directly): withdrawn once ctx is done.
func contextSlot(ctx context.Context) *slot {
	return newSlot(func() error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return nil
	}, nil)
}

// pollLocked withdraws a pending slot whose withdrawal condition holds and
// reports whether it did.
func (s *slot) pollLocked() bool {
	if s.state != slotPending {
		return false
	}
	cause := s.check()
	if cause == nil {
		return false
	}
	s.state, s.err = slotWithdrawn, cause
	close(s.done)
	return true
}

// unlock releases mu and then, if the caller withdrew the slot, runs
// onWithdraw. It is deferred, so that a check that panics (a hostile
// context's Err) does not leave mu locked.
func (s *slot) unlock(withdrew bool) {
	cause := s.err
	s.mu.Unlock()
	if withdrew && s.onWithdraw != nil {
		s.onWithdraw(cause)
	}
}

// settle answers the request with o (or with the answerer's failure err).
// It returns nil when the answer won, [ErrAnswered] when another answer won,
// and an error matching [ErrWithdrawn] and the cause when the withdrawal
// won (possibly at this very call, if its condition holds now).
func (s *slot) settle(o tools.ApprovalOutcome, err error) error {
	s.mu.Lock()
	withdrew := false
	defer func() { s.unlock(withdrew) }()
	withdrew = s.pollLocked()
	switch s.state {
	case slotAnswered:
		return ErrAnswered
	case slotWithdrawn:
		return withdrawnError(s.err)
	}
	s.state, s.outcome, s.err = slotAnswered, o, err
	close(s.done)
	return nil
}

// withdraw withdraws the request unless it was decided; cause is used when
// no withdrawal condition names a better one.
func (s *slot) withdraw(cause error) {
	s.mu.Lock()
	withdrew := false
	defer func() { s.unlock(withdrew) }()
	withdrew = s.pollLocked()
	if !withdrew && s.state == slotPending {
		s.state, s.err = slotWithdrawn, cause
		close(s.done)
		withdrew = true
	}
}

// decision returns the state after applying the withdrawal conditions: the
// answer (outcome, failure) when answered, the cause when withdrawn.
func (s *slot) decision() (st slotState, o tools.ApprovalOutcome, err error) {
	s.mu.Lock()
	withdrew := false
	defer func() { s.unlock(withdrew) }()
	withdrew = s.pollLocked()
	return s.state, s.outcome, s.err
}

// result is what an answerer of this package returns for the slot once it
// stops waiting (the slot is decided, or ctx is done): the outcome if it
// was answered, else the withdrawal's cause. A slot still pending is
// withdrawn with ctx's cause.
func (s *slot) result(ctx context.Context) (tools.ApprovalOutcome, error) {
	st, o, err := s.decision()
	if st == slotPending {
		cause := context.Cause(ctx)
		if cause == nil {
			cause = errors.New("approval: the answerer stopped waiting")
		}
		s.withdraw(cause)
		st, o, err = s.decision()
	}
	if st == slotWithdrawn {
		return "", err
	}
	return o, err
}

func withdrawnError(cause error) error {
	if cause == nil {
		return ErrWithdrawn
	}
	return fmt.Errorf("%w: %w", ErrWithdrawn, cause)
}

// slotAnswerer is implemented by the answerers of this package ([*Queue],
// [*Terminal]). Used directly as the service's answerer, they settle the
// service's own slot at the moment the person answers, so what they tell
// the person (Respond's error, the terminal's notice) is exactly the
// service's decision. They return the slot's result.
type slotAnswerer interface {
	answerSlot(ctx context.Context, req tools.ApprovalRequest, sl *slot) (tools.ApprovalOutcome, error)
}
