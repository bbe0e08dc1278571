package tools_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// logTracer records, per call, the stages begun and ended and the end.
type logTracer struct {
	mu     sync.Mutex
	events []string
	// panicIn names a method that panics ("start", "begin", "end", "stage-end").
	panicIn string
	// Each stage's context carries traceKey (a value-only derivation);
	// with cancelCtx, BeginStage returns a context with another Done
	// channel instead (which the pipeline must ignore).
	cancelCtx bool
}

type traceKey struct{}

func (l *logTracer) log(s string) {
	l.mu.Lock()
	l.events = append(l.events, s)
	l.mu.Unlock()
}

func (l *logTracer) got() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *logTracer) StartCall(call tools.Call) tools.CallTrace {
	if l.panicIn == "start" {
		panic("tracer start")
	}
	l.log("start " + call.Name)
	return &logCall{l: l}
}

type logCall struct{ l *logTracer }

func (c *logCall) BeginStage(ctx context.Context, exec *tools.Execution, stage string) (context.Context, func(tools.StageEnd)) {
	if c.l.panicIn == "begin" {
		panic("tracer begin")
	}
	c.l.log("begin " + stage + " " + exec.CallID())
	if c.l.cancelCtx {
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // a tracer must not change the cancellation: ignored
		return ctx, nil
	}
	return context.WithValue(ctx, traceKey{}, stage), func(e tools.StageEnd) {
		if c.l.panicIn == "stage-end" {
			panic("tracer stage end")
		}
		s := "end " + stage
		if e.Outcome != "" {
			s += " " + e.Outcome
		}
		if e.Error != nil {
			s += " " + string(e.Error.Code)
		}
		if stage == tools.TraceGuards {
			s += " guards=" + string(rune('0'+e.Guards))
		}
		c.l.log(s)
	}
}

func (c *logCall) End(_ context.Context, exec *tools.Execution, res tools.Result) {
	if c.l.panicIn == "end" {
		panic("tracer end")
	}
	s := "call end " + exec.CallID()
	if res.Error != nil {
		s += " " + string(res.Error.Code)
	}
	c.l.log(s)
}

func TestO7_TracerSeesEachStageThatRanWithItsOutcome(t *testing.T) {
	e := newEnv(t)
	var bodyStage any
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "t", Description: "T.", Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		bodyStage = ctx.Value(traceKey{})
		return tools.TextOutput("ok"), nil
	}})
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "fail", Description: "F.", Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{}, errors.New("broken")
	}})
	var ask bool
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if ctx.Value(traceKey{}) != tools.TracePreExecute {
			return tools.Denied("pre-execute did not run under the tracer's context"), nil
		}
		if ask {
			return tools.Asked("check"), nil
		}
		return next(ctx)
	}))
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { return nil }))
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		if ctx.Value(traceKey{}) != tools.TraceApproval || req.Tool == "fail" {
			return tools.Rejected, nil
		}
		return tools.AllowedOnce, nil
	})))
	l := &logTracer{}
	off := must2(t)(e.reg.Trace(e.root, l))
	ctx := context.Background()

	e.reg.Execute(ctx, tools.Call{ID: "a", Name: "t"})
	ask = true
	e.reg.Execute(ctx, tools.Call{ID: "b", Name: "t", Agent: "x"})
	e.reg.Execute(ctx, tools.Call{ID: "c", Name: "fail", Agent: "x"})
	ask = false
	e.reg.Execute(ctx, tools.Call{ID: "d", Name: "fail"})
	e.reg.Execute(ctx, tools.Call{ID: "e", Name: "t", Arguments: []byte(`[]`)})
	off()
	e.reg.Execute(ctx, tools.Call{ID: "f", Name: "t"})

	want := []string{
		"start t", "begin pre-execute a", "end pre-execute allow", "begin guards a", "end guards guards=1",
		"begin execute a", "begin dispatch a", "end dispatch", "end execute",
		"begin post-execute a", "end post-execute accept", "call end a",

		"start t", "begin pre-execute b", "end pre-execute ask", "begin guards b", "end guards guards=1",
		"begin approval b", "end approval allowed-once", "begin execute b", "begin dispatch b", "end dispatch", "end execute",
		"begin post-execute b", "end post-execute accept", "call end b",

		"start fail", "begin pre-execute c", "end pre-execute ask", "begin guards c", "end guards guards=1",
		"begin approval c", "end approval APPROVAL_REJECTED",
		"begin post-execute c", "end post-execute accept", "call end c APPROVAL_REJECTED",

		"start fail", "begin pre-execute d", "end pre-execute allow", "begin guards d", "end guards guards=1",
		"begin execute d", "begin dispatch d", "end dispatch TOOL_ERROR", "end execute TOOL_ERROR",
		"begin post-execute d", "end post-execute accept", "call end d TOOL_ERROR",

		"start t", "call end e INVALID_ARGS",
	}
	if got := l.got(); !slices.Equal(got, want) {
		t.Errorf("trace:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if bodyStage != tools.TraceDispatch {
		t.Errorf("the body ran under stage context %v, want dispatch's", bodyStage)
	}
}

