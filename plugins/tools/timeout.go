package tools

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrTimeout is matched (errors.Is) by the cause of a tool body's context
// once the tool's time budget has expired, whoever enforced it: the
// registry for a tool's declared [Definition].Timeout, or the timeout
// policy (plugins/timeout-policy) for its budgets. A body tells the
// expiry from its caller's cancellation with
//
//	errors.Is(context.Cause(ctx), tools.ErrTimeout)
var ErrTimeout = errors.New("tool time budget exceeded")

// TimeoutError is the cause a tool body's context is cancelled with when
// its budget expires: a fresh value per call (its enforcer knows the
// deadline that fired is its own by comparing pointers), matching
// [ErrTimeout].
type TimeoutError struct {
	// Tool is the tool's name, Budget the budget that expired.
	Tool   string
	Budget time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("tool %q exceeded its time budget of %v", e.Tool, e.Budget)
}

// Is reports whether target is [ErrTimeout].
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// TimeoutErrorName is the error.name of a TOOL_TIMEOUT result.
const TimeoutErrorName = "ToolTimeoutError"

// Result returns r, an isError result reporting the call aborted by the
// expiry e is the cause of, as the TOOL_TIMEOUT result: its text says
// which budget expired, its meta is dropped, its call id and additional
// context are kept.
func (e *TimeoutError) Result(r Result) Result {
	r.Content = []Content{Text(e.Error() + "; it was cancelled")}
	r.IsError = true
	r.Error = &ErrorInfo{Name: TimeoutErrorName, Code: CodeToolTimeout}
	r.Meta = nil
	return r
}

// withBudget is the tool body's context bounded by t's declared Timeout
// (none: ctx itself, and a nil budget). When ctx has a deadline no later
// than the budget's (a timeout policy's budget for the call, or the
// caller's), that deadline bounds the body and its owner reports it.
func withBudget(ctx context.Context, t *Tool) (context.Context, *TimeoutError, context.CancelFunc) {
	if t.timeout <= 0 {
		return ctx, nil, func() {}
	}
	deadline := time.Now().Add(t.timeout)
	if cur, ok := ctx.Deadline(); ok && !cur.After(deadline) {
		return ctx, nil, func() {}
	}
	budget := &TimeoutError{Tool: t.name, Budget: t.timeout}
	tctx, cancel := context.WithDeadlineCause(ctx, deadline, budget)
	return tctx, budget, cancel
}

// expired turns res, the outcome of a body run under ctx (made by
// withBudget), into TOOL_TIMEOUT when the budget's own deadline fired and
// the body's run was reported aborted; anything else stands (the caller's
// cancellation that fired first, a more specific failure of the body).
func (e *TimeoutError) expired(ctx context.Context, res Result) Result {
	if e == nil || ctx.Err() == nil || context.Cause(ctx) != error(e) {
		return res
	}
	if !res.IsError || res.Error == nil || res.Error.Code != CodeAborted {
		return res
	}
	return e.Result(res)
}
