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

	// Written with h.life and mu held, read with either (see lifecycle.go).
	mu      sync.Mutex
	ctx     *Context
	state   State
	err     error
	config  any
	gen     uint64
	effects []*effect // mu only
	life    *lifetime // mu only: the current run's Lifetime, made on first use
	settled chan struct{}
	self    *effect // the effect on the parent that owns this fiber; set before f is shared
	seq     uint64  // creation order

	// Guarded by h.life. owned: a goroutine is running f's start or
	// restart (Host.drive); again: a restart was requested meanwhile, for
	// againWhy, and the owner runs it; disposing: f's disposal has begun.
	owned     bool
	again     bool
	againWhy  string
	disposing bool
}

func newFiber(h *Host, parent *Fiber, name string, p Plugin, inject []string, config any) *Fiber {
	f := &Fiber{h: h, parent: parent, name: name, plugin: p, inject: inject, config: config, settled: make(chan struct{}), seq: h.fiberSeq.Add(1)}
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
			return fmt.Errorf("host: fiber %s: %w", f.name, ErrFiberClosed)
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
// parent. The errors are joined, logged and returned. Disposing the root
// disposes the whole host.
//
// Dispose is idempotent, and only the first call disposes: a call made
// while f's disposal is under way (from one of f's disposers or a
// FiberStatus listener, or from another goroutine) returns nil at once
// without waiting for it; [Fiber.Wait] waits for it. Dispose may be called
// from anywhere, Apply and disposers included; a start of f that is under
// way on another goroutine stops at its next step.
func (f *Fiber) Dispose() error {
	h := f.h
	h.life.Lock()
	disposing := f.disposing
	h.life.Unlock()
	if disposing {
		return nil
	}
	if f.self == nil { // the root
		return h.dispose(f)
	}
	// Runs h.dispose once and removes f from its parent's effects.
	err := f.self.run()
	f.parent.remove(f.self)
	return err
}

// Update replaces f's configuration and restarts it (or leaves it pending
// with the new configuration). Every update restarts, even one that
// returns to an earlier configuration: a generation counter, not a state
// comparison, decides what is stale.
//
// Update fails for fibers that are not a plugin's (the root and scopes)
// and for fibers that are being disposed or are disposed. When f is
// starting or restarting at that moment (Update was called from f's own
// Apply, from a FiberStatus listener or disposer of that start, or on
// another goroutine), the running start is made stale at once (its
// context refuses registrations), the restart runs as soon as that start
// returns, and Update returns nil without waiting. Otherwise Update
// restarts f on the calling goroutine and returns the restarted run's
// failure when that run failed (see [Fiber.Err]), and nil when it is
// active or pending (an earlier run's error is not the update's).
func (f *Fiber) Update(config any) error {
	if f.plugin == nil {
		return fmt.Errorf("host: updating fiber %s: not a plugin fiber", f.name)
	}
	h := f.h
	h.life.Lock()
	f.mu.Lock()
	if f.disposing || f.state == Disposed {
		f.mu.Unlock()
		h.life.Unlock()
		return fmt.Errorf("host: updating fiber %s: %w", f.name, ErrFiberClosed)
	}
	f.config = config
	f.mu.Unlock()
	if f.owned {
		f.again, f.againWhy = true, "by Update"
		bumpGenLocked(f)
		h.life.Unlock()
		return nil
	}
	f.owned = true
	h.life.Unlock()
	h.drive(f, true)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != Failed {
		return nil
	}
	return f.err
}

// disposeEffects undoes f's effects LIFO, attempting every one. It runs
// disposers, so h.life must not be held. all joins every error (child fibers' included); own joins only
// the errors of f's own disposers, which is what f logs (a child fiber logs
// its own).
func (h *Host) disposeEffects(f *Fiber) (all, own error) {
	f.endLifetime()
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
