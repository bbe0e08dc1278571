package host_test

// Lifecycle calls made from inside a lifecycle step on the same goroutine:
// a disposer or FiberStatus listener that disposes the fiber being
// disposed, restarted or started.

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/host"
)

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
