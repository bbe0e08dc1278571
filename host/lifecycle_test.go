package host_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
)

func TestH1_PluginFiberOwnedByCaller(t *testing.T) {
	h, _ := newHost(t)
	base := h.Stats()
	var child, grandchild *host.Fiber
	parent := must[*host.Fiber](t)(h.Root().Plugin(host.Define("parent", nil, func(c *host.Context) error {
		var err error
		child, err = c.Plugin(host.Define("child", nil, func(c *host.Context) error {
			var err error
			grandchild, err = c.Plugin(host.Define("grandchild", nil, func(c *host.Context) error {
				_, err := host.On(c, evPing, func(context.Context, string) error { return nil })
				return err
			}), nil)
			return err
		}), nil)
		return err
	}), nil))
	if child.Parent() != parent || grandchild.Parent() != child || parent.Parent() != h.Root().Fiber() {
		t.Fatal("fibers are not owned by the calling fiber")
	}
	if got := h.Stats().Fibers; got != base.Fibers+3 {
		t.Fatalf("fibers = %d, want %d", got, base.Fibers+3)
	}
	if err := parent.Dispose(); err != nil {
		t.Fatal(err)
	}
	for _, f := range []*host.Fiber{parent, child, grandchild} {
		if f.State() != host.Disposed {
			t.Errorf("%s: state %v, want disposed", f.Name(), f.State())
		}
	}
	if got := h.Stats(); !reflect.DeepEqual(got, base) {
		t.Errorf("stats after dispose = %+v, want %+v", got, base)
	}
	if e := h.Root().Fiber().Effects(); len(e) != 0 {
		t.Errorf("root effects = %+v", e)
	}
}

func TestH2_DisposeLIFOAttemptsAllJoinsErrors(t *testing.T) {
	errA, errB := errors.New("a failed"), errors.New("b failed")
	tests := []struct {
		name    string
		fail    map[string]error // effect name -> error
		panics  string
		wantErr []error
	}{
		{name: "all succeed"},
		{name: "one fails", fail: map[string]error{"e2": errA}, wantErr: []error{errA}},
		{name: "two fail", fail: map[string]error{"e1": errA, "e3": errB}, wantErr: []error{errA, errB}},
		{name: "one panics", panics: "e2", fail: map[string]error{"e3": errB}, wantErr: []error{errA, errB}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHost(t)
			var order []string
			f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p2", nil, func(c *host.Context) error {
				for _, n := range []string{"e1", "e2", "e3"} {
					if _, err := c.Track(host.EffectCustom, n, func() error {
						order = append(order, n)
						if n == tt.panics {
							panic(errA)
						}
						return tt.fail[n]
					}); err != nil {
						return err
					}
				}
				// a child plugin whose own disposer fails: its error joins the parent's
				_, err := c.Plugin(host.Define("p2-child", nil, func(c *host.Context) error {
					_, err := c.Track(host.EffectCustom, "c1", func() error {
						order = append(order, "c1")
						return tt.fail["c1"]
					})
					return err
				}), nil)
				return err
			}), nil))
			err := f.Dispose()
			if want := []string{"c1", "e3", "e2", "e1"}; !slices.Equal(order, want) {
				t.Errorf("order = %v, want %v", order, want)
			}
			for _, w := range tt.wantErr {
				if !errors.Is(err, w) {
					t.Errorf("Dispose() = %v, want it to wrap %v", err, w)
				}
			}
			if len(tt.wantErr) == 0 && err != nil {
				t.Errorf("Dispose() = %v, want nil", err)
			}
			if len(tt.wantErr) > 0 && !strings.Contains(logs.String(), `"plugin":"p2"`) {
				t.Errorf("disposal errors not logged with the plugin name: %s", logs)
			}
		})
	}
	t.Run("nested child errors joined", func(t *testing.T) {
		h, logs := newHost(t)
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("outer", nil, func(c *host.Context) error {
			_, err := c.Plugin(host.Define("inner", nil, func(c *host.Context) error {
				_, err := c.Track(host.EffectCustom, "x", func() error { return errA })
				return err
			}), nil)
			if err != nil {
				return err
			}
			_, err = c.Track(host.EffectCustom, "y", func() error { return errB })
			return err
		}), nil))
		err := f.Dispose()
		if !errors.Is(err, errA) || !errors.Is(err, errB) {
			t.Fatalf("Dispose() = %v, want both errors", err)
		}
		if !strings.Contains(logs.String(), `"plugin":"inner"`) || !strings.Contains(logs.String(), `"plugin":"outer"`) {
			t.Errorf("logs = %s", logs)
		}
	})
}

