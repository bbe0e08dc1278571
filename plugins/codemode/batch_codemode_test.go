package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// codeBatch is a Code Mode environment with the parallel tool par and the
// exclusive tool exc (each waits for its "ms" argument, fake time), and a
// trace of each sub-call's pre-execute, body start and tools/result.
type codeBatch struct {
	*codeEnv
	mu        sync.Mutex
	trace     []string // "<kind> <call id>"
	active    int
	maxActive int
}

func newCodeBatch(t testing.TB, o codeOpts) *codeBatch {
	t.Helper()
	if o.runtime == (coderuntime.Config{}) {
		// These tests run in synctest bubbles, where a goroutine blocked
		// reading a worker's pipe never counts as idle, so the fake clock
		// would stop: the programs run in process (isolation is tested in
		// codeRuntime).
		o.runtime = testRuntime
		o.runtime.Isolation = "none"
	}
	e := &codeBatch{codeEnv: newCodeEnv(t, o)}
	body := func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		e.mu.Lock()
		e.trace = append(e.trace, "body "+x.CallID())
		e.active++
		e.maxActive = max(e.maxActive, e.active)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.active--
			e.mu.Unlock()
		}()
		select {
		case <-time.After(time.Duration(x.Arg("ms").Int()) * time.Millisecond):
		case <-ctx.Done():
			return tools.Output{}, ctx.Err()
		}
		out := tools.Output{Content: []tools.Content{tools.Text(x.Name() + x.Arg("ms").Raw)}, ConcludeTurn: x.Arg("conclude").Bool()}
		if c := x.Arg("ctx").String(); c != "" {
			out.AdditionalContext = []string{c}
		}
		if x.Arg("fail").Bool() {
			return out, errors.New("failed on purpose")
		}
		return out, nil
	}
	params := json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "par", Description: "Parallel.", Parameters: params, Execute: body, Concurrency: tools.Parallel})
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "exc", Description: "Exclusive.", Parameters: params, Execute: body})
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if x.Name() != codemode.RunCodeName {
			e.add("pre " + x.CallID())
		}
		return next(ctx)
	}))
	must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		if n.Execution().Name() != codemode.RunCodeName {
			e.add("result " + n.Execution().CallID())
		}
		return nil
	}))
	return e
}

func (e *codeBatch) add(s string) {
	e.mu.Lock()
	e.trace = append(e.trace, s)
	e.mu.Unlock()
}

// kinds returns the call ids of the traced events of kind, in order.
func (e *codeBatch) kinds(kind string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, s := range e.trace {
		if k, id, _ := strings.Cut(s, " "); k == kind {
			out = append(out, id)
		}
	}
	return out
}

func subIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprint("c1:code:", i+1)
	}
	return out
}

// TestB2_CodeModeSubCallsOverlapButStayInSubmissionOrder: Promise.all of
// five parallel sub-calls whose bodies finish in reverse order runs in the
// time of the longest one; their ids, pre-execute, tools/result and
// tool/code-dispatch events follow submission order, and the promises
// resolve to the right values.
func TestB2_CodeModeSubCallsOverlapButStayInSubmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCodeBatch(t, codeOpts{mode: tools.Code})
		src := `const rs = await Promise.all([50, 40, 30, 20, 10].map((ms) => tools.par({ ms })))
return rs.join(",")`
		start := time.Now()
		res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("five parallel sub-calls took %v, want 50ms", d)
		}
		if res.IsError || text(res) != "par50,par40,par30,par20,par10" {
			t.Fatalf("run_code = %+v", res)
		}
		want := subIDs(5)
		for _, kind := range []string{"pre", "result"} {
			if got := e.kinds(kind); !slices.Equal(got, want) {
				t.Errorf("%s order = %v, want %v", kind, got, want)
			}
		}
		if ids, _ := dispatchEvents(t, e.codeEnv); !slices.Equal(ids, want) {
			t.Errorf("tool/code-dispatch ids = %v, want %v", ids, want)
		}
		if e.maxActive != 5 {
			t.Errorf("%d bodies at once, want 5", e.maxActive)
		}
	})
}

