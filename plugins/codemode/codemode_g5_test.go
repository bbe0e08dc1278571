package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The adversaries below implement the public coderuntime.Runtime seam the
// way a buggy or hostile runtime might: they pass bindings contexts the
// bridge did not give them, call bindings from goroutines of their own,
// keep bindings after Run returned, return while calls are in flight,
// panic, call runtime.Goexit, ignore cancellation, and return error values
// whose methods panic. The bridge, not the runtime, owns settlement (G5).

// runFn is a hostile runtime's Run.
type runFn = func(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error)

// newHostileEnv is a Code Mode environment (in mode) whose code runtime is
// fn.
func newHostileEnv(t testing.TB, mode tools.Mode, fn runFn) *codeEnv {
	t.Helper()
	e := newCodeEnv(t, codeOpts{mode: mode, noRuntime: true})
	must2(t)(coderuntime.Service.Provide(e.root, coderuntime.Runtime(coderuntime.RuntimeFunc{Lang: codemode.CodeLanguage, Fn: fn})))
	return e
}

// gate is a tool body that reports its start, then waits until its context
// is done (recording the cause) or the test releases it. release is closed
// at cleanup, so a body the bridge fails to cancel cannot outlive the test.
type gate struct {
	started chan string
	release chan struct{}
	once    sync.Once
	cause   atomic.Value // error: the cause the body saw
	mu      sync.Mutex
	order   []string // bodies started, in order
	active  atomic.Int32
	overlap atomic.Bool // two bodies ran at once
}

func newGate(t testing.TB) *gate {
	g := &gate{started: make(chan string, 64), release: make(chan struct{})}
	t.Cleanup(g.open)
	return g
}

func (g *gate) open() { g.once.Do(func() { close(g.release) }) }

func (g *gate) enter(name string) {
	if g.active.Add(1) > 1 {
		g.overlap.Store(true)
	}
	g.mu.Lock()
	g.order = append(g.order, name)
	g.mu.Unlock()
}

func (g *gate) bodies() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.order)
}

// slow blocks until cancelled or released.
func (g *gate) slow(name string) tools.Definition {
	return toolFunc(name, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		g.enter(name)
		defer g.active.Add(-1)
		g.started <- name
		select {
		case <-ctx.Done():
			g.cause.Store(context.Cause(ctx))
			return tools.Output{}, ctx.Err()
		case <-g.release:
			return tools.Output{Content: []tools.Content{tools.Text("released")}}, nil
		}
	})
}

// fast answers at once.
func (g *gate) fast(name string) tools.Definition {
	return toolFunc(name, func(context.Context, *tools.Execution) (tools.Output, error) {
		g.enter(name)
		defer g.active.Add(-1)
		runtime.Gosched()
		return tools.Output{Content: []tools.Content{tools.Text(name)}}, nil
	})
}

// hostileErr is an error value whose every method panics.
type hostileErr struct{}

func (hostileErr) Error() string   { panic("hostile Error()") }
func (hostileErr) Unwrap() error   { panic("hostile Unwrap()") }
func (hostileErr) Is(error) bool   { panic("hostile Is()") }
func (hostileErr) As(any) bool     { panic("hostile As()") }
func (hostileErr) Code() string    { panic("hostile Code()") }
func (hostileErr) Timeout() bool   { panic("hostile Timeout()") }
func (hostileErr) String() string  { panic("hostile String()") }
func (hostileErr) Name() string    { panic("hostile Name()") }
func (hostileErr) Temporary() bool { panic("hostile Temporary()") }

// execute runs Execute on a goroutine of its own, so that a runtime that
// kills its goroutine (runtime.Goexit) fails the test instead of ending it.
func execute(t testing.TB, e *codeEnv, ctx context.Context, c tools.Call) tools.Result {
	t.Helper()
	var res tools.Result
	returned := false
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		res = e.reg.Execute(ctx, c)
		returned = true
	}()
	<-exited
	if !returned {
		t.Fatal("Execute never returned: its goroutine was ended (runtime.Goexit) from the code runtime")
	}
	return res
}

// dispatchEvents decodes the tool/code-dispatch events logged so far.
func dispatchEvents(t testing.TB, e *codeEnv) (ids []string, results []tools.Result) {
	t.Helper()
	for _, ev := range e.log.snapshot() {
		if ev.Type != codemode.CodeDispatchEvent {
			continue
		}
		var d tools.CodeDispatch
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatalf("event %s: %v", ev.ID, err)
		}
		ids = append(ids, ev.ID)
		results = append(results, d.Result)
	}
	return ids, results
}

