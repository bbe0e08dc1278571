package timeoutpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	h    *host.Host
	root *host.Context
	reg  *tools.Registry
	log  *toolstest.LogBuffer
}

// newEnv boots a host with the system prompt and the registry, and no
// policy. The host is closed at the end of the test.
func newEnv(t testing.TB) *env {
	t.Helper()
	log := &toolstest.LogBuffer{}
	h := host.New(host.WithLogger(zerolog.New(log)))
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	if err := toolstest.Setup(root); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	return &env{h: h, root: root, reg: reg, log: log}
}

func (e *env) load(t testing.TB, p host.Plugin, cfg any) *host.Fiber {
	t.Helper()
	f, err := e.root.Plugin(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *env) tool(t testing.TB, name string, budget time.Duration, body tools.ExecuteFunc) {
	t.Helper()
	if _, err := e.reg.Register(e.root, tools.Definition{
		Name: name, Description: "test tool " + name, Timeout: budget, Execute: body,
	}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) exec(ctx context.Context, name string) tools.Result {
	return e.reg.Execute(ctx, tools.Call{ID: "call-1", Name: name, Arguments: []byte(`{}`)})
}

func ok(s string) (tools.Output, error) {
	return tools.Output{Content: []tools.Content{tools.Text(s)}}, nil
}

func code(r tools.Result) tools.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func text(r tools.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// waitBody blocks until ctx is done and reports why.
func waitBody(cause *error) tools.ExecuteFunc {
	return func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		<-ctx.Done()
		*cause = context.Cause(ctx)
		return tools.Output{}, ctx.Err()
	}
}

func TestX1_BudgetBoundsBodyThroughContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var cause error
		var sawDeadline time.Time
		e.tool(t, "slow", 2*time.Second, func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
			sawDeadline, _ = ctx.Deadline()
			return waitBody(&cause)(ctx, x)
		})
		start := time.Now()
		r := e.exec(context.Background(), "slow")
		if got := time.Since(start); got != 2*time.Second {
			t.Errorf("body ran %v, want exactly the 2s budget", got)
		}
		if !sawDeadline.Equal(start.Add(2 * time.Second)) {
			t.Errorf("body's deadline %v, want start+2s", sawDeadline)
		}
		if !r.IsError || code(r) != tools.CodeToolTimeout || r.Error.Name != timeoutpolicy.ErrorName {
			t.Fatalf("result %+v, want TOOL_TIMEOUT", r)
		}
		if r.CallID != "call-1" || !strings.Contains(text(r), `"slow" exceeded its time budget of 2s`) {
			t.Errorf("result %+v", r)
		}
		if !errors.Is(cause, timeoutpolicy.ErrTimeout) {
			t.Errorf("body saw cause %v, want one matching ErrTimeout", cause)
		}
	})
}

func TestX1_FastBodyUntouched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		e.tool(t, "fast", time.Second, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			time.Sleep(999 * time.Millisecond)
			return ok("done")
		})
		r := e.exec(context.Background(), "fast")
		if r.IsError || text(r) != "done" {
			t.Fatalf("result %+v, want success", r)
		}
	})
}

func TestX1_CallerDeadlineIsTheCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var cause error
		e.tool(t, "slow", 5*time.Second, waitBody(&cause))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r := e.exec(ctx, "slow")
		if code(r) != tools.CodeAborted {
			t.Fatalf("result %+v, want ABORTED (the caller's deadline, not the policy's)", r)
		}
		if errors.Is(cause, timeoutpolicy.ErrTimeout) || !errors.Is(cause, context.DeadlineExceeded) {
			t.Errorf("body saw cause %v, want the caller's DeadlineExceeded", cause)
		}
	})
}

func TestX1_CallerCancelIsTheCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var cause error
		e.tool(t, "slow", 5*time.Second, waitBody(&cause))
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		r := e.exec(ctx, "slow")
		if code(r) != tools.CodeAborted {
			t.Fatalf("result %+v, want ABORTED", r)
		}
		if !errors.Is(cause, context.Canceled) {
			t.Errorf("body saw cause %v", cause)
		}
	})
}

