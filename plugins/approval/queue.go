package approval

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/dsh-go/dsh/plugins/tools"
)

// ErrWithdrawn is returned by [Pending.Respond] when the request was
// withdrawn (the call was cancelled or the deadline passed) before the
// response.
var ErrWithdrawn = errors.New("approval: request withdrawn")

// ErrAnswered is returned by [Pending.Respond] for a second response.
var ErrAnswered = errors.New("approval: request already answered")

// Queue is a channel-based [Answerer] for an embedding runtime or a UI:
// each request is delivered as a [*Pending] on [Queue.Requests], and the
// request waits until the receiver calls [Pending.Respond] (or the request
// is withdrawn).
//
// A request is delivered only when someone receives from the channel: one
// that is withdrawn before that is never delivered. A UI that shows several
// requests at once keeps receiving; one that shows one at a time receives
// the next after answering. Watch [Pending.Done] to take a withdrawn
// request off the screen. A Queue is safe for concurrent use.
type Queue struct {
	ch chan *Pending
}

var _ Answerer = (*Queue)(nil)

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{ch: make(chan *Pending)} }

// Requests returns the channel on which requests are delivered. It is never
// closed.
func (q *Queue) Requests() <-chan *Pending { return q.ch }

// Answer implements [Answerer]: it delivers the request and waits for its
// response, or until ctx is done (the request is then withdrawn:
// [Pending.Done] is closed and Respond returns [ErrWithdrawn]).
func (q *Queue) Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	p := &Pending{Request: req, ctx: ctx, answered: make(chan struct{}), done: make(chan struct{})}
	select {
	case q.ch <- p:
	case <-ctx.Done():
		p.withdraw()
		return "", context.Cause(ctx)
	}
	select {
	case <-p.answered:
		return p.outcome, nil
	case <-ctx.Done():
		if p.withdraw() {
			return "", context.Cause(ctx)
		}
		// Answered in the same instant: the answer stands (the service
		// still lets a cancelled call lose).
		return p.outcome, nil
	}
}

// Pending is one request delivered by a [Queue].
type Pending struct {
	// Request is what is asked. Treat it as read-only.
	Request tools.ApprovalRequest

	ctx      context.Context
	mu       sync.Mutex
	state    uint8 // 0 waiting, 1 answered, 2 withdrawn
	outcome  tools.ApprovalOutcome
	answered chan struct{}
	done     chan struct{}
}

// Respond answers the request with one of the four outcomes. It fails with
// [ErrWithdrawn] when the request was withdrawn first, with [ErrAnswered]
// on a second call, and for an unknown outcome.
func (p *Pending) Respond(o tools.ApprovalOutcome) error {
	if !Known(o) {
		return fmt.Errorf("approval: unknown outcome %q", string(o))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch p.state {
	case 1:
		return ErrAnswered
	case 2:
		return fmt.Errorf("%w: %w", ErrWithdrawn, context.Cause(p.ctx))
	}
	p.state, p.outcome = 1, o
	close(p.answered)
	close(p.done)
	return nil
}

// Done is closed once the request is answered or withdrawn.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Withdrawn reports whether the request was withdrawn unanswered, and why
// (context.Cause of the request: [ErrTimeout] for the service's deadline,
// context.Canceled or the caller's cause for a cancelled call).
func (p *Pending) Withdrawn() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == 2 {
		return true, context.Cause(p.ctx)
	}
	return false, nil
}

// withdraw marks p withdrawn unless it was answered; it reports whether it
// did.
func (p *Pending) withdraw() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state != 0 {
		return false
	}
	p.state = 2
	close(p.done)
	return true
}