// TestG5_SettlementCancelsInFlightAndAbortsQueuedSubCalls: whatever ends a
// run (Run returns a value or an error, a hostile error, panics, calls
// runtime.Goexit, or the caller cancels), a sub-call in flight is cancelled
// and awaited, one queued behind it is ABORTED_BEFORE_DISPATCH without its
// body running, and both are logged before run_code's result, even though
// the runtime called the bindings from goroutines of its own with contexts
// the bridge did not give it and never waited for them.
func TestG5_SettlementCancelsInFlightAndAbortsQueuedSubCalls(t *testing.T) {
	type trigger struct {
		name string
		// end ends the run; cancel cancels the outer call.
		end      func(ctx context.Context, cancel context.CancelFunc) (*coderuntime.Result, error)
		wantCode tools.ErrorCode // of run_code; "" = success
		wantText string          // in run_code's text
		cause    error           // the in-flight sub-call's cancellation cause
	}
	triggers := []trigger{
		{"returns a value", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return &coderuntime.Result{Value: json.RawMessage(`"done"`)}, nil
		}, "", "done", coderuntime.ErrRunSettled},
		{"returns an error", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return nil, &coderuntime.Failure{Kind: coderuntime.KindException, Message: "boom"}
		}, tools.CodeCodeRunFailed, "(exception): boom", coderuntime.ErrRunSettled},
		{"returns a hostile error", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return nil, hostileErr{}
		}, tools.CodeCodeRunFailed, "(internal)", coderuntime.ErrRunSettled},
		{"panics", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			panic(hostileErr{})
		}, tools.CodeCodeRunFailed, "the code runtime panicked", coderuntime.ErrRunSettled},
		{"calls runtime.Goexit", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			runtime.Goexit()
			return nil, nil
		}, tools.CodeCodeRunFailed, "runtime.Goexit", coderuntime.ErrRunSettled},
		{"caller cancels", func(ctx context.Context, cancel context.CancelFunc) (*coderuntime.Result, error) {
			cancel()
			<-ctx.Done()
			return nil, &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "aborted", Cause: context.Cause(ctx)}
		}, tools.CodeAborted, "", context.Canceled},
	}
	for _, tc := range triggers {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var g *gate
				var mu sync.Mutex
				var subErrs []error
				e := newHostileEnv(t, tools.Code, func(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
					call := func(name string) {
						_, err := p.Bindings[name](context.Background(), json.RawMessage(`{}`))
						mu.Lock()
						subErrs = append(subErrs, err)
						mu.Unlock()
					}
					go call("slow")
					<-g.started
					go call("fast")
					synctest.Wait() // slow is in its body, fast is waiting for its turn
					return tc.end(ctx, cancel)
				})
				g = newGate(t)
				mustRegister(t, e.reg, e.root, g.slow("slow"))
				mustRegister(t, e.reg, e.root, g.fast("fast"))
				var rc recorder
				rc.listen(t, e.root)

				res := execute(t, e, ctx, runCode("c1", "(ignored by this runtime)", "agent"))

				// Everything below was settled when run_code returned.
				ids, results := dispatchEvents(t, e)
				bodies := g.bodies()
				cause, _ := g.cause.Load().(error)
				if code(res) != tc.wantCode || !strings.Contains(text(res), tc.wantText) {
					t.Errorf("run_code = %+v, want code %q with %q", res, tc.wantCode, tc.wantText)
				}
				if !slices.Equal(ids, []string{"c1:code:1", "c1:code:2"}) {
					t.Fatalf("events logged before run_code's result: %v, want both sub-calls", ids)
				}
				if code(results[0]) != tools.CodeAborted || code(results[1]) != tools.CodeAbortedBeforeDispatch {
					t.Errorf("sub-call results = %s, %s; want ABORTED, ABORTED_BEFORE_DISPATCH", code(results[0]), code(results[1]))
				}
				if !slices.Equal(bodies, []string{"slow"}) || g.overlap.Load() {
					t.Errorf("bodies run = %v (overlap %v), want only the in-flight one", bodies, g.overlap.Load())
				}
				if !errors.Is(cause, tc.cause) {
					t.Errorf("in-flight sub-call's cause = %v, want %v", cause, tc.cause)
				}
				for _, id := range []string{"c1:code:1", "c1:code:2", "c1"} {
					if n, _ := resultsFor(&rc, id); n != 1 {
						t.Errorf("%s: %d tools/result notices", id, n)
					}
				}
				synctest.Wait() // the runtime's goroutines have their answers
				mu.Lock()
				defer mu.Unlock()
				if len(subErrs) != 2 || subErrs[0] == nil || subErrs[1] == nil {
					t.Errorf("the runtime's binding calls returned %v, want two rejections", subErrs)
				}
			})
		})
	}
}