// The policy's deadline fired first; the caller cancelling afterwards does
// not make it the caller's.
func TestX1_PolicyDeadlineFirstThenCallerCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		e.tool(t, "sticky", time.Second, func(c context.Context, _ *tools.Execution) (tools.Output, error) {
			<-c.Done()
			cancel() // the caller gives up too, later
			return tools.Output{}, c.Err()
		})
		r := e.exec(ctx, "sticky")
		// The caller's context is done by the time the pipeline finishes, so
		// the pipeline may report the abort; the policy must not claim it
		// only if the caller's cancellation came first, which it did not.
		if code(r) != tools.CodeToolTimeout {
			t.Fatalf("result %+v, want TOOL_TIMEOUT", r)
		}
	})
}

func TestX1_OriginalContextRestoredForLaterPhases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		type seen struct {
			hasDeadline bool
			err         error
		}
		var outer, post seen
		// An outer wrapper, registered before the policy, sees its own
		// context after next returns.
		if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
			r, err := next(ctx)
			_, outer.hasDeadline = ctx.Deadline()
			outer.err = ctx.Err()
			return r, err
		}); err != nil {
			t.Fatal(err)
		}
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		if _, err := host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next events.Next[tools.PostDecision]) (tools.PostDecision, error) {
			_, post.hasDeadline = ctx.Deadline()
			post.err = ctx.Err()
			return next(ctx)
		}); err != nil {
			t.Fatal(err)
		}
		var cause error
		e.tool(t, "slow", time.Second, waitBody(&cause))
		r := e.exec(context.Background(), "slow")
		if code(r) != tools.CodeToolTimeout {
			t.Fatalf("result %+v", r)
		}
		if outer.hasDeadline || outer.err != nil {
			t.Errorf("outer wrapper saw %+v, want the caller's context (no deadline, not done)", outer)
		}
		if post.hasDeadline || post.err != nil {
			t.Errorf("post-execute saw %+v, want the caller's context (no deadline, not done)", post)
		}
	})
}

func TestX1_DefaultBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{Default: 3 * time.Second})
		var cause error
		e.tool(t, "undeclared", 0, waitBody(&cause))
		e.tool(t, "declared", time.Second, waitBody(&cause))
		start := time.Now()
		if r := e.exec(context.Background(), "undeclared"); code(r) != tools.CodeToolTimeout || time.Since(start) != 3*time.Second {
			t.Errorf("undeclared: %+v after %v, want TOOL_TIMEOUT after the 3s default", r, time.Since(start))
		}
		start = time.Now()
		if r := e.exec(context.Background(), "declared"); code(r) != tools.CodeToolTimeout || time.Since(start) != time.Second {
			t.Errorf("declared: %+v after %v, want TOOL_TIMEOUT after its own 1s", r, time.Since(start))
		}
	})
}

func TestX1_NoBudgetNoDeadline(t *testing.T) {
	e := newEnv(t)
	e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
	var has bool
	e.tool(t, "free", 0, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		_, has = ctx.Deadline()
		return ok("x")
	})
	if r := e.exec(context.Background(), "free"); r.IsError || has {
		t.Fatalf("result %+v, deadline %v; want success without a deadline", r, has)
	}
	// Unknown tools pass straight through.
	if r := e.exec(context.Background(), "nope"); code(r) != tools.CodeUnknownTool {
		t.Fatalf("unknown tool: %+v", r)
	}
}

