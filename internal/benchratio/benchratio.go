// Package benchratio measures the cost of one operation relative to
// another inside a single benchmark run, the way the project's goals are
// stated ("≤ 1.3× sequential"): A and B alternate in rounds, so that the
// load of a shared machine weighs on both alike, and the median of the
// per-round ratios is reported with b.ReportMetric.
package benchratio

import (
	"slices"
	"testing"
	"time"
)

// Compare runs one round per benchmark iteration: a called n times and
// base called n times (which goes first alternates), each timed. It reports the median per-round ratio
// a/base as "<name>" (a dimensionless metric, so name it like "emit/loop"),
// and the median and p10 ns per call of each as "a-ns", "a-p10-ns",
// "base-ns" and "base-p10-ns".
func Compare(b *testing.B, name string, n int, a, base func()) {
	b.Helper()
	var ratios, as, bs []float64
	timed := func(f func()) float64 {
		t0 := time.Now()
		for range n {
			f()
		}
		return float64(time.Since(t0).Nanoseconds())
	}
	for round := 0; b.Loop(); round++ {
		// Which goes first alternates, so that neither always runs on
		// caches (or a CPU frequency) the other left.
		var da, db float64
		if round%2 == 0 {
			da = timed(a)
			db = timed(base)
		} else {
			db = timed(base)
			da = timed(a)
		}
		if db <= 0 {
			db = 1
		}
		ratios, as, bs = append(ratios, da/db), append(as, da/float64(n)), append(bs, db/float64(n))
	}
	b.ReportMetric(Quantile(ratios, 0.5), name)
	b.ReportMetric(Quantile(as, 0.5), "a-ns")
	b.ReportMetric(Quantile(as, 0.1), "a-p10-ns")
	b.ReportMetric(Quantile(bs, 0.5), "base-ns")
	b.ReportMetric(Quantile(bs, 0.1), "base-p10-ns")
}

// Quantile returns the q-quantile (0 ≤ q ≤ 1, nearest rank) of xs, 0 for
// none. xs is not modified.
func Quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	return s[i]
}
