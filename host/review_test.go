package host_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// within runs f on its own goroutine and ends the test binary, with every
// goroutine's stack, when f does not return in time: a deadlock. (A
// failure on the test's goroutine would hang too, in the host's cleanup,
// waiting for what the deadlocked goroutines hold.)
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		go panic(t.Name() + ": " + what + ": deadlocked") // not recoverable: ends the binary
		select {}
	}
}

// A FiberStatus listener that disposes a fiber when it sees it unloading
// must not deadlock when that unloading is the fiber's own disposal.
func TestH3_DisposeFromStatusListenerDuringDisposalDoesNotDeadlock(t *testing.T) {
	h, _ := newHost(t)
	p := must[*host.Fiber](t)(h.Root().Plugin(host.Define("victim", nil, func(c *host.Context) error {
		_, err := host.On(c, evPing, func(context.Context, string) error { return nil })
		return err
	}), nil))
	must[host.Disposer](t)(host.On(h.Root(), host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
		if s.Fiber == p && s.To == host.Unloading {
			return s.Fiber.Dispose()
		}
		return nil
	}))
	within(t, "Dispose", func() { _ = p.Dispose() })
	if st := p.State(); st != host.Disposed {
		t.Fatalf("state %v, want disposed", st)
	}
	if n := h.ListenerCount("test/ping"); n != 0 {
		t.Fatalf("%d ping listeners left", n)
	}
}

// A cleanup that disposes its own fiber (or an ancestor being disposed)
// must not deadlock.
func TestH3_CleanupDisposingOwnFiberDoesNotDeadlock(t *testing.T) {
	h, _ := newHost(t)
	parent := must[*host.Fiber](t)(h.Root().Plugin(host.Define("parent", nil, func(c *host.Context) error {
		_, err := c.Plugin(host.Define("child", nil, func(cc *host.Context) error {
			_, err := cc.Track(host.EffectCustom, "self-dispose", func() error { return cc.Fiber().Dispose() })
			return err
		}), nil)
		return err
	}), nil))
	within(t, "Dispose", func() { _ = parent.Dispose() })
	if st := parent.State(); st != host.Disposed {
		t.Fatalf("state %v, want disposed", st)
	}
	if got := h.Stats().Fibers; got != 1 {
		t.Fatalf("%d fibers left, want 1 (root)", got)
	}
}

// A fiber disposed while it unloads for a restart (here by a FiberStatus
// listener) stays disposed: the restart must not apply the plugin again on
// a disposed fiber, whose registrations would then leak.
func TestH5_DisposeDuringRestartStaysDisposed(t *testing.T) {
	h, _ := newHost(t)
	applies := 0
	p := must[*host.Fiber](t)(h.Root().Plugin(host.Define("restarted", nil, func(c *host.Context) error {
		applies++
		_, err := host.On(c, evPing, func(context.Context, string) error { return nil })
		return err
	}), 1))
	must[host.Disposer](t)(host.On(h.Root(), host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
		if s.Fiber == p && s.To == host.Unloading {
			return s.Fiber.Dispose()
		}
		return nil
	}))
	within(t, "Update", func() { _ = p.Update(2) })
	if st := p.State(); st != host.Disposed {
		t.Fatalf("state %v, want disposed", st)
	}
	if applies != 1 {
		t.Errorf("Apply ran %d times, want 1 (no start after disposal)", applies)
	}
	if n := h.ListenerCount("test/ping"); n != 0 {
		t.Errorf("%d ping listeners leaked on the disposed fiber", n)
	}
	if got := p.Effects(); len(got) != 0 {
		t.Errorf("disposed fiber owns %v", got)
	}
}

// A failed start is rolled back, and the context of that failed run is
// stale: a registration through it afterwards (a goroutine Apply started,
// say) is refused, as for any stopped run, instead of landing on the
// failed fiber unrolled-back.
func TestH5_FailedRunContextRefusesRegistrations(t *testing.T) {
	h, _ := newHost(t)
	var kept *host.Context
	boom := errors.New("boom")
	f := loaded(t, boom)(h.Root().Plugin(host.Define("fails", nil, func(c *host.Context) error {
		kept = c
		return boom
	}), nil))
	if st := f.State(); st != host.Failed {
		t.Fatalf("state %v, want failed", st)
	}
	_, err := host.On(kept, evPing, func(context.Context, string) error { return nil })
	if !errors.Is(err, host.ErrFiberClosed) {
		t.Fatalf("registering through a failed run's context: err %v, want ErrFiberClosed", err)
	}
	if n := h.ListenerCount("test/ping"); n != 0 {
		t.Errorf("%d listeners on a failed fiber", n)
	}
}

// Under the Contain policy a listener that delegated gets what its next
// returned. When next never returned because the rest of the chain (here
// the dispatcher's base) panicked, that must not turn into a silent
// zero-value success.
func TestH13_WaterfallContainBasePanicIsNotASilentSuccess(t *testing.T) {
	h, _ := newHost(t)
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfallContain, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
		return next(ctx)
	}))
	var got string
	var err error
	func() {
		defer func() { _ = recover() }() // a panic reaching the caller is acceptable too
		got, err = host.Waterfall(context.Background(), h.Root().Emitter(), evWaterfallContain, "", func(context.Context) (string, error) {
			panic("base exploded")
		})
	}()
	if err == nil && got == "" {
		t.Fatalf("base panic became a zero result with a nil error")
	}
	var pe *events.PanicError
	if err != nil && !errors.As(err, &pe) {
		t.Errorf("err %v, want a *events.PanicError", err)
	}
}

// Update of a fiber that failed earlier and is now pending (its service
// went away) reports no failure: the new configuration has not run yet,
// and the old run's error is not the update's.
func TestH5_UpdateWhilePendingDoesNotReturnStaleError(t *testing.T) {
	h, _ := newHost(t)
	off := must[host.Disposer](t)(h.Root().Provide("svc", 1))
	bad := errors.New("bad config")
	f := loaded(t, bad)(h.Root().Plugin(host.Define("dep", []string{"svc"}, func(c *host.Context) error {
		if c.Config() == "bad" {
			return bad
		}
		return nil
	}), "bad"))
	if f.State() != host.Failed {
		t.Fatalf("state %v, want failed", f.State())
	}
	if err := off(); err != nil {
		t.Fatal(err)
	}
	if f.State() != host.Pending {
		t.Fatalf("state %v, want pending", f.State())
	}
	if err := f.Update("good"); err != nil {
		t.Errorf("Update while pending: %v, want nil", err)
	}
	must[host.Disposer](t)(h.Root().Provide("svc", 2))
	if f.State() != host.Active || f.Err() != nil {
		t.Errorf("after provide: %v %v", f.State(), f.Err())
	}
}

// A fiber disposed by a FiberStatus listener when it turns Loading is not
// applied: its Apply would only meet refusals on a disposed fiber.
func TestH5_DisposedOnLoadingIsNotApplied(t *testing.T) {
	h, _ := newHost(t)
	must[host.Disposer](t)(host.On(h.Root(), host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
		if s.Fiber.Name() == "doomed" && s.To == host.Loading {
			return s.Fiber.Dispose()
		}
		return nil
	}))
	applied := false
	f := loaded(t, host.ErrFiberClosed)(h.Root().Plugin(host.Define("doomed", nil, func(c *host.Context) error {
		applied = true
		return nil
	}), nil))
	if applied {
		t.Error("Apply ran on a disposed fiber")
	}
	if st := f.State(); st != host.Disposed {
		t.Errorf("state %v, want disposed", st)
	}
}