func TestX1_UncooperativeBodyIsWaitedForAndOverrunLogged(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var finished atomic.Bool
		e.tool(t, "stubborn", time.Second, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			time.Sleep(4 * time.Second) // ignores ctx
			finished.Store(true)
			return ok("late")
		})
		start := time.Now()
		r := e.exec(context.Background(), "stubborn")
		if !finished.Load() || time.Since(start) != 4*time.Second {
			t.Fatalf("Execute returned after %v before the body finished", time.Since(start))
		}
		if code(r) != tools.CodeToolTimeout {
			t.Fatalf("result %+v, want TOOL_TIMEOUT", r)
		}
		log := e.log.String()
		for _, want := range []string{`"level":"warn"`, `"plugin":"timeout-policy"`, `"tool":"stubborn"`, `"overrun":3000`, "exceeded its time budget"} {
			if !strings.Contains(log, want) {
				t.Errorf("log lacks %s:\n%s", want, log)
			}
		}
	})
}

func TestX1_CooperativeExpiryLoggedAtInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var cause error
		e.tool(t, "polite", time.Second, waitBody(&cause))
		e.exec(context.Background(), "polite")
		log := e.log.String()
		if !strings.Contains(log, `"level":"info"`) || strings.Contains(log, `"level":"warn"`) {
			t.Errorf("log:\n%s", log)
		}
	})
}

// A more specific failure than the abort is kept: here an inner wrapper
// that turns an abort into its own coded failure.
func TestX1_MoreSpecificFailureKept(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
			r, err := next(ctx)
			if r.IsError {
				r.Error = &tools.ErrorInfo{Name: "SandboxError", Code: "SANDBOX_KILLED"}
			}
			return r, err
		}); err != nil {
			t.Fatal(err)
		}
		var cause error
		e.tool(t, "slow", time.Second, waitBody(&cause))
		if r := e.exec(context.Background(), "slow"); code(r) != "SANDBOX_KILLED" {
			t.Fatalf("result %+v, want the inner wrapper's SANDBOX_KILLED kept", r)
		}
	})
}

// retry is a small retry wrapper: up to n attempts while the result is an
// error and its own context is not done.
func retry(n int, attempts *atomic.Int32) events.WaterfallListener[*tools.Execution, tools.Result] {
	return func(ctx context.Context, x *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
		var r tools.Result
		var err error
		for i := 0; i < n; i++ {
			attempts.Add(1)
			r, err = next(ctx)
			if err != nil || !r.IsError || ctx.Err() != nil {
				break
			}
		}
		return r, err
	}
}

// flaky takes 1s per attempt (cooperatively) and always fails.
func flaky(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
	select {
	case <-time.After(time.Second):
		return tools.Output{}, errors.New("flaky upstream")
	case <-ctx.Done():
		return tools.Output{}, ctx.Err()
	}
}

func TestX1_CompositionTimeoutOverRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var attempts atomic.Int32
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{}) // outer
		if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, retry(5, &attempts)); err != nil {
			t.Fatal(err)
		}
		e.tool(t, "flaky", 2500*time.Millisecond, flaky)
		start := time.Now()
		r := e.exec(context.Background(), "flaky")
		if code(r) != tools.CodeToolTimeout || attempts.Load() != 3 || time.Since(start) != 2500*time.Millisecond {
			t.Fatalf("result %s after %d attempts in %v; want TOOL_TIMEOUT after 3 attempts in 2.5s (one budget over all)", code(r), attempts.Load(), time.Since(start))
		}
	})
}

func TestX1_CompositionTimeoutPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var attempts atomic.Int32
		if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, retry(5, &attempts)); err != nil {
			t.Fatal(err)
		}
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{}) // inner
		e.tool(t, "flaky", 2500*time.Millisecond, flaky)
		start := time.Now()
		r := e.exec(context.Background(), "flaky")
		if code(r) != tools.CodeToolError || attempts.Load() != 5 || time.Since(start) != 5*time.Second {
			t.Fatalf("result %s after %d attempts in %v; want the tool's own error after 5 attempts of 1s (each within its own 2.5s budget)", code(r), attempts.Load(), time.Since(start))
		}
	})
}

