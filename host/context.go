package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// ScopeKey identifies an agent scope. The empty key is the global scope.
type ScopeKey string

// MaxScopeKeyLen is the longest accepted scope key, in bytes.
const MaxScopeKeyLen = 128

// ErrInvalidScopeKey is wrapped by every error [ValidateScopeKey] returns.
var ErrInvalidScopeKey = errors.New("invalid scope key")

// ValidateScopeKey checks an agent scope key: 1 to [MaxScopeKeyLen] bytes of
// printable ASCII other than space (0x21–0x7e). Keys appear in logs,
// session event ids and UIs, so control characters and invisible runes are
// refused. The error names the offending offset.
func ValidateScopeKey(k string) error {
	if k == "" {
		return fmt.Errorf("host: %w: empty (the empty key is the global scope and cannot be created)", ErrInvalidScopeKey)
	}
	if len(k) > MaxScopeKeyLen {
		return fmt.Errorf("host: %w: %d bytes, longer than %d", ErrInvalidScopeKey, len(k), MaxScopeKeyLen)
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return fmt.Errorf("host: %w: %q: byte 0x%02x at offset %d is not printable ASCII", ErrInvalidScopeKey, k, k[i], i)
		}
	}
	return nil
}

// ErrFiberClosed is wrapped by the error a registration returns when the
// context's fiber is unloading or disposed, or when the context belongs to
// an earlier run of a restarted plugin or to a run that failed.
var ErrFiberClosed = errors.New("fiber no longer accepts registrations")

// Disposer undoes one registration. It is idempotent: only the first call
// undoes (and reports an error); calling it again, after its fiber was
// disposed, or while the first call is still running on another goroutine
// does nothing and returns nil at once.
type Disposer func() error

// Context is a view of the host through which a plugin works: a lifetime
// (its fiber, which owns everything registered through the context), an
// agent scope ("" for global) and a service-isolation view. It is not a
// request context: work that can be cancelled takes a context.Context.
// A Context is safe for concurrent use.
type Context struct {
	h     *Host
	fiber *Fiber
	gen   uint64 // fiber generation this context was made for
	scope ScopeKey
	iso   map[string]string // service name -> namespace
}

// Host returns the host the context belongs to.
func (c *Context) Host() *Host { return c.h }

// Fiber returns the fiber that owns registrations made through c.
func (c *Context) Fiber() *Fiber { return c.fiber }

// ScopeKey returns the agent scope of c ("" = global).
func (c *Context) ScopeKey() ScopeKey { return c.scope }

// Emitter returns an emitter dispatching for c's scope.
func (c *Context) Emitter() Emitter { return Emitter{h: c.h, scope: c.scope} }

// Logger returns the logger of c's fiber (it has a "plugin" field).
func (c *Context) Logger() *zerolog.Logger { return c.fiber.Logger() }

// Lifetime returns a context.Context that is cancelled when the run of
// c's fiber that c belongs to ends: when the fiber is disposed, restarted
// (by an update or a service change) or its start fails, before the first
// of its registrations is undone, so a disposer may wait for goroutines
// that run under it. Its cause wraps [ErrFiberClosed]. It is the context a
// plugin runs its background work under (sessions, reconnection loops,
// servers), in the role of caddy.Context or an fx OnStop hook. Every call
// for one run returns the same context; a context of a run that has ended
// (or of a fiber being unloaded) gets one already cancelled. It carries no
// values and no deadline.
func (c *Context) Lifetime() context.Context {
	f := c.fiber
	f.mu.Lock()
	if err := f.acceptsLocked(c.gen); err != nil {
		f.mu.Unlock()
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("host: %w", err))
		return ctx
	}
	if f.life == nil {
		ctx, cancel := context.WithCancelCause(context.Background())
		f.life = &lifetime{ctx: ctx, cancel: cancel}
	}
	ctx := f.life.ctx
	f.mu.Unlock()
	return ctx
}

// lifetime is one run's [Context.Lifetime].
type lifetime struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// endLifetime cancels the lifetime of f's current run, if one was made;
// the next call of Lifetime through a context of the next run makes a new
// one.
func (f *Fiber) endLifetime() {
	f.mu.Lock()
	lt := f.life
	f.life = nil
	f.mu.Unlock()
	if lt != nil {
		lt.cancel(fmt.Errorf("host: the run of fiber %s ended: %w", f.name, ErrFiberClosed))
	}
}

// Config returns the configuration c's plugin was loaded (or last updated)
// with; nil for contexts that are not a plugin's.
func (c *Context) Config() any {
	c.fiber.mu.Lock()
	defer c.fiber.mu.Unlock()
	return c.fiber.config
}

// ConfigAs returns c's configuration as a T; ok is false when it is not one.
func ConfigAs[T any](c *Context) (T, bool) {
	v, ok := c.Config().(T)
	return v, ok
}

// ErrConfigType is wrapped by [DecodeConfig] when a plugin was given a
// configuration of the wrong type.
var ErrConfigType = errors.New("wrong configuration type")

// DecodeConfig returns c's configuration as a T, the way plugins take it:
// a T, a *T (nil meaning the zero T) or nil (the zero T). Anything else is
// an error wrapping [ErrConfigType] that names both types. When T has a
// Validate() error method, DecodeConfig calls it and returns its error
// (wrapped), so a plugin's Apply starts with a checked configuration. The
// plugin is named by the error [Context.Plugin] returns and by the
// fiber's log.
func DecodeConfig[T any](c *Context) (T, error) {
	var zero, cfg T
	switch v := c.Config().(type) {
	case nil:
	case T:
		cfg = v
	case *T:
		if v != nil {
			cfg = *v
		}
	default:
		return zero, fmt.Errorf("host: %w: got %T, want %T", ErrConfigType, v, zero)
	}
	if v, ok := any(cfg).(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			return zero, fmt.Errorf("host: invalid configuration: %w", err)
		}
	}
	return cfg, nil
}

