package host

import (
	"fmt"
	"reflect"
	"runtime/debug"
)

// Plugin is a unit of functionality loaded into a host. Apply registers
// what the plugin provides (listeners, services, tools, child plugins)
// through c; everything registered through c is undone when the plugin's
// fiber is disposed or restarted. An error (or panic) from Apply fails the
// fiber and rolls back what Apply had registered.
//
// Apply runs with the host's lifecycle lock held by the calling goroutine:
// it may itself load plugins, provide services and dispose fibers, but must
// not wait for another goroutine that does.
type Plugin interface {
	Apply(c *Context) error
}

// Named is implemented by plugins that have a name (used in logs, fiber
// names and the catalog). Unnamed plugins are named after their Go type.
type Named interface {
	Name() string
}

// Injector is implemented by plugins that require services: the fiber stays
// Pending until every named service is provided (as seen from the context
// the plugin is loaded through), starts then, restarts when a provider is
// replaced, and goes back to Pending when one goes away.
type Injector interface {
	Inject() []string
}

// PluginFunc adapts a function to [Plugin].
type PluginFunc func(c *Context) error

// Apply implements [Plugin].
func (f PluginFunc) Apply(c *Context) error { return f(c) }

// Define returns a named plugin that requires the given services.
func Define(name string, inject []string, apply func(c *Context) error) Plugin {
	return &defined{name: name, inject: inject, apply: apply}
}

type defined struct {
	name   string
	inject []string
	apply  func(c *Context) error
}

func (d *defined) Name() string           { return d.name }
func (d *defined) Inject() []string       { return d.inject }
func (d *defined) Apply(c *Context) error { return d.apply(c) }

func pluginName(p Plugin) string {
	if n, ok := p.(Named); ok && n.Name() != "" {
		return n.Name()
	}
	t := reflect.TypeOf(p)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// Plugin loads p as a child of c's fiber with the given configuration
// (read back with [Context.Config]). When it returns, the fiber is Active,
// Failed (see [Fiber.Err]) or Pending (a required service is missing). The
// error is non-nil only when the fiber could not be created (p is nil, or
// c's fiber no longer accepts registrations). A child plugin is disposed
// with its parent.
func (c *Context) Plugin(p Plugin, config any) (*Fiber, error) {
	if p == nil {
		return nil, fmt.Errorf("host: loading a nil plugin")
	}
	// Creation and start are one lifecycle critical section: a concurrent
	// dispose of c's fiber cannot slip in between and leave a disposed
	// fiber to be started.
	c.h.life.Lock()
	defer c.h.life.Unlock()
	f, err := c.child(pluginName(p), p, config)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	f.ctx = &Context{h: c.h, fiber: f, scope: c.scope, iso: c.iso}
	f.mu.Unlock()
	c.h.start(f)
	return f, nil
}

// child creates a fiber owned by c's fiber, recorded as one of its effects.
func (c *Context) child(name string, p Plugin, config any) (*Fiber, error) {
	h := c.h
	h.life.Lock()
	defer h.life.Unlock()
	f := newFiber(h, c.fiber, name, p, config)
	kind := EffectPlugin
	if p == nil {
		kind = EffectScope
	}
	e := &effect{kind: kind, name: name, child: f, teardown: func() error { return h.dispose(f) }}
	pf := c.fiber
	pf.mu.Lock()
	if err := pf.acceptsLocked(c.gen); err != nil {
		pf.mu.Unlock()
		return nil, fmt.Errorf("loading %s: %w", name, err)
	}
	pf.effects = append(pf.effects, e)
	pf.mu.Unlock()
	f.self = e
	h.fmu.Lock()
	h.fibers[f] = struct{}{}
	h.fmu.Unlock()
	return f, nil
}

// start starts (or restarts after unloading) a plugin fiber; h.life held.
func (h *Host) start(f *Fiber) {
	if f.plugin == nil || f.disposing {
		return
	}
	if missing := h.missing(f); missing != "" {
		f.mu.Lock()
		f.gen++
		f.mu.Unlock()
		h.setState(f, Pending, nil)
		f.log.Debug().Str("service", missing).Msg("pending: waiting for service")
		return
	}
	f.mu.Lock()
	f.gen++
	gen := f.gen
	base := f.ctx
	c := &Context{h: h, fiber: f, gen: gen, scope: base.scope, iso: base.iso}
	f.ctx = c
	f.mu.Unlock()
	h.setState(f, Loading, nil)
	if f.disposing || f.gen != gen {
		// A FiberStatus listener disposed or restarted f.
		return
	}
	err := safeApply(f.plugin, c)
	f.mu.Lock()
	stale := f.gen != gen || f.state != Loading
	f.mu.Unlock()
	if stale {
		// Restarted or disposed from inside its own Apply: the newer run
		// owns the state now.
		return
	}
	if err != nil {
		f.log.Error().Err(err).Msg("apply failed; rolling back")
		// The failed run's context is stale from now on, as after any
		// stopped run: what it would register (during the rollback, or
		// later from a goroutine Apply started) is refused.
		f.mu.Lock()
		f.gen++
		f.mu.Unlock()
		if rerr, _ := h.disposeEffects(f); rerr != nil {
			f.log.Error().Err(rerr).Msg("rolling back a failed apply")
			err = fmt.Errorf("%w (rollback: %w)", err, rerr)
		}
		h.setState(f, Failed, err)
		return
	}
	h.setState(f, Active, nil)
}

// restart undoes a fiber's effects and starts it again; h.life held.
func (h *Host) restart(f *Fiber) {
	switch f.State() {
	case Disposed, Unloading:
		return
	case Active, Failed, Loading:
		h.setState(f, Unloading, nil)
		if _, own := h.disposeEffects(f); own != nil {
			f.log.Error().Err(own).Msg("unloading for restart")
		}
	}
	// start does nothing when f was disposed meanwhile (by a FiberStatus
	// listener or a disposer): a disposed fiber is never started again.
	h.start(f)
}

func safeApply(p Plugin, c *Context) (err error) {
	defer func() {
		if v := recover(); v != nil {
			if e, ok := v.(error); ok {
				err = fmt.Errorf("apply panicked: %w\n%s", e, debug.Stack())
			} else {
				err = fmt.Errorf("apply panicked: %v\n%s", v, debug.Stack())
			}
		}
	}()
	return p.Apply(c)
}
