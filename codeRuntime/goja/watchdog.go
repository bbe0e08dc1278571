package goja

import (
	"runtime/metrics"
	"sync/atomic"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// heapMetric is the metric the watchdog reads: bytes in live and not-yet-swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

var heapCeilingHit atomic.Int64 // for tests: how many runs the watchdog interrupted

// startWatchdog samples the process heap while the run is active and interrupts the VM when it is
// over the ceiling. The returned stop waits for the sampler to exit.
func (r *run) startWatchdog() (stop func()) {
	if r.cfg.MaxHeapBytes <= 0 {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	limit, vm, every := uint64(r.cfg.MaxHeapBytes), r.vm, r.cfg.HeapCheckInterval
	go func() {
		defer close(exited)
		sample := []metrics.Sample{{Name: heapMetric}}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				metrics.Read(sample)
				if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
					heapCeilingHit.Add(1)
					r.interrupted.Store(true)
					vm.Interrupt(coderuntime.ErrHeapLimit)
					return
				}
			}
		}
	}()
	return func() { close(quit); <-exited }
}
