package host

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/events"
)

// State is a fiber's lifecycle state.
type State uint8

// Fiber states. A plugin fiber starts Pending (a required service is
// missing) or Loading, and settles Active or Failed; Unloading and Disposed
// follow disposal. A restart goes Unloading → Loading (or Pending) again.
const (
	Pending State = iota + 1
	Loading
	Active
	Failed
	Unloading
	Disposed
)

var stateNames = [...]string{0: "new", Pending: "pending", Loading: "loading", Active: "active", Failed: "failed", Unloading: "unloading", Disposed: "disposed"}

// String returns the state's lower-case name ("new" for the zero State, a
// fiber's state before its first change).
func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", s)
}

// StatusChange is the payload of [FiberStatus].
type StatusChange struct {
	Fiber *Fiber
	// From is the previous state; it is 0 for a new fiber's first state.
	From State
	To   State
	Err  error // the failure, when To is Failed
}

// FiberStatus is emitted on every fiber state change, on the goroutine
// performing the lifecycle operation. It is unfiltered; listener failures
// are contained.
var FiberStatus = events.NewEvent[StatusChange](events.Descriptor{
	Name: "internal/fiber",
	Mode: events.ModeEmit,
	Doc:  "A fiber changed state (pending, loading, active, failed, unloading, disposed).",
})

// Fiber is the lifetime of one plugin (or agent scope, or the root). It owns
// everything registered through its context and undoes it, last in first
// out, when disposed or restarted. A Fiber is safe for concurrent use.
type Fiber struct {
	h      *Host
	parent *Fiber
	name   string
	plugin Plugin
	inject []string
	log    zerolog.Logger

	// Guarded by h.life (lifecycle) for writes; mu for the fields read
	// from other goroutines.
	mu      sync.Mutex
	ctx     *Context
	state   State
	err     error
	config  any
	gen     uint64
	effects []*effect
	self    *effect // the effect on the parent that owns this fiber
	seq     uint64  // creation order
	// restarts caused by service changes in lifecycle epoch restartEpoch;
	// guarded by h.life.
	restartEpoch uint64
	restarts     int
	// disposing is set, with h.life held, when f's disposal begins; a
	// nested Dispose of f (from a disposer or a FiberStatus listener on the
	// disposing goroutine) is then a no-op instead of a deadlock.
	disposing bool
	settled   chan struct{}
}

func newFiber(h *Host, parent *Fiber, name string, p Plugin, config any) *Fiber {
	f := &Fiber{h: h, parent: parent, name: name, plugin: p, config: config, settled: make(chan struct{}), seq: h.fiberSeq.Add(1)}
	if inj, ok := p.(Injector); ok {
		f.inject = slices.Clone(inj.Inject())
	}
	f.log = h.log.With().Str("plugin", name).Logger()
	return f
}

// Name returns the plugin's name (see [Named]); scopes are "scope:<key>".
func (f *Fiber) Name() string { return f.name }

// Parent returns the fiber that owns f (nil for the root).
func (f *Fiber) Parent() *Fiber { return f.parent }

// Logger returns f's logger, which carries a "plugin" field.
func (f *Fiber) Logger() *zerolog.Logger { return &f.log }

// Context returns the context of f's current run (nil before its first
// start).
func (f *Fiber) Context() *Context {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ctx
}

