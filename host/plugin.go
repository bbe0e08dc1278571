package host

import (
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
// (read back with [Context.Config]) and starts it on the calling goroutine.
// When it returns, the fiber is Active, Failed (see [Fiber.Err]) or Pending
// (a required service is missing), or Disposed when it was disposed while
// it started. The error is non-nil only when the fiber could not be created
// (p is nil, or c's fiber no longer accepts registrations). A child plugin
// is disposed with its parent.
func (c *Context) Plugin(p Plugin, config any) (*Fiber, error) {
	if p == nil {
		return nil, fmt.Errorf("host: loading a nil plugin")
	}
	h := c.h
	h.life.Lock()
	f, err := c.childLocked(pluginName(p), p, config)
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
	return f, nil
}

// childLocked creates a fiber owned by c's fiber, recorded as one of its
// effects.
func (c *Context) childLocked(name string, p Plugin, config any) (*Fiber, error) {
	h := c.h
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
