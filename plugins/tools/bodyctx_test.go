package tools_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The body's context behind tools/execute wrappers is made lazily (only
// when the body needs it); these pin that it behaves as the eager
// context.WithCancelCause(wctx) merged with the caller did, whichever way
// the body reads it.

// passthroughs registers n pass-through listeners on each pipeline event.
func passthroughs(t testing.TB, c *host.Context, n int) {
	for range n {
		must2(t)(host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			return next(ctx)
		}))
		must2(t)(host.OnWaterfall(c, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			return next(ctx)
		}))
		must2(t)(host.OnWaterfall(c, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
			return next(ctx)
		}))
		must2(t)(host.On(c, tools.ResultEvent, func(context.Context, tools.ResultNotice) error { return nil }))
	}
}

// TestPerf24_ExecuteAllocations: a trivial call allocates at most 3 times
// without listeners (before: 5, FinalizeContent's bookkeeping paid even
// for a tool without one; then 4, short canonical arguments getting an
// allocation of their own instead of a place in the execution's) and at
// most 13 times with 4 pass-through listeners on each event (before: 19:
// besides, the body's cancel context behind wrappers, 2, a heap copy of
// post-execute's payload, 1, separate copies of the content for the
// caller and the observers, 1, and the short arguments, 1). What is left
// with listeners: the execution (with the arguments), the tool's own
// content, 9 next links and execute's base (one next per listener, see
// host TestH9), and the copies of the content for the caller and the
// observers, in one allocation.
func TestPerf24_ExecuteAllocations(t *testing.T) {
	ctx := context.Background()
	c := tools.Call{ID: "c", Name: "trivial", Arguments: benchArgs}
	plain := newEnv(t)
	mustRegister(t, plain.reg, plain.root, trivial())
	if n := testing.AllocsPerRun(200, func() { sink = plain.reg.Execute(ctx, c) }); n > 3 {
		t.Errorf("no listeners: %v allocations per Execute, want at most 3", n)
	}
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, trivial())
	passthroughs(t, e.root, 4)
	if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, c) }); n > 13 {
		t.Errorf("4 pass-through listeners on each event: %v allocations per Execute, want at most 13", n)
	}
	if text(sink) != "ok" || sink.IsError {
		t.Fatalf("result %+v", sink)
	}
}

type causeErr struct{ s string }

func (e *causeErr) Error() string { return e.s }

// bodyTool registers a tool whose body is f.
func bodyTool(t testing.TB, e *env, f func(ctx context.Context) (tools.Output, error)) {
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "b", Description: "Body under test.",
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) { return f(ctx) },
	})
}

// pollErr waits, reading only ctx.Err (never Done), until ctx reports
// cancellation; it returns the error and the cause then.
func pollErr(ctx context.Context) (error, error) {
	for ctx.Err() == nil {
		runtime.Gosched()
	}
	return ctx.Err(), context.Cause(ctx)
}

