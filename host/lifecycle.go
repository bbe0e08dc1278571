package host

import (
	"context"
	"fmt"
	"runtime/debug"
)

// The lifecycle: how fibers start, restart, fail and are disposed.
//
// Lock rules. Host.life is a plain mutex that guards bookkeeping only: a
// fiber's state, generation, configuration and context (written with both
// life and the fiber's mu held; read with either), its owned, again and
// disposing flags (life), the fibers set and writes to the service table.
// It is never held while plugin code runs: Apply, a disposer (effect
// teardown) or a FiberStatus listener. Functions named ...Locked are
// called with life held and do not release it; all others are called
// without it. So plugin code may load plugins, provide services, update
// and dispose fibers from any goroutine, including one that a running
// Apply waits for.
//
// Ownership. One goroutine at a time runs a fiber's start or restart: the
// one that claimed it (set owned, under life) and then calls drive. A
// restart requested while the fiber is owned (by a service change or an
// Update, from the owner's own Apply or from another goroutine) does not
// wait for the owner: it marks the fiber (again), makes the running
// start's context stale, and returns; the owner runs the restart as soon
// as the current step returns, before drive returns. Disposal claims
// nothing: it marks the fiber disposing and undoes its effects at once on
// the calling goroutine; an owner checks disposing after every step that
// ran plugin code and stops.
//
// FiberStatus is announced after the change it reports, with life
// released, on the goroutine that made the change.

// statusChange is a state change to announce once life is released.
type statusChange struct {
	f        *Fiber
	from, to State
	err      error
}

// setStateLocked changes f's state; the caller announces the returned
// change after releasing h.life.
func (h *Host) setStateLocked(f *Fiber, to State, err error) statusChange {
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
	return statusChange{f: f, from: from, to: to, err: err}
}

// announce emits FiberStatus for a change (nothing when the state did not
// change); h.life must not be held, since listeners are plugin code.
func (h *Host) announce(ch statusChange) {
	if ch.from == ch.to {
		return
	}
	_ = Emit(context.Background(), h.Emitter(""), FiberStatus, StatusChange{Fiber: ch.f, From: ch.from, To: ch.to, Err: ch.err})
}

// bumpGenLocked makes every context of f's current run stale: registrations
// through them are refused from now on.
func bumpGenLocked(f *Fiber) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gen++
	return f.gen
}

// drive runs f's start (restart false) or restart (restart true) on the
// calling goroutine, which owns f: the caller set f.owned under h.life.
// Restarts requested while it runs are run here too, up to MaxRestarts in
// a row; drive releases f when it has settled with none left, or when f is
// disposed.
func (h *Host) drive(f *Fiber, restart bool) {
	for n := 0; ; n++ {
		if restart {
			h.unload(f, "unloading for restart")
		}
		h.start(f)
		h.life.Lock()
		if f.disposing || !f.again {
			f.owned = false
			h.life.Unlock()
			return
		}
		f.again = false
		why := f.againWhy
		if n >= MaxRestarts {
			h.life.Unlock()
			h.fail(f, fmt.Errorf("host: fiber %s: restart requested %d times in a row (last %s): %w", f.name, MaxRestarts+1, why, ErrRestartLoop))
			h.life.Lock()
			// A request that arrived while failing belongs to the loop
			// that just failed: dropped.
			f.again = false
			f.owned = false
			h.life.Unlock()
			return
		}
		h.life.Unlock()
		restart = true
	}
}

// requestRestartLocked asks for a restart of f after a change of service k. It
// returns run = true when the caller now owns f and must call drive(f,
// true); when f is owned already, the owner restarts it instead (see
// drive), and f's current run is made stale at once. Fibers that are not
// started, settled or starting (new, unloading, disposed) are left alone:
// whatever runs them next reads the current services and configuration.
func (h *Host) requestRestartLocked(f *Fiber, k slotKey) (run bool) {
	if f.disposing {
		return false
	}
	switch f.state {
	case Pending, Loading, Active, Failed:
	default:
		return false
	}
	if f.owned {
		f.again, f.againWhy = true, fmt.Sprintf("by a change of service %q", k)
		bumpGenLocked(f)
		return false
	}
	f.owned = true
	return true
}

