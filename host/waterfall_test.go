package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

type ctxKey struct{}

func TestH9_WaterfallSemantics(t *testing.T) {
	for _, ev := range []*events.Waterfall[string, string]{evWaterfall, evWaterfallContain} {
		for _, n := range []int{1, 3, 4, 5, 9} {
			t.Run(fmt.Sprintf("%s/%d", ev.Descriptor().Name, n), func(t *testing.T) {
				h := host.New()
				defer h.Close()
				for i := range n {
					must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
						r, err := next(context.WithValue(ctx, ctxKey{}, fmt.Sprintf("%v%d", ctx.Value(ctxKey{}), i)))
						return fmt.Sprintf("%d(%s)", i, r), err
					}))
				}
				base := func(ctx context.Context) (string, error) { return fmt.Sprint(ctx.Value(ctxKey{})), nil }
				for range 3 {
					got, err := host.Waterfall(context.Background(), h.Root().Emitter(), ev, "", base)
					if err != nil {
						t.Fatal(err)
					}
					want := "<nil>"
					for i := range n {
						want += fmt.Sprint(i)
					}
					for i := n - 1; i >= 0; i-- {
						want = fmt.Sprintf("%d(%s)", i, want)
					}
					if got != want {
						t.Fatalf("got %q want %q", got, want)
					}
				}
			})
		}
	}
}

func TestH9_WaterfallRetryAndConcurrentNext(t *testing.T) {
	for _, ev := range []*events.Waterfall[string, string]{evWaterfall, evWaterfallContain} {
		h := host.New()
		var mu sync.Mutex
		calls := 0
		// outer: calls next 3 times sequentially then 4 times concurrently
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			var out []string
			for range 3 {
				r, err := next(ctx)
				if err != nil {
					return "", err
				}
				out = append(out, r)
			}
			// Concurrent calls of one next race on its delegation record
			// under Contain (before and after the rewrite); Propagate's
			// next is stateless.
			res := make([]string, 4)
			if ev == evWaterfall {
				var wg sync.WaitGroup
				for k := range 4 {
					wg.Go(func() { res[k], _ = next(ctx) })
				}
				wg.Wait()
			} else {
				for k := range 4 {
					res[k], _ = next(ctx)
				}
			}
			return strings.Join(append(out, res...), ","), nil
		}))
		for range 5 {
			must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
				mu.Lock()
				calls++
				mu.Unlock()
				r, err := next(ctx)
				return "m" + r, err
			}))
		}
		// a failing listener that delegated: contain → its next result stands; propagate → error
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			_, _ = next(ctx)
			r, _ := next(ctx)
			if r != "base" {
				panic("bad")
			}
			return "", errors.New("late failure")
		}))
		// a panicking listener that did not delegate: contain → skipped
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			panic("boom")
		}))
		got, err := host.Waterfall(context.Background(), h.Root().Emitter(), ev, "", func(context.Context) (string, error) { return "base", nil })
		if ev.Descriptor().FailurePolicy() == events.Contain {
			if err != nil || got != strings.Repeat("mmmmmbase,", 6)+"mmmmmbase" {
				t.Fatalf("contain: %q %v", got, err)
			}
			if calls != 35 {
				t.Fatalf("calls %d", calls)
			}
		} else {
			if err == nil || !strings.Contains(err.Error(), "panicked: bad") {
				t.Fatalf("propagate: %q %v", got, err)
			}
			var pe *events.PanicError
			if !errors.As(err, &pe) {
				t.Fatalf("want panic error, got %v", err)
			}
		}
		h.Close()
	}
}