func TestH3_DisposerIdempotent(t *testing.T) {
	h, _ := newHost(t)
	boom := errors.New("boom")
	calls := 0
	var d host.Disposer
	var off host.Disposer
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p3", nil, func(c *host.Context) error {
		var err error
		d, err = c.Track(host.EffectCustom, "x", func() error { calls++; return boom })
		if err != nil {
			return err
		}
		off, err = host.On(c, evPing, func(context.Context, string) error { return nil })
		return err
	}), nil))
	tests := []struct {
		name    string
		call    func() error
		wantErr error
	}{
		{"first call reports", d, boom},
		{"second call is silent", d, nil},
		{"listener off", off, nil},
		{"listener off again", off, nil},
		{"fiber dispose after", f.Dispose, nil},
		{"fiber dispose again", f.Dispose, nil},
		{"disposer after fiber disposed", d, nil},
		{"listener off after fiber disposed", off, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
		})
	}
	if calls != 1 {
		t.Errorf("teardown ran %d times, want 1", calls)
	}
	if n := h.ListenerCount(evPing.Descriptor().Name); n != 0 {
		t.Errorf("listeners = %d", n)
	}
}

func TestH4_DisposedFiberRefusesRegistrations(t *testing.T) {
	h, _ := newHost(t)
	var ctx *host.Context
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p4", nil, func(c *host.Context) error {
		ctx = c
		return nil
	}), nil))
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	noop := host.Define("noop", nil, func(*host.Context) error { return nil })
	regs := map[string]func() error{
		"On": func() error {
			_, err := host.On(ctx, evPing, func(context.Context, string) error { return nil })
			return err
		},
		"OnQuery": func() error {
			_, err := host.OnQuery(ctx, evBail, func(context.Context, string) (string, bool, error) { return "", false, nil })
			return err
		},
		"Provide":  func() error { _, err := svcSvc.Provide(ctx, 1); return err },
		"Plugin":   func() error { _, err := ctx.Plugin(noop, nil); return err },
		"Scope":    func() error { _, err := ctx.Scope("a"); return err },
		"Track":    func() error { _, err := ctx.Track(host.EffectCustom, "x", func() error { return nil }); return err },
		"Effect":   func() error { _, err := ctx.Effect("x", func() (func() error, error) { return nil, nil }); return err },
		"Isolated": func() error { _, err := svcSvc.Provide(ctx.Isolate(svcSvc), 1); return err },
	}
	for name, reg := range regs {
		t.Run("disposed/"+name, func(t *testing.T) {
			err := reg()
			if !errors.Is(err, host.ErrFiberClosed) {
				t.Fatalf("got %v, want ErrFiberClosed", err)
			}
			if !strings.Contains(err.Error(), "p4") {
				t.Errorf("error %q does not name the fiber", err)
			}
		})
	}
	t.Run("while unloading", func(t *testing.T) {
		base := h.Stats()
		var lateErr error
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p4u", nil, func(c *host.Context) error {
			_, err := c.Track(host.EffectCustom, "registers-late", func() error {
				if c.Fiber().State() != host.Unloading {
					return fmt.Errorf("state %v, want unloading", c.Fiber().State())
				}
				_, lateErr = host.On(c, evPing, func(context.Context, string) error { return nil })
				return nil
			})
			return err
		}), nil))
		if err := f.Dispose(); err != nil {
			t.Fatal(err)
		}
		if !errors.Is(lateErr, host.ErrFiberClosed) {
			t.Fatalf("registration while unloading = %v, want ErrFiberClosed", lateErr)
		}
		if got := h.Stats(); !reflect.DeepEqual(got, base) {
			t.Errorf("leaked: %+v, want %+v", got, base)
		}
	})
	t.Run("stale context after restart", func(t *testing.T) {
		var first *host.Context
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p4r", nil, func(c *host.Context) error {
			if first == nil {
				first = c
			}
			return nil
		}), 1))
		if err := f.Update(2); err != nil {
			t.Fatal(err)
		}
		if _, err := host.On(first, evPing, func(context.Context, string) error { return nil }); !errors.Is(err, host.ErrFiberClosed) {
			t.Fatalf("stale context registration = %v", err)
		}
	})
}

