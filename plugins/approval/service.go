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
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "approval"

// Answerer puts one approval request to someone and returns their answer:
// [tools.AllowedOnce], [tools.Rejected], [tools.Cancelled] (the person
// dismissed the question) or [tools.Unavailable] (nobody can answer).
//
// Answer is called on a goroutine of its own, possibly for several requests
// at once. The request is withdrawn the moment the call is cancelled, the
// service's deadline is reached or the service is closed, and ctx is then
// done (context.Cause is [ErrTimeout] for the deadline, [ErrClosed] for
// Close). Answer must then stop showing the request and return promptly.
// What Answer returns is the answer at the moment it returns: returned
// after the withdrawal (even in the same instant, even by an Answer that
// has not yet seen ctx done) it is late, logged and ignored, and grants
// nothing. An Answer that needs to tell the person whether the answer was
// taken uses a [Queue] (see [Pending.Respond]) or the [Terminal]. An error,
// a panic or an outcome outside the four, returned before the withdrawal,
// fails the request closed (see [Service.Approve]).
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
//
// Err and Panic are the answerer's values, untrusted: Error reads them
// under recover, and the error Unwrap returns may have a cyclic or
// absurdly deep chain, so read it with a bounded reader (package
// internal/safeerr in this module) rather than walking it with errors.Is
// or errors.As beyond this error.
type AnswererError struct {
	Tool    string
	CallID  string
	Outcome tools.ApprovalOutcome
	Err     error
	Panic   any
	Stack   []byte

	recovered bool // made by the service for a panic it recovered
}

// Error implements error. The answerer's error and panic value are read
// under recover; an Err whose chain leads back to e is not read (its
// message would be e's own, without end).
func (e *AnswererError) Error() string {
	var what string
	switch {
	case e.Panic != nil:
		what = "panicked: " + safeerr.Sprint(e.Panic)
	case e.Err != nil && safeerr.Is(e.Err, e):
		what = fmt.Sprintf("failed with an error of type %T that wraps this one", e.Err)
	case e.Err != nil:
		what = "failed: " + safeerr.Text(e.Err)
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
	return newService(cfg, log, context.Background()), nil
}

// newService returns a service that is closed for new answers (its
// requests withdrawn) when life is done, and by Close.
func newService(cfg Config, log *zerolog.Logger, life context.Context) *Service {
	if log == nil {
		nop := zerolog.Nop()
		log = &nop
	}
	stop, stopNow := context.WithCancelCause(life)
	return &Service{answerer: cfg.Answerer, timeout: cfg.Timeout, log: log, stop: stop, stopNow: stopNow}
}

// Approve answers one request. Each request is decided once: by the
// answer, or by its withdrawal (the call's ctx is done, the deadline
// [Config.Timeout] is reached, or the service is closed), whichever comes
// first. The withdrawal wins every race by construction: from the moment
// its condition holds (ctx.Err() is non-nil, the clock has reached the
// deadline, Close has begun), an answer is refused, even one given in the
// same instant or by an answerer that has not yet noticed; it is logged and
// grants nothing ([Pending.Respond] returns [ErrWithdrawn]). The outcome is
// the answer's, except:
//
//   - No answerer, a closed service, or withdrawn by the deadline or by
//     Close: [tools.Unavailable], nil. The answerer's context is then done
//     with cause [ErrTimeout] or [ErrClosed].
//   - ctx done when Approve returns (the call was cancelled, or the
//     caller's own deadline passed, before the answer or after it): "",
//     ctx.Err(); the registry reports ABORTED_BEFORE_DISPATCH. Approve never
//     returns [tools.AllowedOnce] when ctx was done at the moment of the
//     decision, nor when ctx is done at its last check before returning.
//     A cancellation after that is the caller's to check before it acts
//     on the grant.
//   - The answerer returned an error, panicked, or returned an outcome that
//     is not one of the four, before the withdrawal: "", a *[AnswererError]
//     (matching [ErrAnswerer]). The service fails closed with an error
//     rather than with [tools.Rejected], so that the denial says what went
//     wrong instead of claiming a person rejected the call; the registry
//     denies it (APPROVAL_FAILED). An answerer that fails after the
//     withdrawal (typically because its context is done) is simply late.
//
// Approve returns as soon as the request is decided, even when the answerer
// is slow to notice its withdrawal; the answerer's goroutine is still
// waited for by [Service.Close], so none is abandoned.
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

	// The answerer's context: done once the request is withdrawn, with
	// the withdrawal's cause, and after the decision in any case.
	cctx, cancel := context.WithCancelCause(ctx)
	actx := context.Context(cctx)
	stopAfter := context.AfterFunc(s.stop, func() { cancel(ErrClosed) })
	var deadline time.Time
	if s.timeout > 0 {
		deadline = time.Now().Add(s.timeout)
		var cancelT context.CancelFunc
		actx, cancelT = context.WithDeadlineCause(cctx, deadline, ErrTimeout)
		defer cancelT()
	}
	defer func() {
		stopAfter()
		cancel(nil)
	}()
	// The withdrawal conditions, evaluated before every transition of the
	// request: the first that holds names the cause.
	sl := newSlot(func() error {
		switch {
		case ctx.Err() != nil:
			return context.Cause(ctx)
		case s.stop.Err() != nil:
			return ErrClosed
		case !deadline.IsZero() && !time.Now().Before(deadline):
			return ErrTimeout
		case actx.Err() != nil:
			return context.Cause(actx)
		}
		return nil
	}, cancel)

	go s.ask(actx, req, sl)

	select {
	case <-sl.done:
	case <-actx.Done():
	}
	st, o, err := sl.decision() // withdraws if actx is done and nobody answered first
	if cerr := ctx.Err(); cerr != nil {
		s.log.Debug().Str("tool", req.Tool).Str("call", req.CallID).Err(cerr).Msg("approval withdrawn: call cancelled")
		return "", cerr
	}
	if st == slotWithdrawn {
		s.log.Info().Str("tool", req.Tool).Str("call", req.CallID).Func(withErr(err)).Msg("approval unavailable: no answer")
		return tools.Unavailable, nil
	}
	if err != nil {
		// err is the answerer's value (its methods are answerer code, its
		// chain may be cyclic): it is read only through safeerr, and
		// what Approve returns is always an *AnswererError of ours, only
		// the panic's one made by ask passed on as it is.
		if ae, ok := err.(*AnswererError); !ok || !ae.recovered {
			err = &AnswererError{Tool: req.Tool, CallID: req.CallID, Err: err}
		}
		s.log.Error().Str("tool", req.Tool).Str("call", req.CallID).Func(withErr(err)).Msg("approval answerer failed; denying")
		return "", err
	}
	if !Known(o) {
		err := &AnswererError{Tool: req.Tool, CallID: req.CallID, Outcome: o}
		s.log.Error().Str("tool", req.Tool).Str("call", req.CallID).Func(withErr(err)).Msg("approval answerer failed; denying")
		return "", err
	}
	s.log.Debug().Str("tool", req.Tool).Str("call", req.CallID).Str("outcome", string(o)).Msg("approval answered")
	return o, nil
}