// TestB1_CodeModeExclusiveSubCallIsABarrier: an exclusive sub-call in a
// Promise.all waits for the parallel ones before it and holds back the
// ones after it.
func TestB1_CodeModeExclusiveSubCallIsABarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCodeBatch(t, codeOpts{mode: tools.Code})
		src := `return (await Promise.all([tools.par({ ms: 50 }), tools.par({ ms: 50 }), tools.exc({ ms: 50 }), tools.par({ ms: 50 })])).join(",")`
		start := time.Now()
		res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
		if d := time.Since(start); d != 150*time.Millisecond {
			t.Errorf("took %v, want 150ms (two parallel, the barrier, one parallel)", d)
		}
		if res.IsError || text(res) != "par50,par50,exc50,par50" {
			t.Fatalf("run_code = %+v", res)
		}
		if got := e.kinds("body"); !slices.Equal(got[2:], []string{"c1:code:3", "c1:code:4"}) {
			t.Errorf("bodies = %v", got)
		}
	})
}

// TestB2_CodeModeMaxParallelSubCalls: the cap comes from the tools
// plugin's configuration (default 10); 1 runs sub-calls one at a time;
// a negative cap is refused.
func TestB2_CodeModeMaxParallelSubCalls(t *testing.T) {
	for _, tc := range []struct {
		cap     int
		n       int
		want    time.Duration
		wantMax int
	}{{0, 25, 30 * time.Millisecond, 10}, {1, 5, 50 * time.Millisecond, 1}, {2, 5, 30 * time.Millisecond, 2}} {
		t.Run(fmt.Sprint("cap ", tc.cap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newCodeBatch(t, codeOpts{mode: tools.Code, maxParallel: tc.cap})
				src := fmt.Sprintf(`await Promise.all(Array.from({ length: %d }, () => tools.par({ ms: 10 })))`, tc.n)
				start := time.Now()
				res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
				if res.IsError {
					t.Fatalf("run_code = %+v", res)
				}
				if d := time.Since(start); d != tc.want {
					t.Errorf("%d sub-calls of 10ms took %v, want %v", tc.n, d, tc.want)
				}
				if e.maxActive != tc.wantMax {
					t.Errorf("%d bodies at once, want %d", e.maxActive, tc.wantMax)
				}
			})
		})
	}
	if err := (tools.Config{MaxParallelSubCalls: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "maxParallelSubCalls") {
		t.Errorf("negative cap: %v", err)
	}
}

// TestB2_AnEarlierResultDoesNotHoldBackALaterCall: sub-call 1 finishes
// (its tools/result) after sub-call 2 was dispatched; sub-call 3, made
// after that, enters at once (sub-call 2 had let it) and runs while
// sub-call 2 still does. The scheduler once moved its "entries released"
// counter back to 1 when sub-call 1 finished, so sub-call 3 waited for
// sub-call 2's result: here for the 10 s that sub-call 2 waits for it, in
// ExecuteBatch the lost slot of TestB2_CapBoundsTheDispatchesAtOnce.
func TestB2_AnEarlierResultDoesNotHoldBackALaterCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: coderuntime.Config{Timeout: time.Hour, CPUBudget: testRuntime.CPUBudget, Isolation: coderuntime.IsolationNone}})
		secondStarted, thirdStarted := make(chan struct{}), make(chan struct{})
		var thirdFirst bool
		par := func(name string, body func(context.Context) string) tools.Definition {
			d := toolFunc(name, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
				return tools.Output{Content: []tools.Content{tools.Text(body(ctx))}}, nil
			})
			d.Concurrency = tools.Parallel
			return d
		}
		mustRegister(t, e.reg, e.root, par("first", func(context.Context) string { <-secondStarted; return "1" }))
		mustRegister(t, e.reg, e.root, par("second", func(context.Context) string {
			close(secondStarted)
			select {
			case <-thirdStarted:
				thirdFirst = true
			case <-time.After(10 * time.Second):
			}
			return "2"
		}))
		mustRegister(t, e.reg, e.root, par("third", func(context.Context) string { close(thirdStarted); return "3" }))
		src := "const a = tools.first({})\nconst b = tools.second({})\nconst r = [await a]\nr.push(await tools.third({}))\nr.push(await b)\nreturn r.join(',')"
		start := time.Now()
		res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
		if res.IsError || text(res) != "1,3,2" {
			t.Fatalf("run_code = %+v", res)
		}
		if d := time.Since(start); !thirdFirst || d != 0 {
			t.Errorf("sub-call 3 waited for sub-call 2's result (%v); it should have run during sub-call 2's body", d)
		}
	})
}

