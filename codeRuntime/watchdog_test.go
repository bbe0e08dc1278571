package coderuntime

import (
	"errors"
	"runtime/metrics"
	"testing"
)

// TestHeapWatchdog: a run during which the process heap exceeds MaxHeapBytes is interrupted and
// fails with kind limit (cause ErrHeapLimit).
func TestHeapWatchdog(t *testing.T) {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	ceiling := int64(s[0].Value.Uint64()) + 96<<20
	// The program allocates forever and the time budgets are ample: only the ceiling can stop it.
	g := newTestRuntime(t, func(c *Config) { c.MaxHeapBytes = ceiling })
	before := heapCeilingHit.Load()
	f := mustFail(t, g, Program{Source: "const keep: string[] = []\nconst big = 'x'.repeat(1 << 20)\nwhile (true) keep.push(big + keep.length)"}, KindLimit)
	if !errors.Is(f, ErrHeapLimit) || heapCeilingHit.Load() == before {
		t.Fatalf("failure = %v", f)
	}
}
