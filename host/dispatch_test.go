package host_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

func TestH9_DispatchModes(t *testing.T) {
	boom := errors.New("boom")
	ctx := context.Background()

	t.Run("emit in registration order, Prepend first", func(t *testing.T) {
		h, _ := newHost(t)
		var got []string
		for _, n := range []string{"a", "b", "c"} {
			must[host.Disposer](t)(host.On(h.Root(), evPing, func(_ context.Context, p string) error { got = append(got, n+p); return nil }))
		}
		must[host.Disposer](t)(host.On(h.Root(), evPing, func(_ context.Context, p string) error { got = append(got, "first"+p); return nil }, host.Prepend()))
		if err := host.Emit(ctx, h.Root().Emitter(), evPing, "!"); err != nil {
			t.Fatal(err)
		}
		if want := []string{"first!", "a!", "b!", "c!"}; !slices.Equal(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	})

	t.Run("emit propagate stops at first failure", func(t *testing.T) {
		h, _ := newHost(t)
		var got []string
		must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(context.Context, string) error { got = append(got, "a"); return boom }))
		must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(context.Context, string) error { got = append(got, "b"); return nil }))
		if err := host.Emit(ctx, h.Root().Emitter(), evPropagate, ""); !errors.Is(err, boom) {
			t.Errorf("err = %v", err)
		}
		if !slices.Equal(got, []string{"a"}) {
			t.Errorf("got %v", got)
		}
	})

	t.Run("parallel runs all concurrently and joins errors", func(t *testing.T) {
		h, _ := newHost(t)
		const n = 4
		var started sync.WaitGroup
		started.Add(n)
		errs := make([]error, n)
		for i := range n {
			errs[i] = fmt.Errorf("listener %d", i)
			must[host.Disposer](t)(host.On(h.Root(), evParallel, func(ctx context.Context, _ string) error {
				started.Done()
				done := make(chan struct{})
				go func() { started.Wait(); close(done) }()
				select { // every listener must be running at the same time
				case <-done:
				case <-time.After(10 * time.Second):
					return errors.New("listeners did not run concurrently")
				}
				if i%2 == 0 {
					return errs[i]
				}
				panic(errs[i])
			}))
		}
		err := host.Emit(ctx, h.Root().Emitter(), evParallel, "")
		for i := range n {
			if !errors.Is(err, errs[i]) {
				t.Errorf("joined error %v misses %v", err, errs[i])
			}
		}
	})

	t.Run("serial first answer wins, checks ctx between listeners", func(t *testing.T) {
		h, _ := newHost(t)
		var got []string
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(_ context.Context, p string) (string, bool, error) {
			got = append(got, "a")
			if p == "cancel" {
				cancel()
			}
			return "", false, nil
		}))
		must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(context.Context, string) (string, bool, error) { got = append(got, "b"); return "B", true, nil }))
		must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(context.Context, string) (string, bool, error) { got = append(got, "c"); return "C", true, nil }))
		r, ok, err := host.Query(ctx, h.Root().Emitter(), evSerial, "")
		if r != "B" || !ok || err != nil || !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("Query = %q %v %v, called %v", r, ok, err, got)
		}
		got = nil
		_, ok, err = host.Query(cctx, h.Root().Emitter(), evSerial, "cancel")
		if ok || !errors.Is(err, context.Canceled) || !slices.Equal(got, []string{"a"}) {
			t.Errorf("cancelled Query = %v %v, called %v", ok, err, got)
		}
	})

	t.Run("bail first answer wins, contained failure skipped", func(t *testing.T) {
		h, _ := newHost(t)
		must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { return "", false, boom }))
		must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { return "", false, nil }))
		must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { return "x", true, nil }))
		r, ok, err := host.Query(ctx, h.Root().Emitter(), evBail, "")
		if r != "x" || !ok || err != nil {
			t.Errorf("Query = %q %v %v", r, ok, err)
		}
		_, ok, err = host.Query(ctx, h.Root().Emitter(), evSerial, "") // nobody listens
		if ok || err != nil {
			t.Errorf("empty Query = %v %v", ok, err)
		}
	})

	wf := func(name string, short bool) events.WaterfallListener[string, string] {
		return func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			if short {
				return name + "(short)", nil
			}
			r, err := next(ctx)
			return name + "(" + r + ")", err
		}
	}
	base := func(context.Context) (string, error) { return "base", nil }
	tests := []struct {
		name  string
		setup func(t *testing.T, c *host.Context)
		want  string
	}{
		{"no listeners calls base", func(*testing.T, *host.Context) {}, "base"},
		{"first listed is outermost", func(t *testing.T, c *host.Context) {
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("a", false)))
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("b", false)))
		}, "a(b(base))"},
		{"prepend goes outermost", func(t *testing.T, c *host.Context) {
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("a", false)))
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("p", false), host.Prepend()))
		}, "p(a(base))"},
		{"not calling next short-circuits", func(t *testing.T, c *host.Context) {
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("a", false)))
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("b", true)))
			must[host.Disposer](t)(host.OnWaterfall(c, evWaterfall, wf("c", false)))
		}, "a(b(short))"},
	}
	for _, tt := range tests {
		t.Run("waterfall/"+tt.name, func(t *testing.T) {
			h, _ := newHost(t)
			tt.setup(t, h.Root())
			got, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfall, "", base)
			if err != nil || got != tt.want {
				t.Errorf("got %q %v, want %q", got, err, tt.want)
			}
		})
	}

	t.Run("waterfall contained failure keeps what next returned", func(t *testing.T) {
		h, _ := newHost(t)
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfallContain, func(ctx context.Context, _ string, next events.Next[string]) (string, error) {
			_, _ = next(ctx)
			return "garbage", boom
		}))
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfallContain, func(context.Context, string, events.Next[string]) (string, error) {
			panic("x")
		}))
		got, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfallContain, "", base)
		if err != nil || got != "base" {
			t.Errorf("got %q %v, want base", got, err)
		}
	})

	t.Run("waterfall propagated failure returns to previous next", func(t *testing.T) {
		h, _ := newHost(t)
		var seen error
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfall, func(ctx context.Context, _ string, next events.Next[string]) (string, error) {
			_, seen = next(ctx)
			return "recovered", nil
		}))
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfall, func(context.Context, string, events.Next[string]) (string, error) {
			return "", boom
		}))
		got, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfall, "", base)
		if got != "recovered" || err != nil || !errors.Is(seen, boom) {
			t.Errorf("got %q %v, inner saw %v", got, err, seen)
		}
	})
}