// TestB3_CodeModeSubCallContextIsDeferredThroughTheParent: additional
// context of parallel sub-calls reaches run_code's result in submission
// order (also when the run then fails); a successful sub-call's
// ConcludeTurn makes run_code conclude the turn.
func TestB3_CodeModeSubCallContextIsDeferredThroughTheParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCodeBatch(t, codeOpts{mode: tools.Code})
		src := `await Promise.all([tools.par({ ms: 30, ctx: "first" }), tools.par({ ms: 10, ctx: "second" }), tools.exc({ ms: 1, ctx: "third", conclude: true })])`
		res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
		if res.IsError || !slices.Equal(res.AdditionalContext, []string{"first", "second", "third"}) || !res.ConcludeTurn {
			t.Errorf("run_code = %+v", res)
		}
		src = `try { await tools.par({ ms: 5, ctx: "kept", conclude: true }) } finally { throw new Error("boom") }`
		res = e.reg.Execute(context.Background(), runCode("c2", src, "agent"))
		if !res.IsError || code(res) != tools.CodeCodeRunFailed || !slices.Equal(res.AdditionalContext, []string{"kept"}) || res.ConcludeTurn {
			t.Errorf("failed run_code = %+v", res)
		}
		src = `await tools.par({ ms: 5, conclude: true, fail: true })`
		if res = e.reg.Execute(context.Background(), runCode("c3", src, "agent")); res.ConcludeTurn {
			t.Errorf("a failed sub-call concluded the turn: %+v", res)
		}
	})
}

// TestB3_CodeModeCancelledWithParallelSubCalls: run_code is cancelled
// while two parallel sub-calls run and three wait for a slot: the running
// ones are cancelled and awaited (ABORTED), the waiting ones end
// ABORTED_BEFORE_DISPATCH without a body, and every one is logged, in
// submission order, before run_code returns.
func TestB3_CodeModeCancelledWithParallelSubCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newCodeBatch(t, codeOpts{mode: tools.Code, maxParallel: 2})
		src := `await Promise.all([1, 2, 3, 4, 5].map(() => tools.par({ ms: 1000 })))`
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		res := e.reg.Execute(ctx, runCode("c1", src, "agent"))
		if !res.IsError {
			t.Fatalf("run_code = %+v", res)
		}
		ids, results := dispatchEvents(t, e.codeEnv)
		if !slices.Equal(ids, subIDs(5)) {
			t.Fatalf("logged %v", ids)
		}
		want := []tools.ErrorCode{tools.CodeAborted, tools.CodeAborted, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch}
		for i, r := range results {
			if code(r) != want[i] {
				t.Errorf("%s: %s, want %s", ids[i], code(r), want[i])
			}
		}
		if got := e.kinds("body"); len(got) != 2 {
			t.Errorf("bodies started: %v", got)
		}
	})
}

// TestB2_CodeModeCallSeqRestoresSubmissionOrder: a runtime that calls the
// bindings of three calls in reverse (each context carrying its
// submission number, as the shipped runtime's do) gets them numbered, run
// and logged in submission order.
func TestB2_CodeModeCallSeqRestoresSubmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newHostileEnv(t, tools.Code, func(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
			var wg sync.WaitGroup
			for _, n := range []uint64{3, 2, 1} {
				wg.Go(func() {
					_, _ = p.Bindings["exc"](coderuntime.WithCallSeq(ctx, n), json.RawMessage(fmt.Sprintf(`{"ms":%d}`, n)))
				})
				synctest.Wait() // each waits for the ones before it
			}
			wg.Wait()
			return &coderuntime.Result{}, nil
		})
		var mu sync.Mutex
		var got []string
		mustRegister(t, e.reg, e.root, toolFunc("exc", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			mu.Lock()
			got = append(got, x.CallID()+"="+x.Arg("ms").Raw)
			mu.Unlock()
			return tools.Output{}, nil
		}))
		if res := execute(t, e, context.Background(), runCode("c1", "", "agent")); res.IsError {
			t.Fatalf("run_code = %+v", res)
		}
		if want := []string{"c1:code:1=1", "c1:code:2=2", "c1:code:3=3"}; !slices.Equal(got, want) {
			t.Errorf("bodies = %v, want %v", got, want)
		}
	})
}