// State returns f's current state.
func (f *Fiber) State() State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Err returns the error of f's last failed start, nil when the last start
// succeeded (a successful restart clears an earlier failure).
func (f *Fiber) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// Wait blocks until f is Active, Failed or Disposed, or ctx is done. It
// returns f's error (or ctx's). A pending fiber waits for its services.
func (f *Fiber) Wait(ctx context.Context) error {
	for {
		f.mu.Lock()
		st, err, ch := f.state, f.err, f.settled
		f.mu.Unlock()
		switch st {
		case Active, Failed:
			return err
		case Disposed:
			if err != nil {
				return err
			}
			return fmt.Errorf("fiber %s: %w", f.name, ErrFiberClosed)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (f *Fiber) acceptsLocked(gen uint64) error {
	switch f.state {
	case Unloading, Disposed:
		return fmt.Errorf("fiber %s is %v: %w", f.name, f.state, ErrFiberClosed)
	}
	if gen != f.gen {
		return fmt.Errorf("fiber %s: context from an earlier run (the plugin restarted): %w", f.name, ErrFiberClosed)
	}
	return nil
}

func (f *Fiber) remove(e *effect) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := slices.Index(f.effects, e); i >= 0 {
		f.effects = slices.Delete(f.effects, i, i+1)
	}
}

// EffectInfo describes one registration a fiber owns.
type EffectInfo struct {
	Kind EffectKind
	Name string
	// Children is the effect tree of a child plugin or scope fiber.
	Children []EffectInfo
}

// Effects returns the tree of everything f currently owns, in registration
// order. A disposed fiber owns nothing.
func (f *Fiber) Effects() []EffectInfo {
	f.mu.Lock()
	es := slices.Clone(f.effects)
	f.mu.Unlock()
	out := make([]EffectInfo, 0, len(es))
	for _, e := range es {
		info := EffectInfo{Kind: e.kind, Name: e.name}
		if e.child != nil {
			info.Children = e.child.Effects()
		}
		out = append(out, info)
	}
	return out
}

// Dispose disposes f: it undoes everything f owns, last in first out,
// attempting every disposer even when some fail, and removes f from its
// parent. The errors are joined, logged and returned. Dispose is
// idempotent. Disposing the root disposes the whole host.
func (f *Fiber) Dispose() error {
	f.h.life.Lock()
	defer f.h.life.Unlock()
	if f.disposing {
		// Already being disposed, by this goroutine (it holds h.life): a
		// disposer or status listener disposing f again. Running f.self
		// again would wait for itself.
		return nil
	}
	if f.self != nil {
		// Runs f.h.dispose once, and removes f from its parent's effects.
		err := f.self.run()
		if f.parent != nil {
			f.parent.remove(f.self)
		}
		return err
	}
	return f.h.dispose(f)
}

// Update replaces f's configuration and restarts it (or leaves it pending
// with the new configuration). Every update restarts, even one that
// returns to an earlier configuration: a generation counter, not a state
// comparison, decides what is stale.
//
// Update fails for fibers that are not a plugin's (the root and scopes)
// and for fibers that are unloading or disposed. Otherwise it returns the
// restarted run's failure when that run failed (see [Fiber.Err]), and nil
// when it is active or pending (an earlier run's error is not the update's).
func (f *Fiber) Update(config any) error {
	if f.plugin == nil {
		return fmt.Errorf("updating fiber %s: not a plugin fiber", f.name)
	}
	f.h.life.Lock()
	defer f.h.life.Unlock()
	f.mu.Lock()
	st := f.state
	if st == Disposed || st == Unloading {
		f.mu.Unlock()
		return fmt.Errorf("updating fiber %s: %w", f.name, ErrFiberClosed)
	}
	f.config = config
	f.mu.Unlock()
	f.h.restart(f)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != Failed {
		return nil
	}
	return f.err
}

// disposeEffects undoes f's effects LIFO, attempting every one; h.life must
// be held. all joins every error (child fibers' included); own joins only
// the errors of f's own disposers, which is what f logs (a child fiber logs
// its own).
func (h *Host) disposeEffects(f *Fiber) (all, own error) {
	var errs, owns []error
	for {
		f.mu.Lock()
		n := len(f.effects)
		if n == 0 {
			f.mu.Unlock()
			break
		}
		e := f.effects[n-1]
		f.effects = f.effects[:n-1]
		f.mu.Unlock()
		if err := e.run(); err != nil {
			errs = append(errs, err)
			if e.child == nil {
				owns = append(owns, err)
			}
		}
	}
	return errors.Join(errs...), errors.Join(owns...)
}

// dispose is the body of a fiber's disposal; h.life must be held.
func (h *Host) dispose(f *Fiber) error {
	if f.disposing || f.State() == Disposed {
		return nil
	}
	f.disposing = true
	h.setState(f, Unloading, nil)
	err, own := h.disposeEffects(f)
	h.fmu.Lock()
	delete(h.fibers, f)
	h.fmu.Unlock()
	if own != nil {
		f.log.Error().Err(own).Msg("disposing")
	}
	h.setState(f, Disposed, nil)
	return err
}

// setState changes f's state and emits FiberStatus; h.life must be held.
func (h *Host) setState(f *Fiber, to State, err error) {
	f.mu.Lock()
	from := f.state
	f.state = to
	if to == Failed || to == Active || to == Loading {
		f.err = err
	}
	if to == Active || to == Failed || to == Disposed {
		close(f.settled)
		f.settled = make(chan struct{})
	}
	f.mu.Unlock()
	if from == to {
		return
	}
	_ = Emit(context.Background(), h.Emitter(""), FiberStatus, StatusChange{Fiber: f, From: from, To: to, Err: err})
}