// Scope creates an agent scope: a child fiber owned by c's fiber and a
// context whose registrations (tools, listeners, guards, restrictions)
// belong to that scope and are undone when the scope's fiber is disposed
// (or when c's fiber is). Scope-filtered events dispatched for key reach
// listeners registered through the returned context; those registered
// through other scopes never see them.
func (c *Context) Scope(key ScopeKey) (*Context, error) {
	if err := ValidateScopeKey(string(key)); err != nil {
		return nil, err
	}
	// Created and made Active in one bookkeeping step, so a concurrent
	// dispose of c's fiber sees either no scope or an active one.
	h := c.h
	h.life.Lock()
	f, err := c.childLocked("scope:"+string(key), nil, nil, nil)
	if err != nil {
		h.life.Unlock()
		return nil, err
	}
	sc := &Context{h: h, fiber: f, scope: key, iso: c.iso}
	f.mu.Lock()
	f.ctx = sc
	f.gen++
	sc.gen = f.gen
	f.mu.Unlock()
	ch := h.setStateLocked(f, Active, nil)
	h.life.Unlock()
	h.announce(ch)
	return sc, nil
}

// Isolate returns a view of c in which the given services live in a fresh
// private namespace: what is provided or injected through the view (and
// through plugins loaded from it) as those services is invisible to, and
// does not see, the rest of the host. Nil and zero keys are ignored.
func (c *Context) Isolate(services ...ServiceKey) *Context {
	iso := maps.Clone(c.iso)
	if iso == nil {
		iso = map[string]string{}
	}
	for _, k := range services {
		if k == nil || k.Name() == "" {
			continue
		}
		iso[k.Name()] = fmt.Sprintf("iso%d", c.h.nsSeq.Add(1))
	}
	return &Context{h: c.h, fiber: c.fiber, gen: c.gen, scope: c.scope, iso: iso}
}

func (c *Context) namespace(name string) string { return c.iso[name] }

// EffectKind classifies a fiber's registrations for introspection.
type EffectKind string

// The effect kinds the host records. Other packages may use their own
// (package tools uses "tool", "guard" and "restriction").
const (
	EffectListener EffectKind = "listener"
	EffectService  EffectKind = "service"
	EffectPlugin   EffectKind = "plugin"
	EffectScope    EffectKind = "scope"
	EffectCustom   EffectKind = "effect"
)

type effect struct {
	kind     EffectKind
	name     string
	teardown func() error
	child    *Fiber // for plugin and scope effects
	ran      atomic.Bool
}

// run runs the teardown once. The first call runs it and returns its
// error; every other call (a disposer called again, or after its fiber was
// disposed, or while the first call is still running) returns nil at once,
// so an error is reported exactly once and no call waits for another.
func (e *effect) run() (err error) {
	if !e.ran.CompareAndSwap(false, true) {
		return nil
	}
	defer func() {
		if v := recover(); v != nil {
			if perr, ok := v.(error); ok {
				err = fmt.Errorf("host: disposer of %s %q panicked: %w", e.kind, e.name, perr)
			} else {
				err = fmt.Errorf("host: disposer of %s %q panicked: %v", e.kind, e.name, v)
			}
		}
	}()
	return e.teardown()
}

// Track records an already-performed registration on c's fiber: teardown
// is run once, when the returned disposer is called or the fiber is
// disposed, whichever comes first. Plugins and libraries built on the host
// (the tool registry) use it so that everything they register dies with
// the registering fiber. It fails with [ErrFiberClosed] when the fiber no
// longer accepts registrations; teardown is then not recorded (and the
// caller must undo what it did).
func (c *Context) Track(kind EffectKind, name string, teardown func() error) (Disposer, error) {
	return c.track(kind, name, nil, teardown)
}

// Effect runs setup now and records the cleanup it returns on c's fiber.
// If setup fails, nothing is recorded and its error is returned. If the
// fiber stopped accepting registrations while setup ran, cleanup runs at
// once and [ErrFiberClosed] is returned. setup may itself register through
// c.
func (c *Context) Effect(name string, setup func() (cleanup func() error, err error)) (Disposer, error) {
	c.fiber.mu.Lock()
	err := c.fiber.acceptsLocked(c.gen)
	c.fiber.mu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("host: registering %s %q: %w", EffectCustom, name, err)
	}
	cleanup, err := setup()
	if err != nil {
		return nil, err
	}
	if cleanup == nil {
		cleanup = func() error { return nil }
	}
	d, err := c.track(EffectCustom, name, nil, cleanup)
	if err != nil {
		return nil, errors.Join(err, cleanup())
	}
	return d, nil
}

// track checks that c's fiber accepts registrations, runs do (if any) and
// records teardown. The check and the append happen under the fiber's lock
// so that a concurrent dispose either sees the effect or refuses it.
func (c *Context) track(kind EffectKind, name string, do func() error, teardown func() error) (Disposer, error) {
	f := c.fiber
	e := &effect{kind: kind, name: name, teardown: teardown}
	f.mu.Lock()
	if err := f.acceptsLocked(c.gen); err != nil {
		f.mu.Unlock()
		return nil, fmt.Errorf("host: registering %s %q: %w", kind, name, err)
	}
	if do != nil {
		if err := do(); err != nil {
			f.mu.Unlock()
			return nil, err
		}
	}
	f.effects = append(f.effects, e)
	f.mu.Unlock()
	return func() error {
		err := e.run()
		f.remove(e)
		return err
	}, nil
}