func TestH5_FiberStates(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name    string
		apply   func(c *host.Context) error
		inject  []host.ServiceKey
		want    []string
		wantErr error
		loadErr error // what Plugin's error matches
	}{
		{name: "active", apply: func(*host.Context) error { return nil }, want: []string{"loading", "active"}},
		{name: "failed by error", apply: func(c *host.Context) error {
			if _, err := host.On(c, evPing, func(context.Context, string) error { return nil }); err != nil {
				return err
			}
			return boom
		}, want: []string{"loading", "failed"}, wantErr: boom, loadErr: boom},
		{name: "failed by panic", apply: func(*host.Context) error { panic(boom) }, want: []string{"loading", "failed"}, wantErr: boom, loadErr: boom},
		{name: "pending", inject: []host.ServiceKey{svcAbsent}, apply: func(*host.Context) error { return nil }, want: []string{"pending"}, loadErr: host.ErrPending},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newHost(t)
			rec := statuses(t, h, "p5")
			sib := must[*host.Fiber](t)(h.Root().Plugin(host.Define("sibling", nil, func(c *host.Context) error {
				_, err := host.On(c, evPing, func(context.Context, string) error { return nil })
				return err
			}), nil))
			base := h.Stats()
			f := loaded(t, tt.loadErr)(h.Root().Plugin(host.Define("p5", tt.inject, tt.apply), nil))
			if got := rec.list(); !slices.Equal(got, tt.want) {
				t.Errorf("states = %v, want %v", got, tt.want)
			}
			if !errors.Is(f.Err(), tt.wantErr) || (tt.wantErr == nil && f.Err() != nil) {
				t.Errorf("Err() = %v, want %v", f.Err(), tt.wantErr)
			}
			if tt.wantErr != nil {
				// rolled back: nothing but the fiber itself remains
				got := h.Stats()
				if got.Fibers != base.Fibers+1 || !reflect.DeepEqual(got.Listeners, base.Listeners) {
					t.Errorf("not rolled back: %+v vs %+v", got, base)
				}
				if len(f.Effects()) != 0 {
					t.Errorf("failed fiber effects = %+v", f.Effects())
				}
			}
			if sib.State() != host.Active {
				t.Errorf("sibling state %v", sib.State())
			}
			if err := f.Dispose(); err != nil {
				t.Fatal(err)
			}
			want := append(slices.Clone(tt.want), "unloading", "disposed")
			if got := rec.list(); !slices.Equal(got, want) {
				t.Errorf("states = %v, want %v", got, want)
			}
		})
	}

	t.Run("failed error cleared after successful restart", func(t *testing.T) {
		h, _ := newHost(t)
		rec := statuses(t, h, "p5")
		f := loaded(t, boom)(h.Root().Plugin(host.Define("p5", nil, func(c *host.Context) error {
			if v, _ := host.ConfigAs[bool](c); v {
				return boom
			}
			return nil
		}), true))
		if !errors.Is(f.Err(), boom) || f.State() != host.Failed {
			t.Fatalf("want failed, got %v %v", f.State(), f.Err())
		}
		if err := f.Update(false); err != nil {
			t.Fatalf("Update = %v", err)
		}
		if f.Err() != nil || f.State() != host.Active {
			t.Fatalf("after restart: %v %v", f.State(), f.Err())
		}
		if err := f.Wait(context.Background()); err != nil {
			t.Fatal(err)
		}
		want := []string{"loading", "failed", "unloading", "loading", "active"}
		if got := rec.list(); !slices.Equal(got, want) {
			t.Errorf("states = %v, want %v", got, want)
		}
	})

	t.Run("update during loading is not lost (generation counter)", func(t *testing.T) {
		h, _ := newHost(t)
		var runs []int
		var lateErr error
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("p5", nil, func(c *host.Context) error {
			cfg, _ := host.ConfigAs[int](c)
			runs = append(runs, cfg)
			if len(runs) == 1 {
				// Update to the same config while loading: it must
				// still restart.
				if err := c.Fiber().Update(cfg); err != nil {
					return err
				}
				_, lateErr = host.On(c, evPing, func(context.Context, string) error { return nil })
				return lateErr
			}
			_, err := host.On(c, evPing, func(context.Context, string) error { return nil })
			return err
		}), 7))
		if !slices.Equal(runs, []int{7, 7}) {
			t.Errorf("runs = %v, want [7 7]", runs)
		}
		if f.State() != host.Active || f.Err() != nil {
			t.Errorf("state %v err %v", f.State(), f.Err())
		}
		if !errors.Is(lateErr, host.ErrFiberClosed) {
			t.Errorf("first run's context after the update: %v", lateErr)
		}
		if n := h.ListenerCount("test/ping"); n != 1 {
			t.Errorf("listeners = %d, want 1", n)
		}
	})

	t.Run("update of a non-plugin fiber fails", func(t *testing.T) {
		h, _ := newHost(t)
		if err := h.Root().Fiber().Update(1); err == nil {
			t.Fatal("root Update succeeded")
		}
		if h.Root().Fiber().State() != host.Active {
			t.Fatal("root not active")
		}
	})
}

