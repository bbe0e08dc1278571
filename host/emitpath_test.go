package host_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// TestEmitRunsEveryListenerAroundContainedFailures: under Contain, a mix
// of panics and errors anywhere in the list (first, middle, last, several
// in a row) never keeps a later listener from running, in order, once.
func TestEmitRunsEveryListenerAroundContainedFailures(t *testing.T) {
	for _, pattern := range []string{"pepo", "oppo", "ooop", "eeee", "pppp", "opeope"} {
		h, _ := newHost(t)
		var ran []int
		for i, k := range pattern {
			must[host.Disposer](t)(host.On(h.Root(), evPing, func(context.Context, string) error {
				ran = append(ran, i)
				switch k {
				case 'p':
					panic("boom")
				case 'e':
					return errors.New("failed")
				}
				return nil
			}))
		}
		for round := range 3 {
			ran = ran[:0]
			if err := host.Emit(context.Background(), h.Root().Emitter(), evPing, ""); err != nil {
				t.Fatalf("%s: %v", pattern, err)
			}
			want := make([]int, len(pattern))
			for i := range want {
				want[i] = i
			}
			if !slices.Equal(ran, want) {
				t.Fatalf("%s round %d: ran %v, want %v", pattern, round, ran, want)
			}
		}
	}
}

// ctxWithMap is a context whose dynamic type is not comparable: == on two
// of them panics. The dispatch memo must never compare it that way.
type ctxWithMap struct {
	context.Context
	m map[string]int
}

// TestDispatchMemoIsIdentityOnly: the memo of the last top-level context
// serves only that very context value. A context of an incomparable type
// neither panics the dispatch nor is confused with another; a context
// equal in value but deeper (it carries a dispatch's depth) is not served
// the depth-1 wrapper.
func TestDispatchMemoIsIdentityOnly(t *testing.T) {
	h, _ := newHost(t, host.WithMaxDepth(2))
	depth := 0
	must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(ctx context.Context, p string) error {
		depth++
		if p == "recurse" {
			// The same incomparable context again, from inside: not a
			// top-level dispatch, whatever the memo holds.
			return host.Emit(ctx, h.Root().Emitter(), evPropagate, "recurse")
		}
		return nil
	}))
	var a, b context.Context = ctxWithMap{context.Background(), map[string]int{}}, ctxWithMap{context.Background(), map[string]int{}}
	for range 3 {
		for _, c := range []context.Context{a, b, a} {
			if err := host.Emit(c, h.Root().Emitter(), evPropagate, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	depth = 0
	err := host.Emit(a, h.Root().Emitter(), evPropagate, "recurse")
	if !errors.Is(err, host.ErrRecursion) || depth != 2 {
		t.Fatalf("recursion from a memoized context: err %v after %d levels, want ErrRecursion after 2", err, depth)
	}
	// A listener that captured its dispatch context and dispatches with it
	// later, at top level: it is still one level deep.
	var kept context.Context
	must[host.Disposer](t)(host.On(h.Root(), evPing, func(ctx context.Context, _ string) error { kept = ctx; return nil }))
	if err := host.Emit(a, h.Root().Emitter(), evPing, ""); err != nil {
		t.Fatal(err)
	}
	depth = 0
	err = host.Emit(kept, h.Root().Emitter(), evPropagate, "recurse")
	if !errors.Is(err, host.ErrRecursion) || depth != 1 {
		t.Fatalf("dispatch from a kept dispatch context: err %v after %d levels, want ErrRecursion after 1", err, depth)
	}
}
