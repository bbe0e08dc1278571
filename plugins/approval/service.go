package approval

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "approval"

// Answerer puts one approval request to someone and returns their answer:
// [tools.AllowedOnce], [tools.Rejected], [tools.Cancelled] (the person
// dismissed the question) or [tools.Unavailable] (nobody can answer).
//
// Answer is called on a goroutine of its own, possibly for several requests
// at once. ctx is done when the call is cancelled or the service's deadline
// fires (context.Cause is then [ErrTimeout]); the request is withdrawn then,
// and Answer must stop showing it and return promptly (its answer is no
// longer read). An error, a panic or an outcome outside the four fails the
// request closed (see [Service.Approve]).
type Answerer interface {
	Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error)
}

// AnswerFunc adapts a function to [Answerer].
type AnswerFunc func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error)

// Answer implements [Answerer].
func (f AnswerFunc) Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	return f(ctx, req)
}

// Config configures the approval service.
type Config struct {
	// Answerer answers the requests: [NewTerminal], a [*Queue], an
	// [AnswerFunc]. Nil means nobody can answer: every request is
	// [tools.Unavailable].
	Answerer Answerer
	// Timeout is how long a request may stay unanswered before it is
	// [tools.Unavailable]. Zero means no deadline (the call's own context
	// still bounds the wait). Negative is invalid.
	Timeout time.Duration
}

// Validate reports a negative Timeout.
func (c Config) Validate() error {
	if c.Timeout < 0 {
		return fmt.Errorf("approval: invalid config: negative Timeout %v", c.Timeout)
	}
	return nil
}

// ErrTimeout is the cause (context.Cause) of the context an [Answerer] is
// given once the service's deadline has passed.
var ErrTimeout = errors.New("approval: no answer before the deadline")

// ErrClosed is the cause of the context of requests that were waiting when
// the service was closed (its plugin disposed); they are unavailable.
var ErrClosed = errors.New("approval: service closed")

// ErrAnswerer is matched (errors.Is) by every error [Service.Approve]
// returns for a misbehaving answerer; errors.As gives the [*AnswererError].
var ErrAnswerer = errors.New("approval: answerer failed")

// AnswererError is a misbehaving answerer's failure: it returned an error
// (Err), panicked (Panic, Stack) or answered with an unknown Outcome.
type AnswererError struct {
	Tool    string
	CallID  string
	Outcome tools.ApprovalOutcome
	Err     error
	Panic   any
	Stack   []byte
}

// Error implements error.
func (e *AnswererError) Error() string {
	var what string
	switch {
	case e.Panic != nil:
		what = fmt.Sprintf("panicked: %v", e.Panic)
	case e.Err != nil:
		what = "failed: " + e.Err.Error()
	default:
		what = fmt.Sprintf("answered with unknown outcome %q", string(e.Outcome))
	}
	return fmt.Sprintf("approval: answerer for %s call %s %s (denied)", e.Tool, e.CallID, what)
}

// Is makes errors.Is(err, ErrAnswerer) true.
func (e *AnswererError) Is(target error) bool { return target == ErrAnswerer }

// Unwrap returns Err.
func (e *AnswererError) Unwrap() error { return e.Err }

// Service is the approval service ([tools.Approver]) the registry consults
// for every "ask" decision. It is safe for concurrent use: requests are
// answered concurrently, and the answerer decides whether to serialize them
// ([Terminal] does). The zero Service is not usable; make one with [New] or
// load [Plugin].
type Service struct {
	answerer Answerer
	timeout  time.Duration
	log      *zerolog.Logger

	mu       sync.Mutex
	closed   bool
	inflight sync.WaitGroup
	stop     context.Context
	stopNow  context.CancelCauseFunc
}

var _ tools.Approver = (*Service)(nil)

// New returns a service for cfg, logging to log (nil: no logging), for
// embedding without the plugin. An invalid cfg (see [Config.Validate]) is
// an error. Call [Service.Close] when done with it.
func New(cfg Config, log *zerolog.Logger) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newService(cfg, log), nil
}

func newService(cfg Config, log *zerolog.Logger) *Service {
	if log == nil {
		nop := zerolog.Nop()
		log = &nop
	}
	stop, stopNow := context.WithCancelCause(context.Background())
	return &Service{answerer: cfg.Answerer, timeout: cfg.Timeout, log: log, stop: stop, stopNow: stopNow}
}

