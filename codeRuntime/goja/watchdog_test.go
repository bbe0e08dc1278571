package goja

import (
	"errors"
	"runtime/metrics"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// TestHeapWatchdog: a run during which the process heap exceeds MaxHeapBytes is interrupted and
// fails with kind limit (cause ErrHeapLimit).
func TestHeapWatchdog(t *testing.T) {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	ceiling := int64(s[0].Value.Uint64()) + 96<<20
	// The program allocates forever and the time budgets are ample: only the ceiling can stop it.
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = ceiling })
	before := heapCeilingHit.Load()
	f := mustFail(t, g, coderuntime.Program{Source: "const keep: string[] = []\nconst big = 'x'.repeat(1 << 20)\nwhile (true) keep.push(big + keep.length)"}, coderuntime.KindLimit)
	if !errors.Is(f, coderuntime.ErrHeapLimit) || heapCeilingHit.Load() == before {
		t.Fatalf("failure = %v", f)
	}
}
