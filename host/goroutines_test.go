package host_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// Plugin code (Apply, a disposer, a FiberStatus listener) runs with no host
// lock held, so it may hand lifecycle work to another goroutine and wait
// for it. Each case would deadlock under a lifecycle lock that only its
// holding goroutine may re-enter.

// onGoroutine runs f on a new goroutine and waits for it, as plugin code
// that hands lifecycle work to a worker does.
func onGoroutine(f func()) {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	<-done
}

func noopPing(context.Context, string) error { return nil }

func TestH11_PluginCodeMayWaitForAGoroutineThatChangesTheLifecycle(t *testing.T) {
	t.Run("Apply waits for a goroutine that loads a child plugin and a scope", func(t *testing.T) {
		h, _ := newHost(t)
		base := h.Stats()
		var child *host.Fiber
		var sc *host.Context
		var childErr, scopeErr error
		p := host.Define("parent", nil, func(c *host.Context) error {
			onGoroutine(func() {
				child, childErr = c.Plugin(host.Define("child", nil, func(c *host.Context) error {
					_, err := host.On(c, evPing, noopPing)
					return err
				}), nil)
				sc, scopeErr = c.Scope("agent")
			})
			return errors.Join(childErr, scopeErr)
		})
		var f *host.Fiber
		var err error
		within(t, "Plugin", func() { f, err = h.Root().Plugin(p, nil) })
		if err != nil || f.State() != host.Active || child.State() != host.Active {
			t.Fatalf("Plugin: %v; parent %v, child %v", err, f.State(), child.State())
		}
		if child.Parent() != f || sc.Fiber().Parent() != f {
			t.Fatal("the child and the scope are not owned by the loading fiber")
		}
		if err := f.Dispose(); err != nil {
			t.Fatal(err)
		}
		if child.State() != host.Disposed || sc.Fiber().State() != host.Disposed {
			t.Errorf("child %v, scope %v after disposing the parent", child.State(), sc.Fiber().State())
		}
		if got := h.Stats(); !reflect.DeepEqual(got, base) {
			t.Errorf("residue %+v, want %+v", got, base)
		}
	})

	t.Run("Apply waits for a goroutine that replaces a service the plugin injects", func(t *testing.T) {
		h, _ := newHost(t)
		rec := statuses(t, h, "user")
		must[host.Disposer](t)(svcDB.Provide(h.Root(), 1))
		var seen []int
		var provErr, lateErr error
		p := host.Define("user", []host.ServiceKey{svcDB}, func(c *host.Context) error {
			v, err := svcDB.Get(c)
			if err != nil {
				return err
			}
			seen = append(seen, v)
			if v == 1 {
				onGoroutine(func() { _, provErr = svcDB.Provide(h.Root(), 2) })
				// The replacement made this run stale; the restart
				// follows when Apply returns.
				_, lateErr = host.On(c, evPing, noopPing)
			}
			return nil
		})
		var f *host.Fiber
		var err error
		within(t, "Plugin", func() { f, err = h.Root().Plugin(p, nil) })
		if err != nil || provErr != nil {
			t.Fatal(err, provErr)
		}
		if !slices.Equal(seen, []int{1, 2}) || f.State() != host.Active {
			t.Errorf("seen %v, state %v; want [1 2], active", seen, f.State())
		}
		if !errors.Is(lateErr, host.ErrFiberClosed) {
			t.Errorf("registering through the stale run's context: %v, want ErrFiberClosed", lateErr)
		}
		if want := []string{"loading", "unloading", "loading", "active"}; !slices.Equal(rec.list(), want) {
			t.Errorf("states %v, want %v", rec.list(), want)
		}
		if n := h.ListenerCount("test/ping"); n != 0 {
			t.Errorf("%d listeners of the stale run remain", n)
		}
	})

	t.Run("Apply waits for a goroutine that updates the plugin's own fiber", func(t *testing.T) {
		h, _ := newHost(t)
		var runs []int
		var updErr error
		p := host.Define("updated", nil, func(c *host.Context) error {
			v, _ := host.ConfigAs[int](c)
			runs = append(runs, v)
			if v == 1 {
				onGoroutine(func() { updErr = c.Fiber().Update(2) })
			}
			return nil
		})
		var f *host.Fiber
		var err error
		within(t, "Plugin", func() { f, err = h.Root().Plugin(p, 1) })
		if err != nil {
			t.Fatal(err)
		}
		if updErr != nil {
			t.Fatalf("Update from the goroutine: %v", updErr)
		}
		if !slices.Equal(runs, []int{1, 2}) || f.State() != host.Active || f.Context().Config() != 2 {
			t.Errorf("runs %v, state %v, config %v; want [1 2], active, 2", runs, f.State(), f.Context().Config())
		}
	})

	t.Run("Apply waits for a goroutine that disposes the plugin's own fiber", func(t *testing.T) {
		h, _ := newHost(t)
		base := h.Stats()
		var dispErr, lateErr error
		p := host.Define("doomed", nil, func(c *host.Context) error {
			if _, err := host.On(c, evPing, noopPing); err != nil {
				return err
			}
			onGoroutine(func() { dispErr = c.Fiber().Dispose() })
			_, lateErr = host.On(c, evPing, noopPing)
			return lateErr
		})
		var f *host.Fiber
		within(t, "Plugin", func() { f, _ = h.Root().Plugin(p, nil) })
		if dispErr != nil {
			t.Fatal(dispErr)
		}
		if f == nil || f.State() != host.Disposed {
			t.Fatalf("fiber %v, want disposed", f)
		}
		if !errors.Is(lateErr, host.ErrFiberClosed) {
			t.Errorf("registering after the disposal: %v, want ErrFiberClosed", lateErr)
		}
		if got := h.Stats(); !reflect.DeepEqual(got, base) {
			t.Errorf("residue %+v, want %+v", got, base)
		}
	})

	t.Run("a disposer waits for a goroutine that disposes another fiber and loads a plugin", func(t *testing.T) {
		h, _ := newHost(t)
		other := must[*host.Fiber](t)(h.Root().Plugin(host.Define("other", nil, func(*host.Context) error { return nil }), nil))
		var later *host.Fiber
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p", nil, func(c *host.Context) error {
			_, err := c.Track(host.EffectCustom, "waits", func() error {
				var err error
				onGoroutine(func() {
					if err = other.Dispose(); err != nil {
						return
					}
					later, err = h.Root().Plugin(host.Define("later", nil, func(*host.Context) error { return nil }), nil)
				})
				return err
			})
			return err
		}), nil))
		within(t, "Dispose", func() {
			if err := f.Dispose(); err != nil {
				t.Error(err)
			}
		})
		if other.State() != host.Disposed || later.State() != host.Active {
			t.Errorf("other %v, later %v; want disposed, active", other.State(), later.State())
		}
	})

	t.Run("a FiberStatus listener waits for a goroutine that loads a plugin", func(t *testing.T) {
		h, _ := newHost(t)
		var y *host.Fiber
		must[host.Disposer](t)(host.On(h.Root(), host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
			if s.Fiber.Name() != "x" || s.To != host.Active {
				return nil
			}
			var err error
			onGoroutine(func() {
				y, err = h.Root().Plugin(host.Define("y", nil, func(*host.Context) error { return nil }), nil)
			})
			return err
		}))
		var x *host.Fiber
		var err error
		within(t, "Plugin", func() {
			x, err = h.Root().Plugin(host.Define("x", nil, func(*host.Context) error { return nil }), nil)
		})
		if err != nil {
			t.Fatal(err)
		}
		if x.State() != host.Active || y == nil || y.State() != host.Active {
			t.Errorf("x %v, y %v", x.State(), y)
		}
	})
}

