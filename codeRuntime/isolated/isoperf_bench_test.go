package isolated

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/benchratio"
)

// compareRuns times p on a and on base in alternating rounds (which goes first alternates), each
// run with warm, quiet pools (waiting for them is not timed), and reports the median of the
// per-round ratios a/base as name, and the median and p10 of each side's latency in µs.
func compareRuns(b *testing.B, name string, a, base coderuntime.Runtime, p coderuntime.Program, want string) {
	b.Helper()
	ctx := context.Background()
	quiet := func() {
		for _, rt := range []coderuntime.Runtime{a, base} {
			if iso, ok := rt.(*Runtime); ok {
				waitWarm(iso)
			}
		}
	}
	timed := func(rt coderuntime.Runtime) float64 {
		t0 := time.Now()
		res, err := rt.Run(ctx, p)
		d := time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if string(res.Value) != want {
			b.Fatalf("value %s, want %s", res.Value, want)
		}
		return float64(d.Nanoseconds()) / 1e3
	}
	var ratios, as, bs []float64
	for round := 0; b.Loop(); round++ {
		b.StopTimer()
		quiet()
		b.StartTimer()
		var da, db float64
		if round%2 == 0 {
			da = timed(a)
			b.StopTimer()
			quiet()
			b.StartTimer()
			db = timed(base)
		} else {
			db = timed(base)
			b.StopTimer()
			quiet()
			b.StartTimer()
			da = timed(a)
		}
		ratios, as, bs = append(ratios, da/db), append(as, da), append(bs, db)
	}
	b.ReportMetric(benchratio.Quantile(ratios, 0.5), name)
	b.ReportMetric(benchratio.Quantile(as, 0.5), "a-µs")
	b.ReportMetric(benchratio.Quantile(as, 0.1), "a-p10-µs")
	b.ReportMetric(benchratio.Quantile(bs, 0.5), "base-µs")
	b.ReportMetric(benchratio.Quantile(bs, 0.1), "base-p10-µs")
}

func newBenchIsolated(b *testing.B, engine string, tweak func(*Runtime)) *Runtime {
	iso, err := New(coderuntime.Config{Engine: engine, PoolSize: 2})
	if err != nil {
		b.Fatal(err)
	}
	if tweak != nil {
		tweak(iso)
	}
	b.Cleanup(func() { _ = iso.Close() })
	return iso
}

var (
	emptyProgram = coderuntime.Program{Source: ""}
	seqProgram   = coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.echo({ n: i })).n\nreturn s",
		Bindings: map[string]coderuntime.Binding{"echo": func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }}}
)

// BenchmarkIsolatedReap: an isolated run (goja) that returns before its worker is reaped (a)
// against one that waits for the reap (base, the behaviour before), interleaved.
// Metric bgreap/waitreap: the median per-round ratio.
func BenchmarkIsolatedReap(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) { iso.waitReap = true })
			compareRuns(b, "bgreap/waitreap", a, base, c.p, c.want)
		})
	}
}

// BenchmarkIsolatedWorkerIO: workers reading the parent over non-blocking (poller), buffered pipes
// (a) against blocking, unbuffered ones (base, the behaviour before), interleaved; both return
// before the reap. Metric pollerio/blockingio: the median per-round ratio.
func BenchmarkIsolatedWorkerIO(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) {
				iso.env = append(slices.Clone(iso.env), workerLegacyIOEnv+"=1")
			})
			compareRuns(b, "pollerio/blockingio", a, base, c.p, c.want)
		})
	}
}

// BenchmarkIsolatedWorkerReads: workers whose binding calls read their own answers from the parent,
// in blocking reads (a), against workers whose background goroutine reads every frame over the
// runtime's poller and hands each answer over (base, the behaviour before), interleaved. Metric
// ownreads/background: the median per-round ratio.
func BenchmarkIsolatedWorkerReads(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) {
				iso.env = append(slices.Clone(iso.env), workerBackgroundReadsEnv+"=1")
			})
			compareRuns(b, "ownreads/background", a, base, c.p, c.want)
		})
	}
}

// BenchmarkIsolatedTransformAhead: goja workers given the program transformed (and cached) by the
// parent (a) against workers that transform it themselves (base, the behaviour before),
// interleaved. Metric parent/worker: the median per-round ratio.
func BenchmarkIsolatedTransformAhead(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) { iso.noTransform = true })
			compareRuns(b, "parent/worker", a, base, c.p, c.want)
		})
	}
}

// BenchmarkIsolatedBeforeAfter: isolated goja runs as they are now (a) against runs with every
// change of issue 24's isolated rows turned back (base: Run waits for the reap, blocking and
// unbuffered worker pipes, the worker transforms the program), interleaved. The worker's VM
// prepared ahead is in both. Metric now/before: the median per-round ratio.
func BenchmarkIsolatedBeforeAfter(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) {
				iso.waitReap, iso.noTransform = true, true
				iso.env = append(defaultGCEnv(iso.env), workerLegacyIOEnv+"=1")
			})
			compareRuns(b, "now/before", a, base, c.p, c.want)
		})
	}
}

// BenchmarkIsolatedFloor: 1,000 sequential calls in an isolated goja run (a) against the same
// calls made by a worker without an engine (base "pipes": it writes each call and reads its
// answer, the protocol's and the pipes' floor) and against an in-process goja run (base
// "engine": the engine's own cost of the calls), interleaved. Metrics: the median per-round
// ratios, and each side's p10 and median in µs.
func BenchmarkIsolatedFloor(b *testing.B) {
	b.Run("pipes", func(b *testing.B) {
		a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
		base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) {
			iso.env = append(slices.Clone(iso.env), stubEnv+"=pingpong")
		})
		compareRuns(b, "isolated/pipes", a, base, seqProgram, "499500")
	})
	b.Run("engine", func(b *testing.B) {
		a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
		base, err := newEngine(coderuntime.Config{Engine: coderuntime.EngineGoja})
		if err != nil {
			b.Fatal(err)
		}
		compareRuns(b, "isolated/inprocess", a, base, seqProgram, "499500")
	})
}

// BenchmarkIsolatedWorkerGC: workers that collect at GOGC 50 while their heap is small (a) against
// workers at the default GOGC (base, the behaviour before), interleaved. Metric gc50/gc100: the
// median per-round ratio.
func BenchmarkIsolatedWorkerGC(b *testing.B) {
	for _, c := range []struct {
		name string
		p    coderuntime.Program
		want string
	}{{"empty", emptyProgram, ""}, {"1000 sequential calls", seqProgram, "499500"}} {
		b.Run(c.name, func(b *testing.B) {
			a := newBenchIsolated(b, coderuntime.EngineGoja, nil)
			base := newBenchIsolated(b, coderuntime.EngineGoja, func(iso *Runtime) {
				iso.env = defaultGCEnv(iso.env)
			})
			compareRuns(b, "gc50/gc100", a, base, c.p, c.want)
		})
	}
}

// defaultGCEnv is a worker environment with the default GOGC (the behaviour before
// workerGCPercent).
func defaultGCEnv(env []string) []string {
	return append(slices.Clone(env), workerDefaultGCEnv+"=1")
}
