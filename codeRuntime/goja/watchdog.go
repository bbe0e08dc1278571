package goja

import (
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// The metrics the watchdog reads.
const (
	// heapMetric: bytes in live and not-yet-swept heap objects, garbage included. Cheap to read,
	// and never below the live heap, so a sample at or under the ceiling needs nothing more.
	heapMetric = "/memory/classes/heap/objects:bytes"
	// liveHeapMetric: the bytes the last completed collection marked live (garbage excluded).
	liveHeapMetric = "/gc/heap/live:bytes"
)

var (
	heapCeilingHit       atomic.Int64 // for tests: how many runs the watchdog interrupted
	heapCeilingCollected atomic.Int64 // for tests: how many over-ceiling samples a collection cleared
)

// startWatchdog samples the process heap while the run is active and interrupts the VM when it is
// over the ceiling. A sample over the ceiling may be garbage the collector has not reached yet (the
// collector lets the heap grow to about twice the live heap before it runs), so the watchdog then
// runs a collection and judges by the live heap it marked: a program whose live data stays under
// the ceiling is not stopped for the garbage it made, and one whose live data is over it is. Each
// sample is a timer's function that arms the next one only when it is done, so the watchdog forces
// at most one collection per HeapCheckInterval; no goroutine waits between samples, so starting and
// stopping it hands nothing to another goroutine. The returned stop waits for a sample in progress
// and disarms the next.
func (r *run) startWatchdog() (stop func()) {
	if r.cfg.MaxHeapBytes <= 0 {
		return func() {}
	}
	w := &watchdog{limit: uint64(r.cfg.MaxHeapBytes), every: r.cfg.HeapCheckInterval, r: r}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.t = time.AfterFunc(w.every, w.sample)
	return w.stop
}

// watchdog is the state of a run's heap sampler (see startWatchdog).
type watchdog struct {
	limit uint64
	every time.Duration
	r     *run

	mu      sync.Mutex // held by a sample in progress
	t       *time.Timer
	stopped bool
}

// sample checks the heap once, and interrupts the run or arms the next sample.
func (w *watchdog) sample() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		return
	}
	if !overHeapCeiling(w.limit) {
		w.t.Reset(w.every)
		return
	}
	heapCeilingHit.Add(1)
	w.r.interrupted.Store(true)
	w.r.vm.Interrupt(coderuntime.ErrHeapLimit)
}

// stop waits for a sample in progress and disarms the next.
func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	w.t.Stop()
}

// overHeapCeiling reports whether the process's live heap is over limit bytes: the heap objects
// when they are at or under it (garbage included, so the live heap is too), else the live heap a
// collection run now marks.
func overHeapCeiling(limit uint64) bool {
	if objects, ok := readMetric(heapMetric); ok && objects <= limit {
		return false
	}
	runtime.GC()
	if live, ok := readMetric(liveHeapMetric); ok && live <= limit {
		heapCeilingCollected.Add(1)
		return false
	}
	return true
}

// readMetric reads a uint64 runtime metric; ok is false when this Go does not have it (both above
// exist since Go 1.21), which overHeapCeiling takes as over the ceiling: it never fails open.
func readMetric(name string) (v uint64, ok bool) {
	s := []metrics.Sample{{Name: name}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0, false
	}
	return s[0].Value.Uint64(), true
}