// heldCtx is a context a runtime passes to its bindings: done once settle
// is called, while the callbacks registered on it with context.AfterFunc
// run only at runAfterFuncs, as when their goroutines are slow to be
// scheduled. Values come from the context it wraps.
type heldCtx struct {
	context.Context
	done chan struct{}
	mu   sync.Mutex
	err  error
	next int
	fns  map[int]func()
}

func newHeldCtx(parent context.Context) *heldCtx {
	return &heldCtx{Context: parent, done: make(chan struct{}), fns: map[int]func(){}}
}

func (c *heldCtx) Done() <-chan struct{} { return c.done }

func (c *heldCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc is what context.AfterFunc uses for a parent that has it.
func (c *heldCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.next
	c.next++
	c.fns[k] = f
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		_, ok := c.fns[k]
		delete(c.fns, k)
		return ok
	}
}

func (c *heldCtx) settle() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = context.Canceled
	close(c.done)
}

func (c *heldCtx) runAfterFuncs() {
	c.mu.Lock()
	fns := c.fns
	c.fns = map[int]func(){}
	c.mu.Unlock()
	for _, f := range fns {
		f()
	}
}

// TestG5_ACallWaitingForItsTurnWhenTheRunSettlesNeverStarts: the runtime
// settles (the context it passed to the bindings is done) while sub-call
// 1 runs and sub-call 2 waits for its turn; sub-call 1 then returns. Sub-
// call 2 is dispatched with its context done, ABORTED_BEFORE_DISPATCH,
// whether or not the goroutine that cancels its context on the runtime's
// settlement has run yet. The bridge used to wait for that goroutine: if
// it ran late, the body of a call the program had given up on started
// after the program returned (TestC6_SettlementCancelsAndDrainsInFlightSubCalls
// "program returns with a call in flight" failed so, 1 run in 300).
func TestG5_ACallWaitingForItsTurnWhenTheRunSettlesNeverStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g *gate
		errs := make([]error, 2)
		e := newHostileEnv(t, tools.Code, func(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
			rctx := newHeldCtx(ctx)
			var wg sync.WaitGroup
			call := func(i int, name string) {
				wg.Go(func() { _, errs[i] = p.Bindings[name](rctx, json.RawMessage(`{}`)) })
			}
			call(0, "slow")
			<-g.started
			call(1, "fast")
			synctest.Wait() // slow is in its body, fast waits for its turn (slow is exclusive)
			rctx.settle()   // the program returned; the AfterFunc callbacks are late
			g.open()        // slow returns without looking at its context
			wg.Wait()
			rctx.runAfterFuncs()
			return &coderuntime.Result{Value: json.RawMessage(`"done"`)}, nil
		})
		g = newGate(t)
		mustRegister(t, e.reg, e.root, g.slow("slow"))
		mustRegister(t, e.reg, e.root, g.fast("fast"))
		res := execute(t, e, context.Background(), runCode("c1", "(ignored by this runtime)", "agent"))
		if res.IsError || text(res) != "done" {
			t.Fatalf("run_code = %+v", res)
		}
		ids, results := dispatchEvents(t, e)
		if !slices.Equal(ids, []string{"c1:code:1", "c1:code:2"}) {
			t.Fatalf("events = %v", ids)
		}
		if got := g.bodies(); !slices.Equal(got, []string{"slow"}) {
			t.Errorf("bodies run = %v, want only slow's: fast was dispatched after the run settled", got)
		}
		if code(results[1]) != tools.CodeAbortedBeforeDispatch {
			t.Errorf("fast's result = %+v, want ABORTED_BEFORE_DISPATCH", results[1])
		}
		if errs[1] == nil {
			t.Errorf("fast's binding call resolved; it was not made")
		}
	})
}

