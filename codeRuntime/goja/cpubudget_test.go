package goja

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// newBudgetRun is a run with only what enter needs: a VM, budget left and the budget's timer, in
// the calling goroutine's bubble.
func newBudgetRun(budget time.Duration) *run {
	r := &run{vm: goja.New(), cpuLeft: budget}
	r.cpuTimer = time.AfterFunc(time.Duration(math.MaxInt64), r.cpuCheck)
	return r
}

// TestCPUBudgetTimerSetOncePerRunOfEntries pins the busy-CPU budget's timer that stays set across
// entries into the VM (a program awaiting its calls one by one enters once per call): 1,000 short
// entries set it once (before, each entry set it and stopped it).
func TestCPUBudgetTimerSetOncePerRunOfEntries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBudgetRun(time.Second)
		defer r.cpuTimer.Stop()
		for range 1000 {
			if err := r.enter(func() error { return nil }); err != nil {
				t.Fatal(err)
			}
		}
		if r.cpuArms != 1 {
			t.Fatalf("the budget's timer was set %d times for 1000 entries, want once", r.cpuArms)
		}
	})
}

// TestCPUBudgetTimerCountsOnlyTimeInTheVM pins when the budget's timer interrupts: exactly when
// the time spent in the VM reaches the budget, never for time spent out of it. Under synctest the
// sleeps inside enter stand for the VM's work. The timer, set at the first entry, fires 50ms later
// while only 40ms were spent in the VM: it is set again for the 10ms left, and interrupts then. A
// timer firing while the run is out of the VM leaves it unset, and the next entry sets it.
func TestCPUBudgetTimerCountsOnlyTimeInTheVM(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newBudgetRun(50 * time.Millisecond)
		defer r.cpuTimer.Stop()
		busy := func(d time.Duration) func() error {
			return func() error { time.Sleep(d); return nil }
		}
		if err := r.enter(busy(30 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond) // out of the VM: a binding call
		if err := r.enter(func() error {
			time.Sleep(19 * time.Millisecond) // 49ms in the VM; the timer fired at 10ms in
			if r.interrupted.Load() {
				t.Fatal("interrupted after 49ms in the VM, under the 50ms budget")
			}
			time.Sleep(2 * time.Millisecond)
			if !r.interrupted.Load() {
				t.Fatal("not interrupted after 51ms in the VM, over the 50ms budget")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if r.cpuArms != 2 {
			t.Fatalf("the timer was set %d times, want 2 (at the first entry, then for the 10ms left)", r.cpuArms)
		}
		if err := r.enter(busy(0)); err != coderuntime.ErrCPUBudget {
			t.Fatalf("an entry after the budget was used: %v, want ErrCPUBudget", err)
		}

		// Fired while out of the VM: unset until the next entry, which sets it for what is left.
		r = newBudgetRun(50 * time.Millisecond)
		defer r.cpuTimer.Stop()
		if err := r.enter(busy(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		r.cpuMu.Lock()
		armed := r.cpuArmed
		r.cpuMu.Unlock()
		if armed || r.interrupted.Load() {
			t.Fatalf("out of the VM: armed %v, interrupted %v", armed, r.interrupted.Load())
		}
		if err := r.enter(func() error {
			time.Sleep(29 * time.Millisecond)
			if r.interrupted.Load() {
				t.Fatal("interrupted after 49ms in the VM")
			}
			time.Sleep(2 * time.Millisecond)
			if !r.interrupted.Load() {
				t.Fatal("not interrupted after 51ms in the VM")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if r.cpuArms != 2 {
			t.Fatalf("the timer was set %d times, want 2 (one per entry)", r.cpuArms)
		}
	})
}

// TestCPUBudgetStopsARunawayBetweenAwaits: an infinite program that enters the VM once per binding
// call, briefly each time, is still stopped by the busy-CPU budget (its timer, set once, is due
// before the budget runs out and set again for the rest until it does).
func TestCPUBudgetStopsARunawayBetweenAwaits(t *testing.T) {
	p := coderuntime.Program{Source: "for (;;) { await tools.nop({}); for (let i = 0; i < 1000; i++) {} }",
		Bindings: map[string]coderuntime.Binding{"nop": func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil }}}
	f := mustFail(t, runawayRuntime(t), p, coderuntime.KindTimeout)
	if !errors.Is(f, coderuntime.ErrCPUBudget) {
		t.Fatalf("cause = %v, want ErrCPUBudget (the wall clock is ample)", f.Cause)
	}
}
