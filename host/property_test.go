package host_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// propServices are the services random plugins provide and inject.
var propServices = []host.Service[int]{host.NewService[int]("s1"), host.NewService[int]("s2"), host.NewService[int]("s3")}

// randomPlugin returns a plugin whose Apply makes random registrations
// derived from seed (the same on every restart, so a restart is finite and
// reproducible). Fibers are appended to *fibers and disposers to *offs.
func randomPlugin(name string, seed uint64, depth int, fibers *[]*host.Fiber, offs *[]host.Disposer) host.Plugin {
	r := rand.New(rand.NewPCG(seed, uint64(depth)))
	var inject []host.ServiceKey
	if r.IntN(3) == 0 {
		inject = []host.ServiceKey{propServices[r.IntN(len(propServices))]}
	}
	return host.Define(name, inject, func(c *host.Context) error {
		r := rand.New(rand.NewPCG(seed, 99))
		return randomRegs(c, r, name, depth, fibers, offs)
	})
}

var errDisposer = errors.New("disposer failed on purpose")

func randomRegs(c *host.Context, r *rand.Rand, name string, depth int, fibers *[]*host.Fiber, offs *[]host.Disposer) error {
	n := r.IntN(6)
	for i := range n {
		var (
			d   host.Disposer
			err error
		)
		switch k := r.IntN(8); {
		case k == 0:
			d, err = host.On(c, evPing, func(context.Context, string) error { return nil })
		case k == 1:
			d, err = host.On(c, evFiltered, func(context.Context, string) error { return nil }, host.Prepend())
		case k == 2:
			d, err = host.On(c, evParallel, func(context.Context, string) error { return nil })
		case k == 3:
			d, err = propServices[r.IntN(len(propServices))].Provide(c, i)
		case k == 4:
			fail := r.IntN(3) == 0
			d, err = c.Track(host.EffectCustom, "e", func() error {
				if fail {
					return errDisposer
				}
				return nil
			})
		case k == 5 && depth < 3:
			var f *host.Fiber
			f, err = c.Plugin(randomPlugin(fmt.Sprintf("%s.%d", name, i), r.Uint64(), depth+1, fibers, offs), nil)
			if f != nil {
				// A pending or failed child stays in the tree too.
				*fibers = append(*fibers, f)
				err = nil
			}
		case k == 6 && depth < 3:
			var sc *host.Context
			sc, err = c.Scope(host.ScopeKey(fmt.Sprintf("agent-%d", r.IntN(3))))
			if err == nil {
				*fibers = append(*fibers, sc.Fiber())
				err = randomRegs(sc, r, name+"/scope", depth+1, fibers, offs)
			}
		case k == 7:
			if r.IntN(4) == 0 {
				return errors.New("apply fails on purpose")
			}
		}
		if err != nil {
			return err
		}
		if d != nil {
			*offs = append(*offs, d)
		}
	}
	return nil
}

func TestProperty_RandomTreesLeaveNoResidue(t *testing.T) {
	fresh := host.New().Stats()
	iterations := 300
	if testing.Short() {
		iterations = 50
	}
	for it := range iterations {
		seed := uint64(it)*7919 + 1
		r := rand.New(rand.NewPCG(seed, 2))
		h := host.New()
		var fibers []*host.Fiber
		var offs []host.Disposer
		for i := range 1 + r.IntN(5) {
			f, err := h.Root().Plugin(randomPlugin(fmt.Sprintf("p%d", i), r.Uint64(), 0, &fibers, &offs), nil)
			if f == nil {
				t.Fatalf("seed %d: %v", seed, err) // pending and failed plugins are part of the test
			}
			fibers = append(fibers, f)
		}
		// dispatch in every mode while the tree is up
		_ = host.Emit(context.Background(), h.Emitter("agent-1"), evFiltered, "")
		_ = host.Emit(context.Background(), h.Root().Emitter(), evParallel, "")
		// a random mix of single disposers and fiber disposals, in random order
		type step func() error
		var steps []step
		for _, d := range offs {
			if r.IntN(2) == 0 {
				steps = append(steps, step(d))
			}
		}
		for _, f := range fibers {
			steps = append(steps, f.Dispose)
		}
		r.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
		for _, s := range steps {
			if err := s(); err != nil && !errors.Is(err, errDisposer) {
				t.Fatalf("seed %d: unexpected dispose error %v", seed, err)
			}
			_ = host.Emit(context.Background(), h.Root().Emitter(), evParallel, "")
		}
		// restarts may have created fibers after the list was taken
		for _, e := range h.Root().Fiber().Effects() {
			t.Fatalf("seed %d: root still owns %+v", seed, e)
		}
		if got := h.Stats(); !reflect.DeepEqual(got, fresh) {
			t.Fatalf("seed %d: residue %+v, want %+v", seed, got, fresh)
		}
		// every disposer is still harmless
		for _, d := range offs {
			if err := d(); err != nil {
				t.Fatalf("seed %d: late disposer returned %v", seed, err)
			}
		}
		if err := h.Close(); err != nil {
			t.Fatalf("seed %d: Close: %v", seed, err)
		}
	}
}