// TestG5_BindingCalledAfterSettlementIsRefused: a runtime that keeps a
// binding and calls it after Run returned gets a clear error matching
// coderuntime.ErrRunSettled; nothing is dispatched, logged or observed.
func TestG5_BindingCalledAfterSettlementIsRefused(t *testing.T) {
	for _, mode := range []tools.Mode{tools.Code, tools.Both} {
		t.Run(string(mode), func(t *testing.T) {
			var kept coderuntime.Binding
			e := newHostileEnv(t, mode, func(_ context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
				kept = p.Bindings["fast"]
				return &coderuntime.Result{Value: json.RawMessage(`1`)}, nil
			})
			g := newGate(t)
			mustRegister(t, e.reg, e.root, g.fast("fast"))
			var rc recorder
			rc.listen(t, e.root)
			if res := e.reg.Execute(context.Background(), runCode("c1", "", "agent")); res.IsError || text(res) != "1" {
				t.Fatalf("run_code = %+v", res)
			}
			n0 := rc.count()
			out, err := kept(context.Background(), json.RawMessage(`{}`))
			if !errors.Is(err, coderuntime.ErrRunSettled) || out != nil {
				t.Fatalf("late call = %s, %v; want a coderuntime.ErrRunSettled refusal", out, err)
			}
			var ce *codemode.CodeCallError
			if !errors.As(err, &ce) || ce.Tool != "fast" || ce.Info.Code != tools.CodeRunSettled || !strings.Contains(err.Error(), "not made") {
				t.Errorf("late call error = %#v (%v)", err, err)
			}
			if b := g.bodies(); len(b) != 0 {
				t.Errorf("bodies run: %v", b)
			}
			if ids, _ := dispatchEvents(t, e); len(ids) != 0 {
				t.Errorf("late call logged: %v", ids)
			}
			if rc.count() != n0 {
				t.Errorf("late call reached the pipeline: %d new tools/result notices", rc.count()-n0)
			}
		})
	}
}

// TestG5_ConcurrentBindingCallsRunOneAtATimeInSubmissionOrder: a runtime
// that ignores MaxConcurrentCalls and calls bindings from several
// goroutines at once still gets its sub-calls run one at a time, in the
// order the calls reached the bridge, with ids in that order.
func TestG5_ConcurrentBindingCallsRunOneAtATimeInSubmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g *gate
		e := newHostileEnv(t, tools.Code, func(_ context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
			var wg sync.WaitGroup
			outs := make([]string, 3)
			call := func(i int, name string) {
				wg.Go(func() {
					out, err := p.Bindings[name](context.Background(), json.RawMessage(`{}`))
					if outs[i] = string(out); err != nil {
						outs[i] = err.Error()
					}
				})
			}
			call(0, "slow")
			<-g.started
			call(1, "b")
			synctest.Wait() // b is waiting behind slow
			call(2, "c")
			synctest.Wait() // c is waiting behind b
			g.open()
			wg.Wait()
			v, _ := json.Marshal(outs)
			return &coderuntime.Result{Value: v}, nil
		})
		g = newGate(t)
		mustRegister(t, e.reg, e.root, g.slow("slow"))
		mustRegister(t, e.reg, e.root, g.fast("b"))
		mustRegister(t, e.reg, e.root, g.fast("c"))
		res := execute(t, e, context.Background(), runCode("c1", "", "agent"))
		if res.IsError || text(res) != `["\"released\"","\"b\"","\"c\""]` {
			t.Errorf("run_code = %+v", res)
		}
		if b := g.bodies(); !slices.Equal(b, []string{"slow", "b", "c"}) || g.overlap.Load() {
			t.Errorf("bodies = %v (overlap %v), want slow, b, c one at a time", b, g.overlap.Load())
		}
		if ids, _ := dispatchEvents(t, e); !slices.Equal(ids, []string{"c1:code:1", "c1:code:2", "c1:code:3"}) {
			t.Errorf("events = %v", ids)
		}
	})
}