// Approve answers one request. The outcome is the answerer's, except:
//
//   - No answerer, a closed service, or no answer before the deadline:
//     [tools.Unavailable], nil.
//   - ctx done while waiting (the call was cancelled, or the caller's own
//     deadline passed): "", ctx.Err(). The request is withdrawn from the
//     answerer (its context is done) and the registry reports
//     ABORTED_BEFORE_DISPATCH. Cancellation wins over an answer that
//     arrives at the same moment: a cancelled call never proceeds.
//   - The answerer returned an error, panicked, or returned an outcome that
//     is not one of the four: "", a *[AnswererError] (matching
//     [ErrAnswerer]). The service fails closed with an error rather than
//     with [tools.Rejected], so that the denial says what went wrong
//     instead of claiming a person rejected the call; the registry denies
//     it (APPROVAL_FAILED). An answerer that returns an error because its
//     context was done by the deadline is simply late: [tools.Unavailable].
//
// Approve returns as soon as ctx is done or the deadline passes, even when
// the answerer is slow to notice; the answerer's goroutine is still waited
// for by [Service.Close], so none is abandoned.
func (s *Service) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.closed || s.answerer == nil {
		s.mu.Unlock()
		s.log.Debug().Str("tool", req.Tool).Str("call", req.CallID).Msg("approval unavailable: no answerer")
		return tools.Unavailable, nil
	}
	s.inflight.Add(1)
	s.mu.Unlock()

	actx, cancel := context.WithCancelCause(ctx)
	stopAfter := context.AfterFunc(s.stop, func() { cancel(ErrClosed) })
	if s.timeout > 0 {
		var cancelT context.CancelFunc
		actx, cancelT = context.WithTimeoutCause(actx, s.timeout, ErrTimeout)
		defer cancelT()
	}
	defer func() {
		stopAfter()
		cancel(nil)
	}()

	type answer struct {
		o   tools.ApprovalOutcome
		err error
	}
	done := make(chan answer, 1)
	go func() {
		defer s.inflight.Done()
		var a answer
		defer func() { done <- a }()
		defer func() {
			if v := recover(); v != nil {
				a = answer{err: &AnswererError{Tool: req.Tool, CallID: req.CallID, Panic: v, Stack: debug.Stack()}}
			}
		}()
		a.o, a.err = s.answerer.Answer(actx, req)
	}()

	var a answer
	select {
	case a = <-done:
	case <-actx.Done():
	}
	if err := ctx.Err(); err != nil {
		s.log.Debug().Str("tool", req.Tool).Str("call", req.CallID).Err(err).Msg("approval withdrawn: call cancelled")
		return "", err
	}
	if actx.Err() != nil && (a.err != nil || a.o == "") {
		// Our deadline (or Close) came before an answer, or the answerer
		// gave up because of it.
		s.log.Info().Str("tool", req.Tool).Str("call", req.CallID).Err(context.Cause(actx)).Msg("approval unavailable: no answer")
		return tools.Unavailable, nil
	}
	if a.err != nil {
		var ae *AnswererError
		if !errors.As(a.err, &ae) {
			a.err = &AnswererError{Tool: req.Tool, CallID: req.CallID, Err: a.err}
		}
		s.log.Error().Str("tool", req.Tool).Str("call", req.CallID).Err(a.err).Msg("approval answerer failed; denying")
		return "", a.err
	}
	if !Known(a.o) {
		err := &AnswererError{Tool: req.Tool, CallID: req.CallID, Outcome: a.o}
		s.log.Error().Str("tool", req.Tool).Str("call", req.CallID).Err(err).Msg("approval answerer failed; denying")
		return "", err
	}
	s.log.Debug().Str("tool", req.Tool).Str("call", req.CallID).Str("outcome", string(a.o)).Msg("approval answered")
	return a.o, nil
}

// Known reports whether o is one of the four outcomes.
func Known(o tools.ApprovalOutcome) bool {
	switch o {
	case tools.AllowedOnce, tools.Rejected, tools.Cancelled, tools.Unavailable:
		return true
	}
	return false
}

// Close withdraws every waiting request (they become [tools.Unavailable]),
// makes later requests unavailable, and waits until every answerer call has
// returned. Answerers must return once their context is done; Close waits
// for one that does not. Close is idempotent. Disposing the plugin's fiber
// closes its service.
func (s *Service) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stopNow(ErrClosed)
	s.inflight.Wait()
	return nil
}

// Plugin provides a [*Service] under [tools.ApprovalService] ("approval").
// Its configuration is a [Config] (or *Config; nil means the zero Config:
// no answerer, every request unavailable). The service is closed when the
// plugin's fiber is disposed. The registry looks the service up for each
// ask, so the plugin may be loaded before or after the registry, and
// replaced at any time.
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string { return Name }

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	s := newService(cfg, c.Logger())
	// Recorded first, so it runs last: the service is withdrawn from the
	// registry's view before its in-flight requests are drained.
	if _, err := c.Track(host.EffectCustom, "approval: close service", s.Close); err != nil {
		return err
	}
	_, err = c.Provide(tools.ApprovalService, s)
	return err
}
