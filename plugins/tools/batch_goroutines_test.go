package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB2_GoroutinesStayWithinTheCap: while the first call of a batch of
// 200 parallel calls is held back, every later one dispatches and waits
// for its result's turn (model order); none of them keeps a goroutine
// meanwhile, so the batch runs on at most MaxParallel + a constant
// goroutines (before: one per waiting call). Every call still gets its one
// result, in order.
func TestB2_GoroutinesStayWithinTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		release := make(chan struct{})
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "gate", Description: "The first call waits for the test.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				if x.CallID() == "c0" {
					<-release
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		calls := make([]tools.Call, 200)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "gate"}
		}
		const maxParallel = 4
		before := runtime.NumGoroutine()
		done := make(chan []tools.Result)
		go func() {
			done <- e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{MaxParallel: maxParallel})
		}()
		synctest.Wait() // c0 is held; every other call dispatched and waits for its turn
		during := runtime.NumGoroutine() - before
		close(release)
		res := <-done
		if limit := maxParallel + 3; during > limit {
			t.Errorf("%d goroutines during the batch, want at most %d (the cap %d + 3)", during, limit, maxParallel)
		}
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID || len(r.Content) != 1 || r.Content[0].Text != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
	})
}

// TestB2_QuickParallelCallsShareOneWorker: the parallel calls of a batch
// whose bodies return at once run on the one worker the batch starts,
// which takes each as it finishes the one before; more workers start only
// for calls that wait behind a body that does not return (before: a
// worker that took a call while others waited started another, so ten
// trivial calls started about six). One CPU makes the order of events
// deterministic, and the bubble's clock keeps the guard from firing while
// a goroutine can run.
func TestB2_QuickParallelCallsShareOneWorker(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		par := trivial()
		par.Name, par.Concurrency = "trivial-parallel", tools.Parallel
		mustRegister(t, e.reg, e.root, par)
		calls := make([]tools.Call, 10)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: par.Name}
		}
		// The count is the process's: the runtime starts a goroutine of
		// its own now and then (about once in a thousand batches here).
		const batches = 20
		created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(created)
		before := created[0].Value.Uint64()
		for range batches {
			res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
			for i, r := range res {
				if r.IsError || r.CallID != calls[i].ID {
					t.Fatalf("result %d: %+v", i, r)
				}
			}
		}
		metrics.Read(created)
		if n := created[0].Value.Uint64() - before; n > batches+3 {
			t.Fatalf("%d batches of 10 trivial parallel calls started %d goroutines, want %d (one each; at most 3 more)", batches, n, batches)
		}
	})
}

// TestB2_CallBehindABlockedBodyStartsWhilePolicyWaits: call 0's body
// waits until call 1's body ran, and call 2's pre-execute waits for it
// too, so the goroutine running the policy prefixes is held in a listener
// while call 1 waits behind the worker stuck in call 0's body. The batch's
// guard starts a worker for call 1 (without it the batch would never
// end), and every call completes. One CPU keeps the worker from taking
// call 1 before it is stuck.
func TestB2_CallBehindABlockedBodyStartsWhilePolicyWaits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ran1 := make(chan struct{})
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "rendezvous", Description: "Call 0 waits for call 1.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				switch x.CallID() {
				case "c0":
					<-ran1
				case "c1":
					close(ran1)
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			if x.CallID() == "c2" {
				<-ran1
			}
			return next(ctx)
		}))
		calls := []tools.Call{{ID: "c0", Name: "rendezvous"}, {ID: "c1", Name: "rendezvous"}, {ID: "c2", Name: "rendezvous"}}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID || text(r) != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
	})
}

// TestB2_GuardStartsNoWorkerWhileTheWorkersKeepUp: the goroutine running
// the policy prefixes is held in a listener (call 7's pre-execute) while
// the worker, having run calls 0–4 at once, waits in call 5's body and
// call 6 waits for it, both past the guard's millisecond. The worker took
// more work since the guard was set than waits then, so the guard only
// sets itself again: the batch starts its one worker and the guard's one
// goroutine, no second worker (before: one for call 6, as if the worker
// were stuck; a long batch of quick calls started workers up to the cap
// every millisecond it ran). One CPU makes the order of events
// deterministic.
func TestB2_GuardStartsNoWorkerWhileTheWorkersKeepUp(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		const hold = 1500 * time.Microsecond // past the guard's millisecond
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "stream", Description: "Call 5 takes a while.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				if x.CallID() == "c5" {
					time.Sleep(hold)
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			if x.CallID() == "c7" {
				time.Sleep(hold)
			}
			return next(ctx)
		}))
		calls := make([]tools.Call, 10)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "stream"}
		}
		// The count is the process's: the runtime starts a goroutine of
		// its own now and then.
		const batches = 10
		created := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
		metrics.Read(created)
		before := created[0].Value.Uint64()
		for range batches {
			res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
			for i, r := range res {
				if r.IsError || r.CallID != calls[i].ID || text(r) != calls[i].ID {
					t.Fatalf("result %d: %+v", i, r)
				}
			}
		}
		metrics.Read(created)
		if n := created[0].Value.Uint64() - before; n > 2*batches+3 {
			t.Fatalf("%d batches started %d goroutines, want %d (a worker and the guard's each; at most 3 more)", batches, n, 2*batches)
		}
	})
}