// Plugin's error says how the start ended, so a caller does not inspect
// the fiber's state: nil for Active, ErrPending (a *PendingError naming
// the missing services) for Pending, the wrapped failure for Failed. The
// fiber comes back with the error, so it can be kept or disposed.
func TestH5_PluginErrorReportsPendingAndFailure(t *testing.T) {
	t.Run("pending names the missing services", func(t *testing.T) {
		h, _ := newHost(t)
		must[host.Disposer](t)(svcB.Provide(h.Root(), 1))
		f, err := h.Root().Plugin(host.Define("needy", []host.ServiceKey{svcA, svcB, svcC}, func(*host.Context) error { return nil }), nil)
		var pe *host.PendingError
		if !errors.Is(err, host.ErrPending) || !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a *PendingError matching ErrPending", err)
		}
		if pe.Plugin != "needy" || !slices.Equal(pe.Missing, []string{"a", "c"}) {
			t.Errorf("PendingError = %+v, want plugin needy missing [a c]", pe)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "host: ") || !strings.Contains(msg, `"a" "c"`) {
			t.Errorf("message %q does not name the services", msg)
		}
		if f == nil || f.State() != host.Pending {
			t.Fatalf("fiber %v, want a pending fiber", f)
		}
		must[host.Disposer](t)(svcA.Provide(h.Root(), 1))
		must[host.Disposer](t)(svcC.Provide(h.Root(), 1))
		if f.State() != host.Active {
			t.Errorf("state %v after the services appeared, want active", f.State())
		}
	})
	t.Run("a pending fiber can be disposed", func(t *testing.T) {
		h, _ := newHost(t)
		base := h.Stats()
		f := loaded(t, host.ErrPending)(h.Root().Plugin(host.Define("needy", []host.ServiceKey{svcA}, func(*host.Context) error { return nil }), nil))
		if err := f.Dispose(); err != nil || f.State() != host.Disposed {
			t.Fatalf("Dispose: %v, state %v", err, f.State())
		}
		if got := h.Stats(); !reflect.DeepEqual(got, base) {
			t.Errorf("residue %+v", got)
		}
	})
	t.Run("failure is wrapped", func(t *testing.T) {
		h, _ := newHost(t)
		boom := errors.New("boom")
		f, err := h.Root().Plugin(host.Define("broken", nil, func(*host.Context) error { return boom }), nil)
		if !errors.Is(err, boom) || errors.Is(err, host.ErrPending) {
			t.Fatalf("err = %v, want it to wrap %v", err, boom)
		}
		if !strings.HasPrefix(err.Error(), "host: plugin broken failed: ") {
			t.Errorf("message %q", err)
		}
		if f == nil || f.State() != host.Failed || !errors.Is(f.Err(), boom) {
			t.Fatalf("fiber %v, want failed with boom", f)
		}
	})
	t.Run("a closed parent yields no fiber", func(t *testing.T) {
		h, _ := newHost(t)
		var kept *host.Context
		p := must[*host.Fiber](t)(h.Root().Plugin(host.Define("parent", nil, func(c *host.Context) error { kept = c; return nil }), nil))
		if err := p.Dispose(); err != nil {
			t.Fatal(err)
		}
		f, err := kept.Plugin(host.Define("child", nil, func(*host.Context) error { return nil }), nil)
		if f != nil || !errors.Is(err, host.ErrFiberClosed) {
			t.Fatalf("got %v, %v; want no fiber and ErrFiberClosed", f, err)
		}
	})
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

// Update of a fiber that failed earlier and is now pending (its service
// went away) reports no failure: the new configuration has not run yet,
// and the old run's error is not the update's.
func TestH5_UpdateWhilePendingDoesNotReturnStaleError(t *testing.T) {
	h, _ := newHost(t)
	off := must[host.Disposer](t)(svcSvc.Provide(h.Root(), 1))
	bad := errors.New("bad config")
	f := loaded(t, bad)(h.Root().Plugin(host.Define("dep", []host.ServiceKey{svcSvc}, func(c *host.Context) error {
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
	must[host.Disposer](t)(svcSvc.Provide(h.Root(), 2))
	if f.State() != host.Active || f.Err() != nil {
		t.Errorf("after provide: %v %v", f.State(), f.Err())
	}
}
