package host_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// user injects "db" and records the value it saw at each start.
func user(name string, seen *[]int) host.Plugin {
	return host.Define(name, []host.ServiceKey{svcDB}, func(c *host.Context) error {
		v, err := svcDB.Get(c)
		if err != nil {
			return err
		}
		*seen = append(*seen, v)
		return nil
	})
}

func provider(v int) host.Plugin {
	return host.Define("db-provider", nil, func(c *host.Context) error {
		_, err := svcDB.Provide(c, v)
		return err
	})
}

func TestH6_InjectPendingRestart(t *testing.T) {
	t.Run("load order does not matter", func(t *testing.T) {
		for _, userFirst := range []bool{true, false} {
			h, _ := newHost(t)
			var seen []int
			var u *host.Fiber
			if userFirst {
				u = loaded(t, host.ErrPending)(h.Root().Plugin(user("user", &seen), nil))
				if u.State() != host.Pending {
					t.Fatalf("state %v, want pending", u.State())
				}
				must[*host.Fiber](t)(h.Root().Plugin(provider(1), nil))
			} else {
				must[*host.Fiber](t)(h.Root().Plugin(provider(1), nil))
				u = must[*host.Fiber](t)(h.Root().Plugin(user("user", &seen), nil))
			}
			if u.State() != host.Active || !slices.Equal(seen, []int{1}) {
				t.Errorf("userFirst=%v: state %v seen %v", userFirst, u.State(), seen)
			}
			if err := u.Wait(context.Background()); err != nil {
				t.Error(err)
			}
		}
	})
	t.Run("replaced, restored, gone", func(t *testing.T) {
		h, _ := newHost(t)
		rec := statuses(t, h, "user")
		var seen []int
		u := loaded(t, host.ErrPending)(h.Root().Plugin(user("user", &seen), nil))
		p1 := must[*host.Fiber](t)(h.Root().Plugin(provider(1), nil))
		p2 := must[*host.Fiber](t)(h.Root().Plugin(provider(2), nil)) // replaces
		if !slices.Equal(seen, []int{1, 2}) {
			t.Fatalf("after replacement seen %v", seen)
		}
		if err := p2.Dispose(); err != nil { // restores p1's
			t.Fatal(err)
		}
		if !slices.Equal(seen, []int{1, 2, 1}) {
			t.Fatalf("after restore seen %v", seen)
		}
		if err := p1.Dispose(); err != nil { // gone
			t.Fatal(err)
		}
		if u.State() != host.Pending {
			t.Fatalf("state %v, want pending", u.State())
		}
		want := []string{"pending", "loading", "active", "unloading", "loading", "active",
			"unloading", "loading", "active", "unloading", "pending"}
		if got := rec.list(); !slices.Equal(got, want) {
			t.Errorf("states = %v\nwant %v", got, want)
		}
		must[*host.Fiber](t)(h.Root().Plugin(provider(3), nil))
		if u.State() != host.Active || seen[len(seen)-1] != 3 {
			t.Errorf("state %v seen %v", u.State(), seen)
		}
	})
	t.Run("removing a shadowed provider does not restart", func(t *testing.T) {
		h, _ := newHost(t)
		var seen []int
		loaded(t, host.ErrPending)(h.Root().Plugin(user("user", &seen), nil))
		p1 := must[*host.Fiber](t)(h.Root().Plugin(provider(1), nil))
		must[*host.Fiber](t)(h.Root().Plugin(provider(2), nil))
		if err := p1.Dispose(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, []int{1, 2}) {
			t.Errorf("seen %v", seen)
		}
	})
	t.Run("providing what an ancestor injects does not loop", func(t *testing.T) {
		h, _ := newHost(t)
		must[*host.Fiber](t)(h.Root().Plugin(provider(1), nil))
		runs := 0
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("self-provider", []host.ServiceKey{svcDB}, func(c *host.Context) error {
			runs++
			_, err := c.Plugin(provider(2), nil)
			return err
		}), nil))
		if runs != 1 || f.State() != host.Active {
			t.Errorf("runs %d state %v", runs, f.State())
		}
	})
}

