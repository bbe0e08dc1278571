package tools

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/plugins/tools/internal/stagerun"
)

// This file runs pipeline stages outside a registry: NewExecution, and the
// stage runners package toolstest reaches through internal/stagerun.

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

func init() {
	stagerun.RunGuard = runGuardOffline
	stagerun.RunWrapper = runWrapperOffline
}

// runGuardOffline is stage 4 for the one guard g, and the finalized denial
// when g denies.
func runGuardOffline(g Guard, exec *Execution) (Result, bool) {
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

// runWrapperOffline is stages 6–7 with w as the only tools/execute wrapper
// (nil: none), finalized.
func runWrapperOffline(ctx context.Context, exec *Execution, w events.WaterfallListener[*Execution, Result]) Result {
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
		res, err = callWrapper(ctx, exec, w)
	}
	return offline.finalize(exec, endExecute(ctx, exec, res, err))
}

// callWrapper calls w with next running the body, as the host calls a
// propagating waterfall listener: a panic is an error.
func callWrapper(ctx context.Context, exec *Execution, w events.WaterfallListener[*Execution, Result]) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = Result{}, fmt.Errorf("tools: %s", panicMessage("a tools/execute wrapper", v))
		}
	}()
	return w(ctx, exec, func(wctx context.Context) (Result, error) {
		return offline.dispatch(ctx, wctx, exec), nil
	})
}
