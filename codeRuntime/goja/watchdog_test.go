package goja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// watchdogCeiling is a heap ceiling margin bytes over the process's live heap now.
func watchdogCeiling(t *testing.T, margin int64) int64 {
	t.Helper()
	live, ok := readMetric(liveHeapMetric)
	objects, ok2 := readMetric(heapMetric)
	if !ok || !ok2 {
		t.Fatal("the runtime metrics the watchdog reads are missing")
	}
	return int64(max(live, objects)) + margin
}

// TestHeapWatchdog: a run during which the process heap exceeds MaxHeapBytes is interrupted and
// fails with kind limit (cause ErrHeapLimit).
func TestHeapWatchdog(t *testing.T) {
	// The program allocates forever and the time budgets are ample: only the ceiling can stop it.
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = watchdogCeiling(t, 96<<20) })
	before := heapCeilingHit.Load()
	f := mustFail(t, g, coderuntime.Program{Source: "const keep: string[] = []\nconst big = 'x'.repeat(1 << 20)\nwhile (true) keep.push(big + keep.length)"}, coderuntime.KindLimit)
	if !errors.Is(f, coderuntime.ErrHeapLimit) || heapCeilingHit.Load() == before {
		t.Fatalf("failure = %v", f)
	}
}

// TestHeapWatchdogDoesNotCountGarbage: a program whose live data stays well under MaxHeapBytes
// (16 of the 192 MiB the ceiling allows over the process's heap, so memory the process keeps for
// other reasons — a runtime of an earlier test not yet collected, the race detector's bookkeeping —
// cannot push it over) while it makes far more garbage than the ceiling is not stopped: the
// watchdog saw the heap over the ceiling (the collector is set to let garbage grow to eleven times
// the live heap), collected, and judged by the live heap. The program ends when the watchdog has
// cleared such a sample three times, however long that takes; before, the first such sample
// failed it with kind limit.
func TestHeapWatchdogDoesNotCountGarbage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(1000))
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = watchdogCeiling(t, 192<<20) })
	before := heapCeilingCollected.Load()
	collected := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return fmt.Appendf(nil, `{"n":%d}`, heapCeilingCollected.Load()-before), nil
	}
	src := `const keep: string[] = []
const big = 'x'.repeat(1 << 20)
for (let i = 0; i < 16; i++) keep.push(big + i)
let made = 0
while (true) {
  for (let j = 0; j < 16; j++) made += (big + j).length
  if ((await tools.collected({})).n >= 3) return keep.length
}`
	res, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"collected": collected}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(res.Value) != "16" {
		t.Fatalf("result = %s, want 16", res.Value)
	}
}

// TestWatchdogRunsNoGoroutineBetweenSamples: the heap watchdog of a run is a timer, not a
// goroutine waiting for ticks, so starting and stopping it hands nothing to another goroutine
// (before, a sampler goroutine started with each run, and stop waited for it to be scheduled and
// exit: a hand-off in every run, most costly after an idle period).
func TestWatchdogRunsNoGoroutineBetweenSamples(t *testing.T) {
	r := &run{cfg: coderuntime.Config{MaxHeapBytes: 1 << 40, HeapCheckInterval: time.Hour}, vm: goja.New()}
	stop := r.startWatchdog()
	buf := make([]byte, 1<<20)
	stacks := string(buf[:runtime.Stack(buf, true)])
	stop()
	if strings.Contains(stacks, "goja.(*run).startWatchdog") || strings.Contains(stacks, "goja.(*watchdog)") {
		t.Fatalf("a goroutine of the watchdog is running:\n%s", stacks)
	}
}