func TestH7_LookupIsNonReactive(t *testing.T) {
	h, _ := newHost(t)
	runs := 0
	var ctx *host.Context
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("optional", nil, func(c *host.Context) error {
		runs++
		ctx = c
		if _, ok := svcDB.Lookup(c); ok {
			return errors.New("db should be absent")
		}
		return nil
	}), nil))
	d := must[host.Disposer](t)(svcDB.Provide(h.Root(), 5))
	if v, ok := svcDB.Lookup(ctx); !ok || v != 5 {
		t.Errorf("Lookup = %v %v", v, ok)
	}
	// Another key declaring the same name with another type reads the
	// same service, and says that it is not its type.
	dbText := host.NewService[string]("db")
	if _, ok := dbText.Lookup(ctx); ok {
		t.Error("Lookup through a key of another type succeeded")
	}
	if _, err := dbText.Get(ctx); err == nil || !strings.Contains(err.Error(), `service "db", read by optional as a string: its value is a int`) {
		t.Errorf("Get through a key of another type = %v", err)
	}
	if err := d(); err != nil {
		t.Fatal(err)
	}
	if _, err := svcDB.Get(ctx); !errors.Is(err, host.ErrNoService) {
		t.Errorf("Get after removal = %v", err)
	}
	if runs != 1 || f.State() != host.Active {
		t.Errorf("runs %d state %v: a Lookup must not make the plugin reactive", runs, f.State())
	}
}

func TestH8_Isolation(t *testing.T) {
	h, _ := newHost(t)
	iso := h.Root().Isolate(svcDB)
	must[host.Disposer](t)(svcDB.Provide(iso, 1))
	if _, ok := svcDB.Lookup(h.Root()); ok {
		t.Fatal("isolated service visible globally")
	}
	var isoSeen, globalSeen []int
	fi := must[*host.Fiber](t)(iso.Plugin(user("iso-user", &isoSeen), nil))
	fg := loaded(t, host.ErrPending)(h.Root().Plugin(user("global-user", &globalSeen), nil))
	if fi.State() != host.Active || fg.State() != host.Pending {
		t.Fatalf("iso %v global %v", fi.State(), fg.State())
	}
	must[host.Disposer](t)(svcDB.Provide(h.Root(), 2))
	if !slices.Equal(isoSeen, []int{1}) || !slices.Equal(globalSeen, []int{2}) {
		t.Errorf("iso %v global %v", isoSeen, globalSeen)
	}
	// a second isolation of the same name is yet another namespace
	if _, ok := svcDB.Lookup(h.Root().Isolate(svcDB)); ok {
		t.Error("fresh isolation sees a service")
	}
	// non-isolated names pass through an isolated view
	must[host.Disposer](t)(svcCache.Provide(h.Root(), 3))
	if v, ok := svcCache.Lookup(iso); !ok || v != 3 {
		t.Errorf("cache via iso = %v %v", v, ok)
	}
	if s := h.Stats().Services; len(s) != 3 {
		t.Errorf("services = %v", s)
	}
}

func TestH6_MutualProvideInjectStopsWithRestartLoop(t *testing.T) {
	h, _ := newHost(t)
	base := h.Stats()
	// each injects "db" and, through a child, provides it: each start
	// replaces the other's provider.
	mk := func(name string) host.Plugin {
		return host.Define(name, []host.ServiceKey{svcDB}, func(c *host.Context) error {
			_, err := c.Plugin(provider(1), nil)
			return err
		})
	}
	must[*host.Fiber](t)(h.Root().Plugin(provider(0), nil))
	a, aErr := h.Root().Plugin(mk("a"), nil)
	b, bErr := h.Root().Plugin(mk("b"), nil)
	for _, err := range []error{aErr, bErr} {
		if err != nil && !errors.Is(err, host.ErrRestartLoop) {
			t.Fatalf("Plugin: %v, want nil or ErrRestartLoop", err)
		}
	}
	failed := 0
	for _, f := range []*host.Fiber{a, b} {
		if errors.Is(f.Err(), host.ErrRestartLoop) {
			failed++
		}
	}
	if failed == 0 {
		t.Fatalf("a: %v %v, b: %v %v", a.State(), a.Err(), b.State(), b.Err())
	}
	if err := a.Dispose(); err != nil {
		t.Fatal(err)
	}
	if err := b.Dispose(); err != nil {
		t.Fatal(err)
	}
	if got := h.Stats(); got.Fibers != base.Fibers+1 || len(got.Services) != 1 {
		t.Errorf("residue %+v", got)
	}
}
