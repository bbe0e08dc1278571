package tools

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/events"
)

// This file runs pipeline stages outside a registry: NewExecution, and
// Offline, the stage runners package toolstest wraps.

// NewExecution returns the [Execution] that [Registry.Execute] hands to
// policy for call when call.Name resolves to the tool d defines, without a
// registry: for unit tests of policies (see package toolstest) and for
// evaluating a policy offline. d is frozen as Register freezes it (its
// [Execution.Tool] is global: Layer ""), the execution gets a fresh token,
// and the call's id and arguments are checked, canonicalized and validated
// by d.ValidateArgs exactly as Execute does before any policy runs. It
// dispatches no event and runs no policy.
//
// call.Name may be empty (it is then d.Name); another name is an error. An
// invalid d is an error wrapping [ErrInvalidDefinition]. A call Execute
// would reject before policy is an error wrapping the *[Error] of that
// rejection: its Info.Code is INVALID_CALL or INVALID_ARGS and its message
// the rejected result's text.
func NewExecution(call Call, d Definition) (*Execution, error) {
	switch call.Name {
	case "":
		call.Name = d.Name
	case d.Name:
	default:
		return nil, fmt.Errorf("tools: NewExecution: the call names tool %q, but the definition is %q", call.Name, d.Name)
	}
	t, err := freeze(d, "")
	if err != nil {
		return nil, err
	}
	exec := &Execution{}
	if res, ok := admitCall(exec, call, func(Call) (*Tool, string) { return t, "" }); !ok {
		msg := ""
		if len(res.Content) > 0 {
			msg = res.Content[0].Text
		}
		return nil, fmt.Errorf("tools: %w", &Error{Info: *res.Error, Message: msg})
	}
	return exec, nil
}

// offline is the registry the offline stage runners use: it has no host,
// so it dispatches no event and logs nothing.
var offline = &Registry{}

// Offline runs the pipeline's own stage code for an execution made by
// [NewExecution], without a host or a registry: a policy unit-tested
// through it (package toolstest wraps it for tests) meets exactly the
// rules [Registry.Execute] applies. An execution goes through each stage
// once, as in the pipeline. The zero value is ready to use.
type Offline struct{}

// PreExecute runs l as the only tools/pre-execute listener for exec, with
// the waterfall's base (which allows) as its next. It returns l's
// decision, or l's error (a panic is recovered as one, read under
// containment as the host reads it), or the error of
// [PreDecision.Validate] for a malformed decision (the pipeline fails such
// a call closed, INVALID_DECISION).
func (Offline) PreExecute(ctx context.Context, exec *Execution, l events.WaterfallListener[*Execution, PreDecision]) (PreDecision, error) {
	exec.stage = stagePreExecute
	dec, err := callListener(ctx, exec, l, allowBase, "a tools/pre-execute listener")
	if err != nil {
		return PreDecision{}, err
	}
	if err := dec.Validate(); err != nil {
		return PreDecision{}, err
	}
	return dec, nil
}

// Guard is stage 4 for the one guard g (nil: none), and, when g denies,
// the call's finalized result.
func (Offline) Guard(g Guard, exec *Execution) (Result, bool) {
	if g == nil {
		return Result{}, false
	}
	exec.stage = stageGuards
	res, denied := runGuard(g, exec)
	if !denied {
		return Result{}, false
	}
	return offline.finalize(exec, res), true
}

// Execute is stages 6–7 with w as the only tools/execute wrapper (nil:
// none), finalized: dispatch as in the pipeline (the caller's
// cancellation, the tool's declared Timeout, a body left running
// cancelled and waited for when w returns; a failing w is LISTENER_ERROR
// or its error's code).
func (Offline) Execute(ctx context.Context, exec *Execution, w events.WaterfallListener[*Execution, Result]) Result {
	// A Goexit in w (t.FailNow in a test) still ends the stage: no body
	// outlives it.
	defer exec.bodies.settle(ErrAbandoned)
	if ctx.Err() != nil {
		return offline.finalize(exec, aborted(ctx, CodeAbortedBeforeDispatch))
	}
	exec.stage = stageExecute
	var (
		res Result
		err error
	)
	if w == nil {
		res = offline.dispatch(ctx, nil, exec)
	} else {
		res, err = callListener(ctx, exec, w, func(wctx context.Context) (Result, error) {
			return offline.dispatch(ctx, wctx, exec), nil
		}, "a tools/execute wrapper")
	}
	return offline.finalize(exec, endExecute(ctx, exec, res, err))
}

// callListener calls l with next as a propagating waterfall listener is
// called by the host: a panic is an error.
func callListener[R any](ctx context.Context, exec *Execution, l events.WaterfallListener[*Execution, R], next events.Next[R], what string) (res R, err error) {
	defer func() {
		if v := recover(); v != nil {
			var zero R
			res, err = zero, fmt.Errorf("tools: %s", panicMessage(what, v))
		}
	}()
	return l(ctx, exec, next)
}