func TestH10_SnapshotDuringDispatch(t *testing.T) {
	h, _ := newHost(t)
	var got []string
	var offB host.Disposer
	must[host.Disposer](t)(host.On(h.Root(), evPing, func(context.Context, string) error {
		got = append(got, "a")
		// registered during the dispatch: not called by it
		must[host.Disposer](t)(host.On(h.Root(), evPing, func(context.Context, string) error { got = append(got, "late"); return nil }))
		// removed during the dispatch: not called after
		return offB()
	}))
	offB = must[host.Disposer](t)(host.On(h.Root(), evPing, func(context.Context, string) error { got = append(got, "b"); return nil }))
	if err := host.Emit(context.Background(), h.Root().Emitter(), evPing, ""); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []string{"a"}) {
		t.Errorf("first dispatch called %v, want [a]", got)
	}
	got = nil
	_ = host.Emit(context.Background(), h.Root().Emitter(), evPing, "")
	if !slices.Equal(got[:2], []string{"a", "late"}) {
		t.Errorf("second dispatch called %v", got)
	}
}

func TestH11_ReentrancyAndRecursionLimit(t *testing.T) {
	t.Run("emit, register, dispose, load from a listener", func(t *testing.T) {
		h, _ := newHost(t)
		base := h.Stats()
		var got []string
		must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(context.Context, string) error { got = append(got, "inner"); return nil }))
		var f *host.Fiber
		must[host.Disposer](t)(host.On(h.Root(), evPing, func(ctx context.Context, p string) error {
			if err := host.Emit(ctx, h.Root().Emitter(), evPropagate, p); err != nil {
				return err
			}
			off, err := host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { return "", false, nil })
			if err != nil {
				return err
			}
			if err := off(); err != nil {
				return err
			}
			f, err = h.Root().Plugin(host.Define("from-listener", nil, func(c *host.Context) error {
				_, err := svcSvc.Provide(c, 1)
				return err
			}), nil)
			if err != nil {
				return err
			}
			got = append(got, "outer")
			return f.Dispose()
		}))
		done := make(chan error, 1)
		go func() { done <- host.Emit(context.Background(), h.Root().Emitter(), evPing, "") }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("deadlock")
		}
		if !slices.Equal(got, []string{"inner", "outer"}) || f.State() != host.Disposed {
			t.Errorf("got %v state %v", got, f.State())
		}
		base.Listeners["test/propagate"] = 1
		base.Listeners["test/ping"] = 1
		if s := h.Stats(); s.Fibers != base.Fibers || len(s.Services) != 0 {
			t.Errorf("stats %+v", s)
		}
	})
	for _, depth := range []int{1, 8, host.DefaultMaxDepth} {
		t.Run(fmt.Sprintf("runaway recursion stops at depth %d", depth), func(t *testing.T) {
			opts := []host.Option{}
			if depth != host.DefaultMaxDepth {
				opts = append(opts, host.WithMaxDepth(depth))
			}
			h, _ := newHost(t, opts...)
			calls := 0
			must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(ctx context.Context, p string) error {
				calls++
				// through a derived context too: the guard follows values
				ctx, cancel := context.WithCancel(ctx)
				defer cancel()
				return host.Emit(ctx, h.Root().Emitter(), evPropagate, p)
			}))
			err := host.Emit(context.Background(), h.Root().Emitter(), evPropagate, "")
			if !errors.Is(err, host.ErrRecursion) {
				t.Fatalf("err = %v", err)
			}
			if calls != depth {
				t.Errorf("calls = %d, want %d", calls, depth)
			}
			// the memoized wrappers do not carry depth over to a fresh dispatch
			calls = 0
			_ = host.Emit(context.Background(), h.Root().Emitter(), evPropagate, "")
			if calls != depth {
				t.Errorf("second run calls = %d, want %d", calls, depth)
			}
		})
	}
	t.Run("recursion with the listener's own context, all modes", func(t *testing.T) {
		h, _ := newHost(t, host.WithMaxDepth(5))
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfall, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			if _, _, err := host.Query(ctx, h.Root().Emitter(), evSerial, p); err != nil {
				return "", err
			}
			return next(ctx)
		}))
		must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(ctx context.Context, p string) (string, bool, error) {
			_, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfall, p, func(context.Context) (string, error) { return "", nil })
			return "", false, err
		}))
		// evSerial contains failures, so the error surfaces through the waterfall's propagation
		_, err := host.Waterfall(context.Background(), h.Root().Emitter(), evWaterfall, "", func(context.Context) (string, error) { return "", nil })
		if err != nil && !errors.Is(err, host.ErrRecursion) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestH12_ScopeFiltering(t *testing.T) {
	h, _ := newHost(t)
	rec := &recorder{}
	a := must[*host.Context](t)(h.Root().Scope("agent-a"))
	b := must[*host.Context](t)(h.Root().Scope("agent-b"))
	for _, c := range []*host.Context{h.Root(), a, b} {
		name := string(c.ScopeKey())
		if name == "" {
			name = "global"
		}
		for _, ev := range []*events.Event[string]{evFiltered, evPing} {
			must[host.Disposer](t)(host.On(c, ev, func(_ context.Context, p string) error { rec.add(p + ":" + name); return nil }))
		}
	}
	tests := []struct {
		em   host.Emitter
		ev   *events.Event[string]
		want []string
	}{
		{h.Emitter(""), evFiltered, []string{"global"}},
		{a.Emitter(), evFiltered, []string{"global", "agent-a"}},
		{h.Emitter("agent-b"), evFiltered, []string{"global", "agent-b"}},
		{h.Emitter("agent-zzz"), evFiltered, []string{"global"}},
		{a.Emitter(), evPing, []string{"global", "agent-a", "agent-b"}},
		{h.Emitter(""), evPing, []string{"global", "agent-a", "agent-b"}},
	}
	for _, tt := range tests {
		name := fmt.Sprintf("%s/scope=%q", tt.ev.Descriptor().Name, tt.em.Scope())
		t.Run(name, func(t *testing.T) {
			rec.mu.Lock()
			rec.got = nil
			rec.mu.Unlock()
			if err := host.Emit(context.Background(), tt.em, tt.ev, name); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, name+":"+w)
			}
			if got := rec.list(); !slices.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
	t.Run("scope registrations die with the scope", func(t *testing.T) {
		if err := a.Fiber().Dispose(); err != nil {
			t.Fatal(err)
		}
		if n := h.ListenerCount("test/filtered"); n != 2 {
			t.Errorf("listeners = %d, want 2", n)
		}
		if _, err := a.Scope("nested"); !errors.Is(err, host.ErrFiberClosed) {
			t.Errorf("scope on a disposed scope: %v", err)
		}
	})
	t.Run("invalid keys", func(t *testing.T) {
		for _, k := range []host.ScopeKey{"", "a b", "tab\t", host.ScopeKey(strings.Repeat("x", host.MaxScopeKeyLen+1)), "é"} {
			if _, err := h.Root().Scope(k); !errors.Is(err, host.ErrInvalidScopeKey) {
				t.Errorf("Scope(%q) = %v", k, err)
			}
		}
	})
}

func TestH13_PanicContainedAndLoggedWithPluginName(t *testing.T) {
	tests := []struct {
		name      string
		ev        *events.Event[string]
		wantErr   bool
		wantAfter bool // the next listener still ran
	}{
		{"contain", evPing, false, true},
		{"propagate", evPropagate, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, logs := newHost(t)
			after := false
			must[*host.Fiber](t)(h.Root().Plugin(host.Define("panicky-plugin", nil, func(c *host.Context) error {
				_, err := host.On(c, tt.ev, func(context.Context, string) error { panic("kaboom") })
				return err
			}), nil))
			must[host.Disposer](t)(host.On(h.Root(), tt.ev, func(context.Context, string) error { after = true; return nil }))
			err := host.Emit(context.Background(), h.Root().Emitter(), tt.ev, "")
			if (err != nil) != tt.wantErr || after != tt.wantAfter {
				t.Fatalf("err %v after %v", err, after)
			}
			if tt.wantErr {
				var pe *events.PanicError
				if !errors.As(err, &pe) || pe.Plugin != "panicky-plugin" || pe.Value != "kaboom" {
					t.Errorf("err = %#v", err)
				}
			}
			l := logs.String()
			for _, want := range []string{`"plugin":"panicky-plugin"`, "kaboom", `"event":"` + tt.ev.Descriptor().Name + `"`} {
				if !strings.Contains(l, want) {
					t.Errorf("log %q lacks %s", l, want)
				}
			}
		})
	}
}