// A Dispose made while the fiber's disposal is under way on another
// goroutine returns nil at once; Wait waits for the disposal to finish.
func TestH3_DisposeDuringAnotherGoroutinesDisposalReturnsAtOnce(t *testing.T) {
	h, _ := newHost(t)
	entered, release := make(chan struct{}), make(chan struct{})
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("slow", nil, func(c *host.Context) error {
		_, err := c.Track(host.EffectCustom, "slow", func() error {
			close(entered)
			<-release
			return nil
		})
		return err
	}), nil))
	first := make(chan error, 1)
	go func() { first <- f.Dispose() }()
	<-entered
	within(t, "second Dispose", func() {
		if err := f.Dispose(); err != nil {
			t.Errorf("second Dispose: %v", err)
		}
	})
	if st := f.State(); st != host.Unloading {
		t.Errorf("state %v while the first disposal runs, want unloading", st)
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(context.Background()); !errors.Is(err, host.ErrFiberClosed) {
		t.Errorf("Wait after disposal: %v, want ErrFiberClosed", err)
	}
}

// Lifecycle calls from many goroutines at once (loads, provider
// replacements, updates, scopes, disposals) keep the host consistent: run
// under -race, and nothing remains once every fiber is disposed.
func TestH1_ConcurrentLifecycleLeavesNoResidue(t *testing.T) {
	h, _ := newHost(t)
	base := h.Stats()
	const workers, rounds = 4, 25
	user := func(name string) host.Plugin {
		return host.Define(name, []host.ServiceKey{svcDB}, func(c *host.Context) error {
			if _, err := svcDB.Get(c); err != nil {
				return err
			}
			if _, err := host.On(c, evPing, noopPing); err != nil {
				return err
			}
			sc, err := c.Scope("agent")
			if err != nil {
				return err
			}
			_, err = host.On(sc, evFiltered, noopPing)
			return err
		})
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				prov, err := h.Root().Plugin(provider(w*rounds+r), nil)
				if err != nil {
					errs <- err
					return
				}
				u, err := h.Root().Plugin(user(fmt.Sprintf("user-%d", w)), nil)
				if err != nil && !errors.Is(err, host.ErrFiberClosed) && !errors.Is(err, host.ErrNoService) {
					errs <- err
				}
				if u != nil {
					_ = u.Update(r)
					_ = host.Emit(context.Background(), h.Emitter("agent"), evFiltered, "")
					if err := u.Dispose(); err != nil {
						errs <- err
					}
				}
				if err := prov.Dispose(); err != nil {
					errs <- err
				}
			}
		})
	}
	within(t, "workers", wg.Wait)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := h.Stats(); !reflect.DeepEqual(got, base) {
		t.Errorf("residue %+v, want %+v", got, base)
	}
	if e := h.Root().Fiber().Effects(); len(e) != 0 {
		t.Errorf("root still owns %+v", e)
	}
}

// One goroutine at a time starts a fiber: Updates and provider
// replacements from many goroutines at once never run two Applys of one
// fiber together, and once they are done the fiber is active with exactly
// one run's registrations.
func TestH5_ConcurrentRestartsNeverOverlapApply(t *testing.T) {
	h, _ := newHost(t)
	must[host.Disposer](t)(svcDB.Provide(h.Root(), 0))
	var running, overlaps atomic.Int32
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("busy", []host.ServiceKey{svcDB}, func(c *host.Context) error {
		if running.Add(1) > 1 {
			overlaps.Add(1)
		}
		defer running.Add(-1)
		_, err := host.On(c, evPing, noopPing)
		return err
	}), 0))
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for r := range 20 {
				if w%2 == 0 {
					if err := f.Update(r); err != nil {
						t.Error(err)
					}
					continue
				}
				off, err := svcDB.Provide(h.Root(), r)
				if err != nil {
					t.Error(err)
					continue
				}
				if err := off(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	within(t, "workers", wg.Wait)
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d Applys of one fiber overlapped", n)
	}
	if f.State() != host.Active || h.ListenerCount("test/ping") != 1 {
		t.Errorf("state %v with %d listeners, want active with 1", f.State(), h.ListenerCount("test/ping"))
	}
}