func TestO7_TracerCannotBreakACall(t *testing.T) {
	for _, where := range []string{"start", "begin", "stage-end", "end", "cancel"} {
		t.Run(where, func(t *testing.T) {
			e := newEnv(t)
			mustRegister(t, e.reg, e.root, echo("t", "ok"))
			var rc recorder
			rc.listen(t, e.root)
			l := &logTracer{panicIn: where, cancelCtx: where == "cancel"}
			must2(t)(e.reg.Trace(e.root, l))
			res := e.reg.Execute(context.Background(), tools.Call{ID: "a", Name: "t"})
			if res.IsError || text(res) != "ok" || rc.count() != 1 {
				t.Errorf("result %+v, %d tools/result", res, rc.count())
			}
		})
	}
}

func TestO7_SeveralTracersEachFollowTheCall(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "ok"))
	a, b := &logTracer{}, &logTracer{}
	must2(t)(e.reg.Trace(e.root, a))
	offB := must2(t)(e.reg.Trace(e.root, b))
	e.reg.Execute(context.Background(), tools.Call{ID: "1", Name: "t"})
	offB()
	e.reg.Execute(context.Background(), tools.Call{ID: "2", Name: "t"})
	if n, m := len(a.got()), len(b.got()); n != 2*m || m != 12 {
		t.Errorf("tracer a saw %d events, b %d; want 24 and 12", n, m)
	}
	if _, err := e.reg.Trace(e.root, nil); err == nil {
		t.Error("a nil tracer was accepted")
	}
}

func TestO7_TracerDiesWithItsFiber(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "ok"))
	l := &logTracer{}
	f, err := e.root.Plugin(host.PluginFunc(func(c *host.Context) error {
		_, err := e.reg.Trace(c, l)
		return err
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	e.reg.Execute(context.Background(), tools.Call{ID: "1", Name: "t"})
	if got := l.got(); len(got) != 0 {
		t.Errorf("a disposed tracer saw %v", got)
	}
	if _, err := e.reg.Trace(f.Context(), l); !errors.Is(err, host.ErrFiberClosed) {
		t.Errorf("Trace through a disposed fiber: %v", err)
	}
}

// goexitTracer is a tracer whose End calls runtime.Goexit for the calls
// named in ids.
type goexitTracer struct{ ids map[string]bool }

func (g goexitTracer) StartCall(tools.Call) tools.CallTrace { return g }

func (goexitTracer) BeginStage(ctx context.Context, _ *tools.Execution, _ string) (context.Context, func(tools.StageEnd)) {
	return ctx, nil
}

func (g goexitTracer) End(_ context.Context, exec *tools.Execution, _ tools.Result) {
	if g.ids[exec.CallID()] {
		runtime.Goexit()
	}
}

// TestO7_GoexitInATracersEndKeepsTheCallsResult: End is called just
// before tools/result; a runtime.Goexit there ends the goroutine running
// the call (Execute does not return), but the call's one tools/result is
// still emitted, with the call's own result, and End is not called again.
// It used to be lost: the Goexit handler took the call for one whose
// tools/result was being delivered.
func TestO7_GoexitInATracersEndKeepsTheCallsResult(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "ok"))
	var rc recorder
	rc.listen(t, e.root)
	must2(t)(e.reg.Trace(e.root, goexitTracer{ids: map[string]bool{"a": true}}))
	l := &logTracer{}
	must2(t)(e.reg.Trace(e.root, l))
	returned := false
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		e.reg.Execute(context.Background(), tools.Call{ID: "a", Name: "t"})
		returned = true
	}()
	<-exited
	if returned {
		t.Fatal("Execute returned although its goroutine called runtime.Goexit")
	}
	if n, last := resultsFor(&rc, "a"); n != 1 || last.IsError || text(last) != "ok" {
		t.Errorf("%d tools/result notices, last %+v; want the call's own result once", n, last)
	}
	if n := strings.Count(strings.Join(l.got(), "\n"), "call end a"); n != 0 {
		// The first tracer's End ended the goroutine before the second's
		// ran; neither is called again.
		t.Errorf("the second tracer's End ran %d times, want 0", n)
	}
}

// TestO7_GoexitInATracersEndKeepsBatchResults: the same in ExecuteBatch,
// for a parallel call (on a batch goroutine) and an exclusive one (on the
// calling goroutine): every call gets its own result once, in model order.
func TestO7_GoexitInATracersEndKeepsBatchResults(t *testing.T) {
	for _, tc := range []struct {
		tool     string
		returned bool
	}{{"par", true}, {"exc", false}} {
		t.Run(tc.tool, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBatchEnv(t)
				calls := []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, tc.tool, `"ms":5`), bcall(2, "par", `"ms":1`), bcall(3, "exc", "")}
				must2(t)(e.reg.Trace(e.root, goexitTracer{ids: map[string]bool{calls[1].ID: true}}))
				res, returned := e.batch(context.Background(), calls, tools.BatchOptions{})
				if returned != tc.returned {
					t.Errorf("ExecuteBatch returned: %v, want %v", returned, tc.returned)
				}
				for i, r := range res {
					if r.CallID != calls[i].ID || r.IsError || text(r) != calls[i].ID {
						t.Errorf("result %d = %+v", i, r)
					}
				}
				e.mu.Lock()
				defer e.mu.Unlock()
				for i := range calls {
					if n := len(e.observed[i]); n != 1 {
						t.Errorf("call %d: %d tools/result notices", i, n)
					}
				}
				if got := order(e.trace, "result"); !slices.Equal(got, seq(len(calls))) {
					t.Errorf("tools/result order = %v", got)
				}
			})
		})
	}
}
