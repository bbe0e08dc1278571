package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/benchratio"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The batch benchmarks measure wall time on the real clock (goals from
// the issue; the tests assert no time). Bodies that wait use time.Sleep.

func sleepTool(name string, c tools.ConcurrencyRule) tools.Definition {
	return tools.Definition{
		Name: name, Description: "Sleeps.", Concurrency: c,
		Parameters: json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`),
		Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			time.Sleep(time.Duration(x.Arg("ms").Int()) * time.Millisecond)
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	}
}

// BenchmarkBatchSleep: parallel-safe calls whose bodies each wait 50 ms.
// Goals: ten of them ≤ 60 ms (one body's time); the same ten with an
// exclusive call in the middle ≤ 110 ms (the five before it, then the
// barrier, then the five after it: two bodies' time). The last case makes
// the exclusive call wait 50 ms too: three bodies' time is the least a
// barrier allows.
func BenchmarkBatchSleep(b *testing.B) {
	e := newEnv(b)
	mustRegister(b, e.reg, e.root, sleepTool("psleep", tools.Parallel))
	mustRegister(b, e.reg, e.root, sleepTool("xsleep", nil))
	par := func(i int) tools.Call {
		return tools.Call{ID: fmt.Sprint("c", i), Name: "psleep", Arguments: json.RawMessage(`{"ms":50}`)}
	}
	var ten []tools.Call
	for i := range 10 {
		ten = append(ten, par(i))
	}
	barrier := func(ms int) []tools.Call {
		x := tools.Call{ID: "x", Name: "xsleep", Arguments: json.RawMessage(fmt.Sprintf(`{"ms":%d}`, ms))}
		return append(append(append([]tools.Call{}, ten[:5]...), x), ten[5:]...)
	}
	for _, tc := range []struct {
		name  string
		calls []tools.Call
	}{{"10-parallel", ten}, {"10-parallel+exclusive-in-the-middle", barrier(0)}, {"10-parallel+exclusive-50ms-in-the-middle", barrier(50)}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				for _, r := range e.reg.ExecuteBatch(context.Background(), tc.calls, tools.BatchOptions{}) {
					if r.IsError {
						b.Fatal(r)
					}
				}
			}
		})
	}
}

// BenchmarkBatchOverhead: ten trivial calls as one batch against ten
// sequential Execute calls (goal: batch ≤ 1.3× sequential), for exclusive
// (undeclared) and parallel tools.
func BenchmarkBatchOverhead(b *testing.B) {
	e := newEnv(b)
	mustRegister(b, e.reg, e.root, trivial())
	par := trivial()
	par.Name, par.Concurrency = "trivial-parallel", tools.Parallel
	mustRegister(b, e.reg, e.root, par)
	ctx := context.Background()
	for _, name := range []string{"trivial", "trivial-parallel"} {
		calls := make([]tools.Call, 10)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: name, Arguments: benchArgs}
		}
		// Both measured alternately in rounds, so that the load of a
		// shared machine weighs on both alike: the median per-round ratio
		// batch / sequential.
		b.Run(name+"/ratio", func(b *testing.B) {
			benchratio.Compare(b, "batch/sequential", 20,
				func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[9] },
				func() {
					for _, c := range calls {
						sink = e.reg.Execute(ctx, c)
					}
				})
		})
		if name == "trivial-parallel" {
			floorRatios(b, calls, func(c tools.Call) { sink = e.reg.Execute(ctx, c) })
		}
		b.Run(name+"/sequential-Execute", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				for _, c := range calls {
					sink = e.reg.Execute(ctx, c)
				}
			}
		})
		b.Run(name+"/ExecuteBatch", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[9]
			}
		})
	}
}

// floorRatios measures, against the calls made by exec one after
// another, what any batch that runs a parallel call's body on a goroutine
// of its own costs at least: "goroutine/ratio" starts a goroutine that
// does nothing and waits for it to end, then makes the calls here;
// "floor/ratio" makes the calls on one fresh goroutine (its stack grown
// first, as the batch's workers do) and waits for it, with no other
// synchronization. A batch also runs the policy prefixes on the calling
// goroutine and hands each call over: it cannot cost less than the floor.
func floorRatios(b *testing.B, calls []tools.Call, exec func(tools.Call)) {
	seq := func() {
		for _, c := range calls {
			exec(c)
		}
	}
	b.Run("goroutine/ratio", func(b *testing.B) {
		benchratio.Compare(b, "goroutine+calls/calls", 20, func() {
			var wg sync.WaitGroup
			wg.Add(1)
			go wg.Done()
			wg.Wait()
			seq()
		}, seq)
	})
	b.Run("floor/ratio", func(b *testing.B) {
		benchratio.Compare(b, "one-goroutine/calls", 20, func() {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				sinkByte = growFrame(len(calls))
				seq()
			}()
			wg.Wait()
		}, seq)
	})
}

var sinkByte byte

// growFrame grows a new goroutine's stack as the batch's growStack does.
//
//go:noinline
func growFrame(i int) byte {
	var buf [4 << 10]byte
	buf[i%len(buf)] = byte(i)
	return buf[(i*7)%len(buf)]
}

// BenchmarkRunCodePromiseAll100: Promise.all of 100 parallel sub-calls
// that each wait 10 ms, with the default cap of 10 (goal ≤ 150 ms; ten
// rounds of 10 ms).
func BenchmarkRunCodePromiseAll100(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code})
	mustRegister(b, e.reg, e.root, sleepTool("psleep", tools.Parallel))
	c := runCode("c1", `return (await Promise.all(Array.from({ length: 100 }, () => tools.psleep({ ms: 10 })))).length`, "agent")
	for b.Loop() {
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		if sink = e.reg.Execute(context.Background(), c); sink.IsError || text(sink) != "100" {
			b.Fatal(sink)
		}
	}
}

// BenchmarkBatchScaling: batches of 1, 10, 100 and 1,000 trivial parallel
// calls against the same calls run by Execute one after another,
// interleaved (goal: ≤ 1.3×). peak-goroutines is the most goroutines
// running at once beyond those before the batch, as seen by the bodies of
// one untimed batch of the same size (goal: ≤ MaxParallel + a constant).
func BenchmarkBatchScaling(b *testing.B) {
	e := newEnv(b)
	par := trivial()
	par.Name, par.Concurrency = "trivial-parallel", tools.Parallel
	mustRegister(b, e.reg, e.root, par)
	var peak atomic.Int64
	counting := par
	counting.Name = "counting-parallel"
	counting.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		if g := int64(runtime.NumGoroutine()); g > peak.Load() {
			peak.Store(g)
		}
		return par.Execute(ctx, x)
	}
	mustRegister(b, e.reg, e.root, counting)
	ctx := context.Background()
	for _, n := range []int{1, 10, 100, 1000} {
		calls := make([]tools.Call, n)
		counted := make([]tools.Call, n)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: par.Name, Arguments: benchArgs}
			counted[i] = tools.Call{ID: fmt.Sprint("c", i), Name: counting.Name, Arguments: benchArgs}
		}
		b.Run(fmt.Sprintf("calls=%d", n), func(b *testing.B) {
			peak.Store(0)
			before := runtime.NumGoroutine()
			_ = e.reg.ExecuteBatch(ctx, counted, tools.BatchOptions{})
			rounds := max(1, 1000/n)
			benchratio.Compare(b, "batch/sequential", rounds,
				func() { sink = e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})[n-1] },
				func() {
					for _, c := range calls {
						sink = e.reg.Execute(ctx, c)
					}
				})
			b.ReportMetric(float64(peak.Load()-int64(before)), "peak-goroutines")
		})
	}
}