func TestH10_WaterfallRemovedDuringDispatchAndScope(t *testing.T) {
	for _, ev := range []*events.Waterfall[string, string]{evWaterfall, evWaterfallContain} {
		h := host.New()
		var offs [6]host.Disposer
		for i := range 6 {
			offs[i] = must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
				if i == 1 {
					_ = offs[3]()
					_ = offs[5]()
				}
				r, err := next(ctx)
				return fmt.Sprint(i) + r, err
			}))
		}
		got, err := host.Waterfall(context.Background(), h.Root().Emitter(), ev, "", func(context.Context) (string, error) { return "b", nil })
		if err != nil || got != "0124b" {
			t.Fatalf("%q %v", got, err)
		}
		got, err = host.Waterfall(context.Background(), h.Root().Emitter(), ev, "", func(context.Context) (string, error) { return "b", nil })
		if err != nil || got != "0124b" {
			t.Fatalf("%q %v", got, err)
		}
		h.Close()
	}
}

func TestH9_QueryFirstAnswerWinsAndFailures(t *testing.T) {
	h := host.New()
	defer h.Close()
	var got []string
	must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { got = append(got, "a"); panic("x") }))
	must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) {
		got = append(got, "b")
		return "", false, errors.New("e")
	}))
	must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { got = append(got, "c"); return "", false, nil }))
	must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { got = append(got, "d"); return "D", true, nil }))
	must[host.Disposer](t)(host.OnQuery(h.Root(), evBail, func(context.Context, string) (string, bool, error) { got = append(got, "e"); return "E", true, nil }))
	r, ok, err := host.Query(context.Background(), h.Root().Emitter(), evBail, "")
	if r != "D" || !ok || err != nil || strings.Join(got, "") != "abcd" {
		t.Fatalf("%q %v %v %v", r, ok, err, got)
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

// TestH9_WaterfallKeptNextRunsItsOwnDispatch: a next kept by a listener
// and called after its dispatch ended, after another dispatch with another
// payload and base ran, runs the rest of its own dispatch: its payload, its
// base, the listeners after it (one removed since is skipped). Under the
// Propagate policy it may be called from several goroutines at once.
func TestH9_WaterfallKeptNextRunsItsOwnDispatch(t *testing.T) {
	for _, ev := range []*events.Waterfall[string, string]{evWaterfall, evWaterfallContain} {
		t.Run(ev.Descriptor().Name, func(t *testing.T) {
			h := host.New()
			defer h.Close()
			kept := map[string]events.Next[string]{}
			must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
				kept[p] = next
				return next(ctx)
			}))
			var offs [2]host.Disposer
			for i := range 2 {
				offs[i] = must[host.Disposer](t)(host.OnWaterfall(h.Root(), ev, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
					r, err := next(ctx)
					return fmt.Sprintf("%d%s(%s)", i+1, p, r), err
				}))
			}
			for _, p := range []string{"A", "B"} {
				got, err := host.Waterfall(context.Background(), h.Root().Emitter(), ev, p, func(context.Context) (string, error) { return "base" + p, nil })
				if want := "1" + p + "(2" + p + "(base" + p + "))"; err != nil || got != want {
					t.Fatalf("dispatch %s = %q %v, want %q", p, got, err, want)
				}
			}
			check := func(p, want string) {
				t.Helper()
				n := 1
				if ev == evWaterfall {
					n = 8 // concurrently: Propagate's next records nothing
				}
				got := make([]string, n)
				var wg sync.WaitGroup
				for k := range n {
					wg.Go(func() { got[k], _ = kept[p](context.Background()) })
				}
				wg.Wait()
				for _, g := range got {
					if g != want {
						t.Fatalf("kept next of %s = %q, want %q", p, g, want)
					}
				}
			}
			check("A", "1A(2A(baseA))")
			check("B", "1B(2B(baseB))")
			_ = offs[1]()
			check("A", "1A(baseA)")
			_ = offs[0]()
			check("B", "baseB")
		})
	}
}

// TestH9_WaterfallPropagateAllocatesALinkPerListener: under the Propagate
// policy a dispatch to n pass-through listeners allocates n-1 next
// functions and nothing else (before: a chain object besides).
func TestH9_WaterfallPropagateAllocatesALinkPerListener(t *testing.T) {
	h := host.New()
	defer h.Close()
	for range 4 {
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfall, func(ctx context.Context, _ string, next events.Next[string]) (string, error) {
			return next(ctx)
		}))
	}
	ctx, em := context.Background(), h.Root().Emitter()
	base := func(context.Context) (string, error) { return "base", nil }
	if n := testing.AllocsPerRun(100, func() { _, _ = host.Waterfall(ctx, em, evWaterfall, "payload", base) }); n > 3 {
		t.Errorf("%v allocations per dispatch to 4 listeners, want at most 3", n)
	}
}