// TestG5_BodyContextBehindWrappers: each way a cancellation reaches a body
// behind a wrapper, read by Err alone (the lazy context is not made until
// then) and through Done.
func TestG5_BodyContextBehindWrappers(t *testing.T) {
	wrapperCause := &causeErr{"the wrapper's own cancellation"}
	callerCause := &causeErr{"the caller's cancellation"}
	for _, byDone := range []bool{false, true} {
		wait := pollErr
		how := "Err"
		if byDone {
			how = "Done"
			wait = func(ctx context.Context) (error, error) {
				<-ctx.Done()
				return ctx.Err(), context.Cause(ctx)
			}
		}
		t.Run("the wrapper cancels its context during the body/"+how, func(t *testing.T) {
			e := newEnv(t)
			started := make(chan struct{})
			var got, gotCause error
			bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
				close(started)
				got, gotCause = wait(ctx)
				return tools.Output{}, got
			})
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				w, cancel := context.WithCancelCause(ctx)
				go func() { <-started; cancel(wrapperCause) }()
				return next(w)
			}))
			res := e.reg.Execute(context.Background(), call("b", `{}`))
			if !errors.Is(got, context.Canceled) || gotCause != wrapperCause {
				t.Errorf("the body saw %v, cause %v; want Canceled with the wrapper's cause", got, gotCause)
			}
			if code(res) != tools.CodeAborted || text(res) != "Tool call aborted: "+wrapperCause.s {
				t.Errorf("result %s %q", code(res), text(res))
			}
		})
		t.Run("a foreign context, the caller cancels during the body/"+how, func(t *testing.T) {
			e := newEnv(t)
			started := make(chan struct{})
			var got, gotCause error
			bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
				close(started)
				got, gotCause = wait(ctx)
				return tools.Output{}, got
			})
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(_ context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				return next(context.Background())
			}))
			ctx, cancel := context.WithCancelCause(context.Background())
			go func() { <-started; cancel(callerCause) }()
			res := e.reg.Execute(ctx, call("b", `{}`))
			if !errors.Is(got, context.Canceled) || gotCause != callerCause {
				t.Errorf("the body saw %v, cause %v; want Canceled with the caller's cause", got, gotCause)
			}
			if code(res) != tools.CodeAborted {
				t.Errorf("result %s %q", code(res), text(res))
			}
		})
		t.Run("the wrapper returns without waiting: abandoned/"+how, func(t *testing.T) {
			e := newEnv(t)
			started := make(chan struct{})
			var got, gotCause error
			bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
				close(started)
				got, gotCause = wait(ctx)
				return tools.Output{}, got
			})
			var spawned sync.WaitGroup
			defer spawned.Wait()
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				spawned.Go(func() { _, _ = next(ctx) })
				<-started
				return tools.Result{Content: []tools.Content{tools.Text("gave up")}, IsError: true}, nil
			}))
			res := e.reg.Execute(context.Background(), call("b", `{}`))
			if !errors.Is(got, context.Canceled) || gotCause != tools.ErrAbandoned {
				t.Errorf("the body saw %v, cause %v; want Canceled with ErrAbandoned", got, gotCause)
			}
			if text(res) != "gave up" {
				t.Errorf("result %q", text(res))
			}
		})
	}
	t.Run("a wrapper passes a cancelled context: the body never starts", func(t *testing.T) {
		e := newEnv(t)
		ran := false
		bodyTool(t, e, func(context.Context) (tools.Output, error) { ran = true; return tools.Output{}, nil })
		must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			w, cancel := context.WithCancelCause(ctx)
			cancel(wrapperCause)
			return next(w)
		}))
		res := e.reg.Execute(context.Background(), call("b", `{}`))
		if ran || code(res) != tools.CodeAbortedBeforeDispatch || text(res) != "Tool call aborted before it started: "+wrapperCause.s {
			t.Errorf("body ran: %v; result %s %q", ran, code(res), text(res))
		}
	})
	t.Run("a kept context is over once its body returned", func(t *testing.T) {
		for _, touched := range []bool{false, true} {
			e := newEnv(t)
			var kept context.Context
			bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
				if touched {
					_ = ctx.Done() // the context is made while the body runs
				}
				if ctx.Err() != nil {
					t.Error("the body's context is done while it runs")
				}
				kept = ctx
				return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
			})
			passthroughs(t, e.root, 1)
			if res := e.reg.Execute(context.Background(), call("b", `{}`)); res.IsError {
				t.Fatalf("result %+v", res)
			}
			<-kept.Done()
			if !errors.Is(kept.Err(), context.Canceled) || !errors.Is(context.Cause(kept), context.Canceled) {
				t.Errorf("touched=%v: a kept context after its body returned: %v, cause %v", touched, kept.Err(), context.Cause(kept))
			}
		}
	})
	t.Run("a retry's second body gets a live context of its own", func(t *testing.T) {
		e := newEnv(t)
		var seen []context.Context
		bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
			if err := ctx.Err(); err != nil {
				t.Errorf("body %d started with a done context: %v", len(seen)+1, err)
			}
			seen = append(seen, ctx)
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		})
		must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			if r, err := next(ctx); err != nil || r.IsError {
				return r, err
			}
			return next(ctx)
		}))
		if res := e.reg.Execute(context.Background(), call("b", `{}`)); res.IsError || len(seen) != 2 {
			t.Fatalf("result %+v, %d bodies", res, len(seen))
		}
		for i, c := range seen {
			if c.Err() == nil {
				t.Errorf("body %d's context is live after the call", i+1)
			}
		}
	})
	t.Run("values and deadline are the wrapper's context's", func(t *testing.T) {
		e := newEnv(t)
		deadline := time.Now().Add(time.Hour)
		var v any
		var d time.Time
		var ok bool
		bodyTool(t, e, func(ctx context.Context) (tools.Output, error) {
			v = ctx.Value(ctxKey{})
			d, ok = ctx.Deadline()
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		})
		must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			w, cancel := context.WithDeadline(context.WithValue(ctx, ctxKey{}, "v"), deadline)
			defer cancel()
			return next(w)
		}))
		if res := e.reg.Execute(context.Background(), call("b", `{}`)); res.IsError || v != "v" || !ok || !d.Equal(deadline) {
			t.Errorf("result %+v, value %v, deadline %v %v", res, v, d, ok)
		}
	})
}

// TestP10_CallerAndObserversCopiesAreApart: the caller's result and the
// one a tools/result observer kept share one allocation (detach); what the
// caller does to its own, writing or appending, never reaches the
// observer's, and each of the call's copies is its own.
func TestP10_CallerAndObserversCopiesAreApart(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "two", Description: "Two blocks.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("a"), tools.Text("b")}}, nil
		},
	})
	var rc recorder
	rc.listen(t, e.root)
	res := e.reg.Execute(context.Background(), call("two", `{}`))
	if len(rc.notices) != 1 || text(res) != "ab" {
		t.Fatalf("result %+v, %d notices", res, len(rc.notices))
	}
	res.Content[0].Text = "changed"
	res.Content = append(res.Content, tools.Text("appended"))
	res.Content[2].Text = "appended, then changed"
	if got := rc.notices[0].Result(); text(got) != "ab" || len(got.Content) != 2 {
		t.Errorf("the observer's result became %q (%d blocks) after the caller changed its own", text(got), len(got.Content))
	}
	again := e.reg.Execute(context.Background(), call("two", `{}`))
	if text(again) != "ab" || text(rc.notices[1].Result()) != "ab" {
		t.Errorf("a second call: %q, observed %q", text(again), text(rc.notices[1].Result()))
	}
}

// TestPerf24_BatchAllocations: a batch of 10 trivial exclusive calls
// (which all run on the calling goroutine, so the count does not depend
// on scheduling) allocates at most once more than the same 10 calls
// made by Execute: its results (before: 4, its state, its entries and its
// parking marks, which the next batch now reuses; before that 9: besides,
// the scheduler and a closure for each of its four hooks).
func TestPerf24_BatchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, trivial())
	ctx := context.Background()
	calls := make([]tools.Call, 10)
	for i := range calls {
		calls[i] = tools.Call{ID: "c", Name: "trivial", Arguments: benchArgs}
	}
	seq := testing.AllocsPerRun(100, func() {
		for _, c := range calls {
			sink = e.reg.Execute(ctx, c)
		}
	})
	batch := testing.AllocsPerRun(100, func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[9] })
	if batch-seq > 1 {
		t.Errorf("a batch of 10 allocates %v times, 10 Executes %v: %v more, want at most 1", batch, seq, batch-seq)
	}
}