// TestPerf24_ParallelBatchAllocations: a batch of 10 trivial parallel
// calls allocates at most once more than the same 10 calls made by
// Execute: its results. Its worker's and its guard's closures are reused
// with its state by the next batch, and its guard timer is never made:
// the calls were all queued while the worker was starting, and the
// goroutine running the prefixes then watched the worker itself (before:
// 8; then 4, with those closures; then 2, with the timer). One CPU and
// the bubble make the batch's course the same every time.
func TestPerf24_ParallelBatchAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		par := trivial()
		par.Name, par.Concurrency = "trivial-parallel", tools.Parallel
		mustRegister(t, e.reg, e.root, par)
		ctx := context.Background()
		calls := make([]tools.Call, 10)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: par.Name, Arguments: benchArgs}
		}
		seq := testing.AllocsPerRun(100, func() {
			for _, c := range calls {
				sink = e.reg.Execute(ctx, c)
			}
		})
		batch := testing.AllocsPerRun(100, func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[9] })
		if batch-seq > 1 {
			t.Errorf("a batch of 10 parallel calls allocates %v times, 10 Executes %v: %v more, want at most 1", batch, seq, batch-seq)
		}
	})
}

// TestPerf24_LargeBatchReusesItsState: a batch of 1,000 trivial parallel
// calls allocates about what the same calls made by Execute allocate,
// plus its results: its entries, parking marks and queue are the previous
// batch's, and each result is written in place (before: only a batch of
// up to 64 calls reused its state, and a larger one allocated about 300
// bytes a call more: 1,231,296 bytes against 768,000 here). One CPU and
// the bubble make the batch's course the same every time; the best of
// three batches is compared, each right after the one before returned
// its state.
func TestPerf24_LargeBatchReusesItsState(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocations")
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		par := trivial()
		par.Name, par.Concurrency = "trivial-parallel", tools.Parallel
		mustRegister(t, e.reg, e.root, par)
		ctx := context.Background()
		calls := make([]tools.Call, 1000)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: par.Name, Arguments: benchArgs}
		}
		allocated := func(f func()) uint64 {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			f()
			runtime.ReadMemStats(&after)
			return after.TotalAlloc - before.TotalAlloc
		}
		seq := allocated(func() {
			for _, c := range calls {
				sink = e.reg.Execute(ctx, c)
			}
		})
		sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[0]
		batch := ^uint64(0)
		for range 3 {
			batch = min(batch, allocated(func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[0] }))
		}
		results := uint64(len(calls)) * uint64(unsafe.Sizeof(tools.Result{}))
		if limit := seq + results + 64<<10; batch > limit {
			t.Errorf("a batch of %d parallel calls allocates %d bytes, %d Executes %d: want at most %d (their results, %d bytes, and 64 KB)", len(calls), batch, len(calls), seq, limit, results)
		}
	})
}

// TestPerf24_BatchAllocatesExecutionsInChunks: a batch of 16 trivial
// exclusive calls (all on the calling goroutine, so the count does not
// depend on scheduling) allocates its calls' Executions eight at a time:
// 14 allocations fewer than the same calls made by Execute, one more for
// its results (before: one more than Execute). Each call still gets an
// Execution of its own.
func TestPerf24_BatchAllocatesExecutionsInChunks(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	seen := map[*tools.Execution]bool{}
	noted := trivial()
	noted.Name = "noted"
	body := noted.Execute
	noted.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		mu.Lock()
		seen[x] = true
		mu.Unlock()
		return body(ctx, x)
	}
	mustRegister(t, e.reg, e.root, trivial())
	mustRegister(t, e.reg, e.root, noted)
	ctx := context.Background()
	calls := make([]tools.Call, 16)
	for i := range calls {
		calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "noted", Arguments: benchArgs}
	}
	for range 2 {
		for _, r := range e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{}) {
			if r.IsError {
				t.Fatal(r)
			}
		}
	}
	if len(seen) != 2*len(calls) {
		t.Errorf("two batches of %d calls ran with %d Executions, want %d", len(calls), len(seen), 2*len(calls))
	}
	if raceEnabled {
		return // the race detector changes allocation counts
	}
	for i := range calls {
		calls[i].Name = "trivial"
	}
	seq := testing.AllocsPerRun(100, func() {
		for _, c := range calls {
			sink = e.reg.Execute(ctx, c)
		}
	})
	batch := testing.AllocsPerRun(100, func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[15] })
	if seq-batch < 13 {
		t.Errorf("a batch of 16 allocates %v times, 16 Executes %v: %v fewer, want at least 13", batch, seq, seq-batch)
	}
}
