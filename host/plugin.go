package host

import (
	"errors"
	"fmt"
	"reflect"
)

// Plugin is a unit of functionality loaded into a host. Apply registers
// what the plugin provides (listeners, services, tools, child plugins)
// through c; everything registered through c is undone when the plugin's
// fiber is disposed or restarted. An error (or panic) from Apply fails the
// fiber and rolls back what Apply had registered.
//
// Apply runs on the goroutine that loads (or restarts) the plugin, with no
// host lock held: it may load plugins, provide services, update and
// dispose fibers, itself or through goroutines it waits for. A restart of
// the plugin requested while Apply runs (a service it injects was
// replaced, or its fiber was updated) makes Apply's context refuse
// further registrations and runs once Apply returns; a disposal makes it
// refuse them for good.
type Plugin interface {
	Apply(c *Context) error
}

// Named is implemented by plugins that have a name (used in logs, fiber
// names and the catalog). Unnamed plugins are named after their Go type.
type Named interface {
	Name() string
}

// Injector is implemented by plugins that require services: the fiber stays
// Pending until every listed service is provided (as seen from the context
// the plugin is loaded through), starts then, restarts when a provider is
// replaced, and goes back to Pending when one goes away. Inject is called
// once, when the plugin is loaded; a nil or zero key in the list is
// refused by [Context.Plugin].
type Injector interface {
	Inject() []ServiceKey
}

// PluginFunc adapts a function to [Plugin].
type PluginFunc func(c *Context) error

// Apply implements [Plugin].
func (f PluginFunc) Apply(c *Context) error { return f(c) }

// Define returns a plugin named name that requires the services in inject
// (see [Injector]; nil for none) and whose Apply is apply.
func Define(name string, inject []ServiceKey, apply func(c *Context) error) Plugin {
	return &defined{name: name, inject: inject, apply: apply}
}

type defined struct {
	name   string
	inject []ServiceKey
	apply  func(c *Context) error
}

func (d *defined) Name() string           { return d.name }
func (d *defined) Inject() []ServiceKey   { return d.inject }
func (d *defined) Apply(c *Context) error { return d.apply(c) }

// describe reads p's name and the names of the services it injects. Both
// are plugin methods, so they are called under recover and before any
// host lock is taken; a nil or zero key is refused.
func describe(p Plugin) (name string, inject []string, err error) {
	defer func() {
		if v := recover(); v != nil {
			name, inject = "", nil
			err = fmt.Errorf("host: loading a %T: its Name or Inject method panicked: %v", p, v)
		}
	}()
	name = pluginName(p)
	var names []string
	if inj, ok := p.(Injector); ok {
		for i, k := range inj.Inject() {
			if k == nil {
				return "", nil, fmt.Errorf("host: loading plugin %s: Inject()[%d] is nil", name, i)
			}
			if err := ValidateServiceName(k.Name()); err != nil {
				return "", nil, fmt.Errorf("host: loading plugin %s: Inject()[%d] (a %T) names no service: %w", name, i, k, err)
			}
			names = append(names, k.Name())
		}
	}
	return name, names, nil
}

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
// (read back with [Context.Config]) and starts it on the calling goroutine.
// A child plugin is disposed with its parent.
//
// The error says how the start ended, so callers need not inspect the
// fiber's state:
//
//   - nil: the fiber is Active;
//   - an error wrapping [ErrPending] (a *[PendingError] naming the missing
//     services): the fiber is Pending and starts when they are provided;
//   - an error wrapping the failure of Apply (see [Fiber.Err]): the fiber is
//     Failed, its registrations rolled back, and it restarts when a service
//     it injects changes or on [Fiber.Update];
//   - an error wrapping [ErrFiberClosed]: the fiber was disposed while it
//     started (by its own Apply, a FiberStatus listener or another
//     goroutine), or c's fiber no longer accepts registrations (the fiber
//     is then nil).
//
// Apart from that last case the fiber is returned with the error, so a
// pending or failed plugin can be kept, waited for or disposed. A nil p is
// an error (and a nil fiber).
func (c *Context) Plugin(p Plugin, config any) (*Fiber, error) {
	if p == nil {
		return nil, fmt.Errorf("host: loading a nil plugin")
	}
	name, inject, err := describe(p)
	if err != nil {
		return nil, err
	}
	h := c.h
	h.life.Lock()
	f, err := c.childLocked(name, p, inject, config)
	if err != nil {
		h.life.Unlock()
		return nil, err
	}
	f.mu.Lock()
	f.ctx = &Context{h: h, fiber: f, scope: c.scope, iso: c.iso}
	f.mu.Unlock()
	f.owned = true // this goroutine starts it
	h.life.Unlock()
	h.drive(f, false)
	return f, h.loadErr(f)
}

// ErrPending is matched (errors.Is) by the error [Context.Plugin] returns
// for a plugin that is pending on a service; the error is a
// *[PendingError].
var ErrPending = errors.New("host: plugin is pending on a service")

// PendingError is returned by [Context.Plugin] for a plugin that stays
// Pending because services it injects are not provided (as seen from the
// context it was loaded through). It matches [ErrPending].
type PendingError struct {
	// Plugin is the plugin's name.
	Plugin string
	// Missing lists the required services that were not provided, in the
	// order the plugin declared them.
	Missing []string
}

// Error implements error.
func (e *PendingError) Error() string {
	return fmt.Sprintf("host: plugin %s is pending: services %q are not provided", e.Plugin, e.Missing)
}

// Is reports whether target is [ErrPending].
func (e *PendingError) Is(target error) bool { return target == ErrPending }

// loadErr is what Plugin returns for f once its start has returned.
func (h *Host) loadErr(f *Fiber) error {
	h.life.Lock()
	defer h.life.Unlock()
	f.mu.Lock()
	st, err := f.state, f.err
	f.mu.Unlock()
	switch {
	case f.disposing || st == Disposed:
		return fmt.Errorf("host: plugin %s was disposed while it started: %w", f.name, ErrFiberClosed)
	case st == Pending:
		return &PendingError{Plugin: f.name, Missing: h.missingLocked(f)}
	case st == Failed:
		return fmt.Errorf("host: plugin %s failed: %w", f.name, err)
	}
	// Active, or restarting on behalf of a request from another goroutine
	// that came in after this start returned (a concurrent Update, say):
	// this start succeeded.
	return nil
}

// childLocked creates a fiber owned by c's fiber, recorded as one of its
// effects.
func (c *Context) childLocked(name string, p Plugin, inject []string, config any) (*Fiber, error) {
	h := c.h
	f := newFiber(h, c.fiber, name, p, inject, config)
	kind := EffectPlugin
	if p == nil {
		kind = EffectScope
	}
	e := &effect{kind: kind, name: name, child: f, teardown: func() error { return h.dispose(f) }}
	pf := c.fiber
	pf.mu.Lock()
	if err := pf.acceptsLocked(c.gen); err != nil {
		pf.mu.Unlock()
		return nil, fmt.Errorf("host: loading %s: %w", name, err)
	}
	pf.effects = append(pf.effects, e)
	pf.mu.Unlock()
	f.self = e
	h.fmu.Lock()
	h.fibers[f] = struct{}{}
	h.fmu.Unlock()
	return f, nil
}