var evWaterfallBig = events.NewWaterfall[[20]int, string](events.Descriptor{
	Name: "test/waterfall-big", Mode: events.ModeWaterfall, Doc: "Waterfall with a 160-byte payload.", Failure: events.Propagate,
})

// TestH9_WaterfallLargePayloadIsCopiedOnce: the links of a dispatch share
// one copy of a payload too large to hold by value (before: a closure
// capturing a payload over 128 bytes got a heap copy of its own per link).
func TestH9_WaterfallLargePayloadIsCopiedOnce(t *testing.T) {
	h := host.New()
	defer h.Close()
	var seen [4]int
	for i := range 4 {
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfallBig, func(ctx context.Context, p [20]int, next events.Next[string]) (string, error) {
			seen[i] = p[19]
			return next(ctx)
		}))
	}
	ctx, em := context.Background(), h.Root().Emitter()
	base := func(context.Context) (string, error) { return "base", nil }
	var p [20]int
	p[19] = 7
	if got, err := host.Waterfall(ctx, em, evWaterfallBig, p, base); err != nil || got != "base" || seen != [4]int{7, 7, 7, 7} {
		t.Fatalf("%q %v, payloads seen %v", got, err, seen)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = host.Waterfall(ctx, em, evWaterfallBig, p, base) }); n > 4 {
		t.Errorf("%v allocations per dispatch to 4 listeners, want at most 4 (3 links, 1 payload copy)", n)
	}
}

// TestH9_WaterfallPropagatePanicIsTheListenersOwn: under the Propagate
// policy each listener's panic is recovered at its own level and
// attributed to its own plugin, even though one deferred recover per
// listener frame also covers everything its next runs: the listener
// before it gets the failure from next as an error (not a panic), the
// listener after it never runs, and a panic of the base is attributed to
// the last listener, the one whose next ran it.
func TestH9_WaterfallPropagatePanicIsTheListenersOwn(t *testing.T) {
	h, _ := newHost(t)
	var outerGot error
	var ran []string
	for _, name := range []string{"outer", "middle", "inner"} {
		_ = must[*host.Fiber](t)(h.Root().Plugin(host.Define(name, nil, func(c *host.Context) error {
			_, err := host.OnWaterfall(c, evWaterfall, func(ctx context.Context, p string, next events.Next[string]) (string, error) {
				ran = append(ran, name)
				switch {
				case name == "middle" && p == "middle panics":
					panic("middle's own")
				case name == "outer":
					r, err := next(ctx)
					outerGot = err
					return r, err
				}
				return next(ctx)
			})
			return err
		}), nil))
	}
	for _, tc := range []struct{ payload, want, ran string }{
		{"middle panics", "middle", "outer,middle"},
		{"base panics", "inner", "outer,middle,inner"},
	} {
		ran, outerGot = nil, nil
		_, err := host.Waterfall(context.Background(), h.Root().Emitter(), evWaterfall, tc.payload, func(context.Context) (string, error) {
			panic("base exploded")
		})
		var pe *events.PanicError
		if !errors.As(err, &pe) || pe.Plugin != tc.want {
			t.Fatalf("%s: err %v (plugin %v), want a panic attributed to %s", tc.payload, err, pe, tc.want)
		}
		if !errors.As(outerGot, &pe) || pe.Plugin != tc.want {
			t.Fatalf("%s: outer's next returned %v, want the panic as an error", tc.payload, outerGot)
		}
		if got := strings.Join(ran, ","); got != tc.ran {
			t.Fatalf("%s: ran %s, want %s", tc.payload, got, tc.ran)
		}
	}
}
