package goja

import (
	"context"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/benchratio"
)

// BenchmarkEmptyRunAfterIdle: an empty run after 100 ms idle on a runtime that prepares a VM
// ahead (a) against one that does not (base, the behaviour before), interleaved (which goes first
// alternates). Metrics: spare/nospare, the median per-round ratio; the median and p10 latency of
// each in µs.
func BenchmarkEmptyRunAfterIdle(b *testing.B) {
	a, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	base, _ := NewInProcess(coderuntime.Config{})
	base.spare.off = true
	b.Cleanup(func() { _ = a.Close(); _ = base.Close() })
	ctx := context.Background()
	p := coderuntime.Program{Source: ""}
	timed := func(g *Runtime) float64 {
		b.StopTimer()
		time.Sleep(100 * time.Millisecond)
		b.StartTimer()
		t0 := time.Now()
		if _, err := g.Run(ctx, p); err != nil {
			b.Fatal(err)
		}
		return float64(time.Since(t0).Nanoseconds()) / 1e3
	}
	// Warm both (compile cache, first-use initialization).
	timed(a)
	timed(base)
	var ratios, as, bs []float64
	for round := 0; b.Loop(); round++ {
		var da, db float64
		if round%2 == 0 {
			da, db = timed(a), timed(base)
		} else {
			db, da = timed(base), timed(a)
		}
		ratios, as, bs = append(ratios, da/db), append(as, da), append(bs, db)
	}
	b.ReportMetric(benchratio.Quantile(ratios, 0.5), "spare/nospare")
	b.ReportMetric(benchratio.Quantile(as, 0.5), "a-µs")
	b.ReportMetric(benchratio.Quantile(as, 0.1), "a-p10-µs")
	b.ReportMetric(benchratio.Quantile(bs, 0.5), "base-µs")
	b.ReportMetric(benchratio.Quantile(bs, 0.1), "base-p10-µs")
}