func TestX1_CompositionPerAttemptTimeoutsAreRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var attempts atomic.Int32
		if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, retry(3, &attempts)); err != nil {
			t.Fatal(err)
		}
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		var cause error
		e.tool(t, "hang", time.Second, waitBody(&cause))
		start := time.Now()
		r := e.exec(context.Background(), "hang")
		if code(r) != tools.CodeToolTimeout || attempts.Load() != 3 || time.Since(start) != 3*time.Second {
			t.Fatalf("result %s after %d attempts in %v; want TOOL_TIMEOUT after 3 attempts of 1s", code(r), attempts.Load(), time.Since(start))
		}
	})
}

// P8 with the real policy loaded: cancellation before the body is
// ABORTED_BEFORE_DISPATCH, cancellation while it runs is ABORTED after the
// body returned (an uncooperative body is waited for), and a tool error
// that already happened is kept.
func TestP8_CancellationWithTimeoutPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{Default: 10 * time.Second})
		var ran atomic.Bool
		e.tool(t, "t", 0, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			ran.Store(true)
			return ok("x")
		})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if r := e.exec(ctx, "t"); code(r) != tools.CodeAbortedBeforeDispatch || ran.Load() {
			t.Errorf("cancelled before dispatch: %+v (ran %v)", r, ran.Load())
		}

		var finished atomic.Bool
		e.tool(t, "stubborn", 0, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			time.Sleep(3 * time.Second)
			finished.Store(true)
			return ok("late")
		})
		ctx, cancel = context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		if r := e.exec(ctx, "stubborn"); code(r) != tools.CodeAborted || !finished.Load() {
			t.Errorf("cancelled while running: %+v (finished %v)", r, finished.Load())
		}

		e.tool(t, "broken", 0, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{}, tools.NewError("UPSTREAM_DOWN", "UpstreamError", "upstream is down")
		})
		if r := e.exec(context.Background(), "broken"); code(r) != "UPSTREAM_DOWN" {
			t.Errorf("tool error: %+v, want its own code kept", r)
		}
	})
}

func TestPluginDisposalRemovesWrapper(t *testing.T) {
	e := newEnv(t)
	before := e.h.ListenerCount(tools.ExecuteEvent.Descriptor().Name)
	f := e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{Default: time.Second})
	if got := e.h.ListenerCount(tools.ExecuteEvent.Descriptor().Name); got != before+1 {
		t.Fatalf("listeners %d, want %d", got, before+1)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if got := e.h.ListenerCount(tools.ExecuteEvent.Descriptor().Name); got != before {
		t.Fatalf("after dispose: listeners %d, want %d", got, before)
	}
}

func TestConfig(t *testing.T) {
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		cfg  any
		ok   bool
	}{
		{"nil", nil, true},
		{"value", timeoutpolicy.Config{Default: time.Second}, true},
		{"pointer", &timeoutpolicy.Config{Default: time.Second}, true},
		{"negative default", timeoutpolicy.Config{Default: -1}, false},
		{"negative grace", timeoutpolicy.Config{Grace: -1}, false},
		{"wrong type", "30s", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := e.root.Plugin(timeoutpolicy.Plugin, tc.cfg)
			defer f.Dispose()
			if got := err == nil; got != tc.ok {
				t.Fatalf("Plugin: %v, want active=%v", err, tc.ok)
			}
		})
	}
}

// TestX1_ToolWrappingThePolicyCauseIsATimeout pins that a body which
// returns its own error wrapping context.Cause (the policy's cause) counts
// as cancelled by the policy: TOOL_TIMEOUT, not TOOL_ERROR.
func TestX1_ToolWrappingThePolicyCauseIsATimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{})
		e.tool(t, "wraps", 50*time.Millisecond, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			<-ctx.Done()
			return tools.Output{}, fmt.Errorf("interrupted: %w", context.Cause(ctx))
		})
		if r := e.exec(context.Background(), "wraps"); code(r) != tools.CodeToolTimeout {
			t.Fatalf("want TOOL_TIMEOUT, got %q: %s", code(r), text(r))
		}
	})
}