// start starts f, which the calling goroutine owns: Pending when a required
// service is missing, otherwise Loading, Apply, then Active or Failed
// (rolled back). It stops early, leaving the outcome to drive, when f is
// disposed or a restart is requested meanwhile.
func (h *Host) start(f *Fiber) {
	if f.plugin == nil {
		return
	}
	h.life.Lock()
	if f.disposing {
		h.life.Unlock()
		return
	}
	f.again = false // this start reads the current services and configuration
	gen := bumpGenLocked(f)
	if missing := h.missingLocked(f); len(missing) > 0 {
		ch := h.setStateLocked(f, Pending, nil)
		h.life.Unlock()
		f.log.Debug().Strs("services", missing).Msg("pending: waiting for services")
		h.announce(ch)
		return
	}
	f.mu.Lock()
	base := f.ctx
	c := &Context{h: h, fiber: f, gen: gen, scope: base.scope, iso: base.iso}
	f.ctx = c
	f.mu.Unlock()
	ch := h.setStateLocked(f, Loading, nil)
	h.life.Unlock()
	h.announce(ch)

	h.life.Lock()
	stop := h.interruptedLocked(f, gen)
	h.life.Unlock()
	if stop {
		return // a FiberStatus listener disposed or restarted f
	}
	err := safeApply(f.plugin, c)
	h.life.Lock()
	if h.interruptedLocked(f, gen) {
		h.life.Unlock()
		return // disposed, updated or restarted while Apply ran
	}
	if err == nil {
		ch = h.setStateLocked(f, Active, nil)
		h.life.Unlock()
		h.announce(ch)
		return
	}
	// The failed run's context is stale from now on, as after any stopped
	// run: what it would register (during the rollback, or later from a
	// goroutine Apply started) is refused.
	bumpGenLocked(f)
	h.life.Unlock()
	withErr(f.log.Error(), err).Msg("apply failed; rolling back")
	if rerr, _ := h.disposeEffects(f); rerr != nil {
		withErr(f.log.Error(), rerr).Msg("rolling back a failed apply")
		err = fmt.Errorf("%w (rollback: %w)", err, rerr)
	}
	h.life.Lock()
	if f.disposing || f.again {
		h.life.Unlock()
		return
	}
	ch = h.setStateLocked(f, Failed, err)
	h.life.Unlock()
	h.announce(ch)
}

// interruptedLocked reports whether f's start with generation gen must
// stop: f is being disposed, or a restart was requested.
func (h *Host) interruptedLocked(f *Fiber, gen uint64) bool {
	f.mu.Lock()
	stale := f.gen != gen
	f.mu.Unlock()
	return f.disposing || f.again || stale
}

// unload undoes the effects of f's run (f is owned by the caller) when it
// has one: Active, Failed or Loading go Unloading; Pending and new fibers
// have nothing to undo.
func (h *Host) unload(f *Fiber, msg string) {
	h.life.Lock()
	if f.disposing {
		h.life.Unlock()
		return
	}
	switch f.state {
	case Active, Failed, Loading:
	default:
		h.life.Unlock()
		return
	}
	ch := h.setStateLocked(f, Unloading, nil)
	h.life.Unlock()
	h.announce(ch)
	if _, own := h.disposeEffects(f); own != nil {
		withErr(f.log.Error(), own).Msg(msg)
	}
}

// fail stops f (owned by the caller) and leaves it Failed with err.
func (h *Host) fail(f *Fiber, err error) {
	h.unload(f, "unloading")
	h.life.Lock()
	if f.disposing {
		// Disposed while unloading (by a FiberStatus listener): it stays
		// disposed.
		h.life.Unlock()
		return
	}
	bumpGenLocked(f) // contexts of the stopped run are stale
	ch := h.setStateLocked(f, Failed, err)
	h.life.Unlock()
	withErr(f.log.Error(), err).Msg("stopped")
	h.announce(ch)
}

// dispose is the body of a fiber's disposal. The first call disposes;
// any later one (from a disposer or FiberStatus listener of that disposal,
// or from another goroutine) returns nil at once, without waiting.
func (h *Host) dispose(f *Fiber) error {
	h.life.Lock()
	if f.disposing {
		h.life.Unlock()
		return nil
	}
	f.disposing = true
	ch := h.setStateLocked(f, Unloading, nil)
	h.life.Unlock()
	h.announce(ch)
	err, own := h.disposeEffects(f)
	if own != nil {
		withErr(f.log.Error(), own).Msg("disposing")
	}
	h.life.Lock()
	h.fmu.Lock()
	delete(h.fibers, f)
	h.fmu.Unlock()
	ch = h.setStateLocked(f, Disposed, nil)
	h.life.Unlock()
	h.announce(ch)
	return err
}

func safeApply(p Plugin, c *Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = fmt.Errorf("host: Apply panicked: %w\n%s", e, debug.Stack())
			} else {
				err = fmt.Errorf("host: Apply panicked: %v\n%s", v, debug.Stack())
			}
		}
	}()
	return p.Apply(c)
}
