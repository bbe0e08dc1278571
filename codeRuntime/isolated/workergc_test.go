package isolated

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestWorkerGCTunerAfterGC: after a collection that found less than workerGCSmallHeap live, GOGC
// stays and the tuner keeps watching; from workerGCSmallHeap on, GOGC goes back to 100 and the
// watch ends.
func TestWorkerGCTunerAfterGC(t *testing.T) {
	for _, c := range []struct {
		live  uint64
		again bool
		sets  []int
	}{
		{0, true, nil},
		{workerGCSmallHeap - 1, true, nil},
		{workerGCSmallHeap, false, []int{100}},
		{1 << 40, false, []int{100}},
	} {
		var sets []int
		tu := gcTuner{set: func(p int) int { sets = append(sets, p); return 0 }, live: func() uint64 { return c.live }}
		if again := tu.afterGC(); again != c.again || !slices.Equal(sets, c.sets) {
			t.Errorf("live %d: again %v, GOGC set to %v; want %v, %v", c.live, again, sets, c.again, c.sets)
		}
	}
}

// TestWorkerGCTunerWatchesCollections: tuneWorkerGC sets GOGC to workerGCPercent at once, then
// looks at the live heap after collections (again after each one while it is small), and goes
// back to 100 once a collection found workerGCSmallHeap live; it then stops watching.
func TestWorkerGCTunerWatchesCollections(t *testing.T) {
	var mu sync.Mutex
	var sets []int
	looks := 0
	tu := gcTuner{
		set: func(p int) int { mu.Lock(); defer mu.Unlock(); sets = append(sets, p); return 0 },
		live: func() uint64 {
			mu.Lock()
			defer mu.Unlock()
			looks++
			if looks < 3 {
				return 1 << 20
			}
			return workerGCSmallHeap
		},
	}
	tuneWorkerGC(tu)
	mu.Lock()
	if !slices.Equal(sets, []int{workerGCPercent}) {
		t.Fatalf("GOGC set to %v before any collection, want [%d]", sets, workerGCPercent)
	}
	mu.Unlock()
	// The watch runs on the finalizer goroutine after a collection: collect until it went back to
	// 100 (the test's deadline bounds the wait).
	for {
		runtime.GC()
		runtime.Gosched()
		mu.Lock()
		done := len(sets) == 2
		mu.Unlock()
		if done {
			break
		}
	}
	for range 5 {
		runtime.GC()
		runtime.Gosched()
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(sets, []int{workerGCPercent, 100}) || looks != 3 {
		t.Fatalf("GOGC set to %v after %d looks at the live heap, want [%d 100] after 3", sets, looks, workerGCPercent)
	}
}

// TestLiveHeap: the live heap the runtime reports after a collection holds what the test keeps
// alive.
func TestLiveHeap(t *testing.T) {
	keep := make([]byte, 8<<20)
	runtime.GC()
	if n := liveHeap(); n < 8<<20 || n == math.MaxUint64 {
		t.Fatalf("live heap %d bytes with 8 MiB kept", n)
	}
	runtime.KeepAlive(keep)
}

// TestWorkerGCSettlesHeap: a worker whose GOGC is tuned collects once before it reports ready
// (settleWorkerHeap); one left at the default GOGC does not.
func TestWorkerGCSettlesHeap(t *testing.T) {
	for _, tuned := range []bool{true, false} {
		n := 0
		settleWorkerHeap(tuned, func() { n++ })
		if want := map[bool]int{true: 1, false: 0}[tuned]; n != want {
			t.Errorf("tuned %v: %d collections, want %d", tuned, n, want)
		}
	}
}
