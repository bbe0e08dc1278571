package approval

import (
	"context"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Handoff is an [Answerer] that hands each request, as a [*Pending], to a
// function, with the request's context (done once the request is
// withdrawn; it carries the call's values). The function answers with
// [Pending.Respond], whose error is the decision, as for a [Queue]: nil
// means the answer was taken, an error matching [ErrWithdrawn] that the
// request was withdrawn first and the answer grants nothing. It may
// return before answering (the request waits for Respond or the
// withdrawal) or wait itself. An out-of-process approval inbox uses it to
// learn, for each answer it stored, whether the caller still waited.
type Handoff func(ctx context.Context, p *Pending)

var _ Answerer = Handoff(nil)

// Answer implements [Answerer]: the request is withdrawn once ctx is done.
func (h Handoff) Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	return h.answerSlot(ctx, req, contextSlot(ctx))
}

func (h Handoff) answerSlot(ctx context.Context, req tools.ApprovalRequest, sl *slot) (tools.ApprovalOutcome, error) {
	if st, _, err := sl.decision(); st == slotWithdrawn {
		return "", err
	}
	h(ctx, &Pending{Request: req, sl: sl})
	select {
	case <-sl.done:
	case <-ctx.Done():
	}
	return sl.result(ctx)
}