// ask runs the answerer for one request and settles the request with its
// answer, which loses if the request was withdrawn first. The answerers of
// this package settle it themselves, at the moment of the person's answer.
func (s *Service) ask(ctx context.Context, req tools.ApprovalRequest, sl *slot) {
	defer s.inflight.Done()
	var (
		o   tools.ApprovalOutcome
		err error
		own bool
	)
	defer func() {
		if v := recover(); v != nil {
			o, err = "", &AnswererError{Tool: req.Tool, CallID: req.CallID, Panic: v, Stack: debug.Stack(), recovered: true}
		}
		serr := sl.settle(o, err)
		if !own && err == nil && safeerr.Is(serr, ErrWithdrawn) {
			s.log.Info().Str("tool", req.Tool).Str("call", req.CallID).Str("outcome", string(o)).Func(withErr(serr)).Msg("late approval answer ignored")
		}
	}()
	if a, ok := s.answerer.(slotAnswerer); ok {
		own = true
		o, err = a.answerSlot(ctx, req, sl)
		return
	}
	o, err = s.answerer.Answer(ctx, req)
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
	s := newService(cfg, c.Logger(), c.Lifetime())
	// Recorded first, so it runs last: the service is withdrawn from the
	// registry's view before its in-flight requests are drained.
	if _, err := c.Track(host.EffectCustom, "approval: close service", s.Close); err != nil {
		return err
	}
	_, err = tools.ApprovalService.Provide(c, s)
	return err
}

// withErr adds err to a log event under zerolog's error field, as
// [zerolog.Event.Err] would, but reads it with [safeerr.Text]: err may
// carry an answerer's or a caller's error, whose Error method zerolog
// would call unprotected.
func withErr(err error) func(*zerolog.Event) {
	return func(ev *zerolog.Event) {
		if err != nil {
			ev.Str(zerolog.ErrorFieldName, safeerr.Text(err))
		}
	}
}
