package approval

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools"
)

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
//
// Respond's error is the decision: nil means the answer was taken, an
// error matching [ErrWithdrawn] means the request had been withdrawn first
// and the answer grants nothing. When the Queue is the [Service]'s own
// answerer (Config.Answerer is the *Queue itself), that is the service's
// decision. Behind another answerer (a wrapper that calls
// [Queue.Answer]), nil only means the Queue took the answer; the wrapper's
// return is then what the service decides on.
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
// response, or until ctx is done. The request is withdrawn once ctx is
// done: a Respond from then on returns [ErrWithdrawn], [Pending.Done] is
// closed, and Answer returns context.Cause(ctx). A response given before
// that is returned even if ctx is done by the time Answer returns.
func (q *Queue) Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	return q.answerSlot(ctx, req, contextSlot(ctx))
}

func (q *Queue) answerSlot(ctx context.Context, req tools.ApprovalRequest, sl *slot) (tools.ApprovalOutcome, error) {
	p := &Pending{Request: req, sl: sl}
	if st, _, err := sl.decision(); st == slotWithdrawn {
		return "", err // never delivered
	}
	select {
	case q.ch <- p:
	case <-ctx.Done():
		return sl.result(ctx)
	case <-sl.done:
		return sl.result(ctx)
	}
	select {
	case <-sl.done:
	case <-ctx.Done():
	}
	return sl.result(ctx)
}

// Pending is one request delivered by a [Queue].
type Pending struct {
	// Request is what is asked. Treat it as read-only.
	Request tools.ApprovalRequest

	sl *slot
}

// Respond answers the request with one of the four outcomes. It returns nil
// when the answer was taken. It fails, and the answer grants nothing, with
// an error matching [ErrWithdrawn] (and the cause: [ErrTimeout],
// [ErrClosed], context.Canceled) when the request was withdrawn first
// (even in the same instant: the withdrawal wins), with [ErrAnswered] on a
// second call, and for an unknown outcome.
func (p *Pending) Respond(o tools.ApprovalOutcome) error {
	if !Known(o) {
		return fmt.Errorf("approval: Respond: unknown outcome %q (want allowed-once, rejected, cancelled or unavailable)", string(o))
	}
	return p.sl.settle(o, nil)
}

// Done is closed once the request is answered or withdrawn.
func (p *Pending) Done() <-chan struct{} { return p.sl.done }

// Withdrawn reports whether the request was withdrawn unanswered, and why
// ([ErrTimeout] for the service's deadline, [ErrClosed] when the service
// was closed, context.Canceled or the caller's cause for a cancelled call).
// Once it reports true, Respond fails.
func (p *Pending) Withdrawn() (bool, error) {
	st, _, err := p.sl.decision()
	if st == slotWithdrawn {
		return true, err
	}
	return false, nil
}