// TestG5_GoroutinesCallingBindingsAfterRunReturned: a runtime that starts
// goroutines calling bindings and returns without waiting. Whatever the
// interleaving, each call is either refused (ErrRunSettled, nothing
// dispatched) or accepted, and every accepted one was run (or aborted),
// logged and observed exactly once before run_code's result; bodies never
// overlap, and nothing happens after the result.
func TestG5_GoroutinesCallingBindingsAfterRunReturned(t *testing.T) {
	const callers = 8
	var wg sync.WaitGroup
	errs := make([]error, callers)
	e := newHostileEnv(t, tools.Code, func(_ context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
		for i := range callers {
			name := []string{"a", "b"}[i%2]
			wg.Go(func() { _, errs[i] = p.Bindings[name](context.Background(), json.RawMessage(`{"n":1}`)) })
		}
		return &coderuntime.Result{}, nil
	})
	g := newGate(t)
	mustRegister(t, e.reg, e.root, g.fast("a"))
	mustRegister(t, e.reg, e.root, g.fast("b"))
	var rc recorder
	rc.listen(t, e.root)
	for round := range 50 {
		id := fmt.Sprint("r", round)
		res := e.reg.Execute(context.Background(), runCode(id, "", "agent"))
		if res.IsError {
			t.Fatalf("run_code = %+v", res)
		}
		ids, _ := dispatchEvents(t, e)
		notices := rc.count()
		bodies := len(g.bodies())
		wg.Wait()
		if after, _ := dispatchEvents(t, e); len(after) != len(ids) || rc.count() != notices || len(g.bodies()) != bodies {
			t.Fatalf("round %d: events %d→%d, notices %d→%d, bodies %d→%d after run_code returned",
				round, len(ids), len(after), notices, rc.count(), bodies, len(g.bodies()))
		}
		// A call is refused (RUN_SETTLED, matching ErrRunSettled), or
		// accepted: answered, or aborted because the run settled before or
		// while it ran.
		accepted := 0
		for _, err := range errs {
			var ce *codemode.CodeCallError
			switch {
			case err == nil:
			case !errors.As(err, &ce):
				t.Fatalf("round %d: binding error %v is not a CodeCallError", round, err)
			case ce.Info.Code == tools.CodeRunSettled:
				if !errors.Is(err, coderuntime.ErrRunSettled) {
					t.Fatalf("round %d: refusal %v does not match ErrRunSettled", round, err)
				}
				continue
			case ce.Info.Code != tools.CodeAbortedBeforeDispatch && ce.Info.Code != tools.CodeAborted:
				t.Fatalf("round %d: unexpected binding error %v (%s)", round, err, ce.Code())
			}
			accepted++
		}
		var mine []string
		for _, x := range ids {
			if strings.HasPrefix(x, id+":") {
				mine = append(mine, x)
			}
		}
		if len(mine) != accepted {
			t.Fatalf("round %d: %d calls accepted, %d logged", round, accepted, len(mine))
		}
		for i, x := range mine {
			if want := fmt.Sprintf("%s:code:%d", id, i+1); x != want {
				t.Fatalf("round %d: event %d is %s, want %s", round, i, x, want)
			}
			if n, _ := resultsFor(&rc, x); n != 1 {
				t.Fatalf("%s: %d tools/result notices", x, n)
			}
		}
	}
	if g.overlap.Load() {
		t.Error("two sub-call bodies ran at once")
	}
}

// TestG5_UncooperativeRuntimeIsWaitedForAndDispatchesNothingAfterCancel: a
// runtime that ignores the caller's cancellation is waited for (run_code
// does not give its result while the runtime still runs), but every
// binding call it makes after the cancellation is aborted before dispatch
// (its body never runs, whatever context the runtime passes) and logged
// before the result.
func TestG5_UncooperativeRuntimeIsWaitedForAndDispatchesNothingAfterCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := make(chan struct{})
	var lateErrs []error
	e := newHostileEnv(t, tools.Code, func(rctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
		close(running)
		<-rctx.Done() // seen, and ignored
		for range 2 {
			_, err := p.Bindings["fast"](context.Background(), json.RawMessage(`{}`))
			lateErrs = append(lateErrs, err)
		}
		return &coderuntime.Result{Value: json.RawMessage(`"finished anyway"`)}, nil
	})
	g := newGate(t)
	mustRegister(t, e.reg, e.root, g.fast("fast"))
	done := make(chan tools.Result)
	go func() { done <- e.reg.Execute(ctx, runCode("c1", "", "agent")) }()
	<-running
	cancel()
	res := <-done
	if code(res) != tools.CodeAborted {
		t.Errorf("run_code = %+v, want ABORTED", res)
	}
	if b := g.bodies(); len(b) != 0 {
		t.Errorf("bodies ran after the caller cancelled: %v", b)
	}
	ids, results := dispatchEvents(t, e)
	if !slices.Equal(ids, []string{"c1:code:1", "c1:code:2"}) {
		t.Fatalf("events = %v", ids)
	}
	for i, r := range results {
		if code(r) != tools.CodeAbortedBeforeDispatch {
			t.Errorf("sub-call %d = %+v", i+1, r)
		}
	}
	for i, err := range lateErrs {
		var ce *codemode.CodeCallError
		if !errors.As(err, &ce) || ce.Info.Code != tools.CodeAbortedBeforeDispatch {
			t.Errorf("binding call %d after cancel = %v", i+1, err)
		}
	}
}

