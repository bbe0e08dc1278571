package tools_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
)

// P11: a tool's declared Timeout is enforced by the registry, with no
// timeout policy mounted: the body's context is cancelled with a cause
// matching tools.ErrTimeout when the budget expires, and the call is
// TOOL_TIMEOUT. The caller's own earlier cancellation stays ABORTED, and a
// body that returns its own failure keeps it.
func TestP11_ADeclaredTimeoutIsEnforcedWithoutAPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var cause error
		d := echo("slow", "done")
		d.Timeout = time.Second
		d.Execute = func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			select {
			case <-time.After(time.Hour):
				return tools.TextOutput("done"), nil
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return tools.Output{}, ctx.Err()
			}
		}
		mustRegister(t, e.reg, e.root, d)
		start := time.Now()
		res := e.reg.Execute(context.Background(), call("slow", `{}`))
		if code(res) != tools.CodeToolTimeout || res.Error.Name != tools.TimeoutErrorName || time.Since(start) != time.Second {
			t.Errorf("declared budget: %+v after %v", res, time.Since(start))
		}
		if !errors.Is(cause, tools.ErrTimeout) {
			t.Errorf("the body's cause %v does not match ErrTimeout", cause)
		}

		// The caller's cancellation, earlier than the budget, is the caller's.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if res := e.reg.Execute(ctx, call("slow", `{}`)); code(res) != tools.CodeAborted {
			t.Errorf("caller's cancellation: %+v", res)
		}

		// A body's own failure on expiry is kept.
		d2 := echo("own", "x")
		d2.Timeout = time.Second
		d2.Execute = func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			<-ctx.Done()
			return tools.Output{}, tools.NewError("MY_CODE", "GaveUp", "gave up")
		}
		mustRegister(t, e.reg, e.root, d2)
		if res := e.reg.Execute(context.Background(), call("own", `{}`)); code(res) != "MY_CODE" {
			t.Errorf("the body's own failure: %+v", res)
		}
	})
}