// TestG5_HostileRuntimeResultsAreContained: whatever a runtime hands back
// (an error whose methods panic, a Failure whose cause panics while the
// pipeline inspects it, a typed nil, neither result nor error, a value that
// is not JSON, a panic value that cannot be printed) run_code yields
// exactly one CODE_RUN_FAILED result naming the misbehaviour.
func TestG5_HostileRuntimeResultsAreContained(t *testing.T) {
	type hostileRun = func(ctx context.Context, cancel context.CancelFunc) (*coderuntime.Result, error)
	cases := []struct {
		name string
		fn   hostileRun
		want string
	}{
		{"error whose methods panic", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return nil, hostileErr{}
		}, "(internal): the code runtime returned an error (codemode_test.hostileErr) whose Error method panicked: hostile Error()"},
		{"failure whose cause panics, after cancellation", func(ctx context.Context, cancel context.CancelFunc) (*coderuntime.Result, error) {
			cancel() // the caller gives up; the pipeline then inspects the error for cancellation
			<-ctx.Done()
			return nil, &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "stopped", Cause: hostileErr{}}
		}, "(abort): stopped"},
		{"typed nil failure", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			var f *coderuntime.Failure
			return nil, f
		}, "(internal): the code runtime returned a nil *coderuntime.Failure"},
		{"neither result nor error", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return nil, nil
		}, "(internal): the code runtime returned neither a result nor an error"},
		{"value that is not JSON", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return &coderuntime.Result{Value: json.RawMessage("{\xff")}, nil
		}, "(internal): the code runtime returned a value that is not JSON"},
		{"unprintable panic", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			panic(hostileErr{})
		}, "(internal): the code runtime panicked: %!v(PANIC=Error method: hostile Error())"},
		{"plain panic", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			panic("runtime bug")
		}, "(internal): the code runtime panicked: runtime bug"},
		{"Goexit", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			runtime.Goexit()
			return nil, nil
		}, "(internal): the code runtime called runtime.Goexit"},
		{"error whose Unwrap chain is a cycle", func(context.Context, context.CancelFunc) (*coderuntime.Result, error) {
			return nil, newCyclicErr()
		}, "(internal): cyclic"},
		{"cyclic chain, after cancellation", func(ctx context.Context, cancel context.CancelFunc) (*coderuntime.Result, error) {
			cancel() // the pipeline then checks the error for cancellation
			<-ctx.Done()
			return nil, newCyclicErr()
		}, "cyclic"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			e := newHostileEnv(t, tools.Code, func(ctx context.Context, _ coderuntime.Program) (*coderuntime.Result, error) {
				return tc.fn(ctx, cancel)
			})
			var rc recorder
			rc.listen(t, e.root)
			res := execute(t, e, ctx, runCode("c1", "", "agent"))
			if code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), tc.want) {
				t.Errorf("run_code = %s %q\nwant CODE_RUN_FAILED containing %q", code(res), text(res), tc.want)
			}
			if n := rc.count(); n != 1 {
				t.Errorf("%d tools/result notices", n)
			}
			if n := cyclicUnwraps.Load(); n > 10_000 {
				t.Errorf("the error chain was walked %d times: unbounded", n)
			}
			cyclicUnwraps.Store(0)
		})
	}
}

// cyclicErr wraps itself: errors.Is and errors.As never end on it. Its
// Unwrap panics after a million calls so that a regression fails instead of
// hanging the test.
type cyclicErr struct{ n *int }

// cyclicUnwraps counts Unwrap calls of every cyclicErr of the running test.
var cyclicUnwraps atomic.Int64

func newCyclicErr() cyclicErr { return cyclicErr{n: new(int)} }

func (e cyclicErr) Error() string { return "cyclic" }

func (e cyclicErr) Unwrap() error {
	cyclicUnwraps.Add(1)
	if *e.n++; *e.n > 1_000_000 {
		panic("cyclicErr: unbounded chain walk")
	}
	return e
}
