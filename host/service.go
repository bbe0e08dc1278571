package host

import (
	"cmp"
	"errors"
	"fmt"
	"reflect"
	"slices"

	"github.com/dsh-go/dsh/events"
)

// ErrNoService is wrapped by the error [Service.Get] returns when the
// service is not provided (as seen from the context it is read through).
var ErrNoService = errors.New("service not provided")

// ServiceKey is a declared service, known without its Go type: what an
// [Injector] lists, what [Context.Isolate] hides, what conformance kits and
// catalogs iterate over. Its only implementation is [Service], so every
// ServiceKey has a valid name (see [NewService]) or is the zero Service,
// which names nothing and is refused wherever it is used.
type ServiceKey interface {
	// Name returns the service's name, as logs, errors, [Stats] and the
	// catalog print it.
	Name() string
	// LookupAny is [Service.Lookup] for a caller that does not know T: the
	// service's current value as seen from c, as an any.
	LookupAny(c *Context) (any, bool)
	// ProvideAny is [Service.Provide] for a caller that does not know T
	// (a conformance kit re-providing what it found with LookupAny). v must
	// be a T; anything else is refused with an error naming both types.
	ProvideAny(c *Context, v any) (Disposer, error)

	isServiceKey()
}

// Service is a service declared once with its name and the Go type of its
// values, the way [events.Event] declares an event: the provider provides
// through it, consumers read it and plugins require it through it, so a
// call site never pairs a name with a type.
//
//	var Clock = host.NewService[ClockFunc]("clock")
//	...
//	_, err := Clock.Provide(c, time.Now) // in the provider's Apply
//	now, err := Clock.Get(c)              // in a consumer
//	func (p) Inject() []host.ServiceKey { return []host.ServiceKey{Clock} }
//
// Everything provided through a Service[T] is a T, so reading it back
// cannot fail on the type. Two Services with the same name are the same
// service (names are what the host, logs and catalog know); declaring one
// name with two types is a programming error that [Service.Get] reports.
// A Service is a small comparable value, safe for concurrent use; its zero
// value names no service and every method refuses it.
type Service[T any] struct {
	name string
}

// NewService declares the service name with values of type T. The name
// must pass [ValidateServiceName]; NewService panics otherwise, since a
// service is declared once, in a package-level variable, like an event
// handle (check a name that comes from input with ValidateServiceName
// first).
func NewService[T any](name string) Service[T] {
	if err := ValidateServiceName(name); err != nil {
		panic(fmt.Sprintf("host: declaring service %q: %v", name, err))
	}
	return Service[T]{name: name}
}

var _ ServiceKey = Service[int]{}

// Name returns the service's name ("" for the zero Service).
func (s Service[T]) Name() string { return s.name }

// String returns the service's name and type, e.g. `service "tools" (*tools.Registry)`.
func (s Service[T]) String() string {
	return fmt.Sprintf("service %q (%s)", s.name, typeName[T]())
}

func (Service[T]) isServiceKey() {}

// check refuses the zero Service.
func (s Service[T]) check() error {
	if s.name == "" {
		return fmt.Errorf("host: the zero Service[%s] names no service; declare services with NewService", typeName[T]())
	}
	return nil
}

// Provide makes v available as the service (in c's isolation view) until
// the returned disposer runs or c's fiber is disposed. Providing a service
// that is already provided replaces it (the newest provider wins, and the
// previous one is restored when the newest goes away). Plugins that
// inject the service start, restart or go pending accordingly, before
// Provide returns (or, when called from inside a lifecycle operation, as
// part of it). A nil v (a nil interface value) is refused.
func (s Service[T]) Provide(c *Context, v T) (Disposer, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return c.provide(s.name, v)
}

// ProvideAny implements [ServiceKey]: it is [Service.Provide] when v is a
// T, and an error otherwise.
func (s Service[T]) ProvideAny(c *Context, v any) (Disposer, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	t, ok := v.(T)
	if !ok {
		return nil, fmt.Errorf("host: providing %v: the value is a %T, not a %s", s, v, typeName[T]())
	}
	return c.provide(s.name, t)
}

// Lookup returns the service as seen from c. It is a non-reactive read:
// the caller is not restarted when the service changes, so read it again
// each time it is needed (the optional-dependency pattern). ok is false
// when the service is not provided (or was provided as another type
// through another Service of the same name; see [Service.Get]).
func (s Service[T]) Lookup(c *Context) (v T, ok bool) {
	if s.name == "" {
		return v, false
	}
	x, ok := c.h.lookup(c.key(s.name))
	if !ok {
		return v, false
	}
	v, ok = x.(T)
	return v, ok
}

// LookupAny implements [ServiceKey]: the service's value as seen from c,
// whatever its type.
func (s Service[T]) LookupAny(c *Context) (any, bool) {
	if s.name == "" {
		return nil, false
	}
	return c.h.lookup(c.key(s.name))
}

// Get is [Service.Lookup] with an error that says what was wrong: the
// service is not provided as seen from c (the error wraps [ErrNoService]
// and names the service and the plugin reading it), or its
// value is not a T because another Service declared the same name with
// another type.
func (s Service[T]) Get(c *Context) (T, error) {
	if s.name != "" {
		if x, ok := c.h.lookup(c.key(s.name)); ok {
			if v, ok := x.(T); ok {
				return v, nil
			}
		}
	}
	return s.getErr(c)
}

// getErr is the slow path of Get: it says why there was no T.
func (s Service[T]) getErr(c *Context) (T, error) {
	var zero T
	if err := s.check(); err != nil {
		return zero, err
	}
	x, ok := c.h.lookup(c.key(s.name))
	if !ok {
		return zero, fmt.Errorf("host: service %q, read by %s: %w", s.name, c.fiber.Name(), ErrNoService)
	}
	if v, ok := x.(T); ok {
		return v, nil // provided since Get looked
	}
	return zero, fmt.Errorf("host: service %q, read by %s as a %s: its value is a %T (two Services declare the name with different types)", s.name, c.fiber.Name(), typeName[T](), x)
}

type slotKey struct {
	ns   string
	name string
}

func (k slotKey) String() string {
	if k.ns == "" {
		return k.name
	}
	return k.ns + "/" + k.name
}

type provision struct {
	value any
	owner *Fiber
}

// serviceSlot is the stack of providers of one name: the last provider
// wins; removing it restores the one before.
type serviceSlot struct {
	stack []*provision
}

func (c *Context) key(name string) slotKey {
	return slotKey{ns: c.namespace(name), name: name}
}

// MaxServiceNameLen is the longest accepted service name, in bytes.
const MaxServiceNameLen = 128

// ErrInvalidServiceName is wrapped by every error [ValidateServiceName]
// returns.
var ErrInvalidServiceName = errors.New("invalid service name")

// ValidateServiceName checks a service name. The grammar is the one of
// event names (see events.ValidateName): one or more segments separated by
// '/', each starting with a lower-case ASCII letter or digit and continuing
// with lower-case letters, digits, '-', '_' or '.'; at most
// [MaxServiceNameLen] bytes. "tools", "approval" and "system-prompt" are
// accepted; "systemPrompt" (upper case), "a//b" and "/x" are refused. The
// error names the offending offset.
func ValidateServiceName(name string) error {
	if err := events.CheckSegments(name, MaxServiceNameLen); err != nil {
		return fmt.Errorf("host: %w: %w", ErrInvalidServiceName, err)
	}
	return nil
}

// provide makes v available as service name; see [Service.Provide].
func (c *Context) provide(name string, v any) (Disposer, error) {
	if err := ValidateServiceName(name); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("host: providing service %q: the value is nil", name)
	}
	h := c.h
	k := c.key(name)
	p := &provision{value: v, owner: c.fiber}
	h.life.Lock()
	// The push and the scan for dependents are one bookkeeping step, so a
	// start that found the service missing is either seen here (and
	// restarted) or sees the service.
	d, err := c.track(EffectService, name, func() error {
		h.smu.Lock()
		slot := h.services[k]
		if slot == nil {
			slot = &serviceSlot{}
			h.services[k] = slot
		}
		slot.stack = append(slot.stack, p)
		h.smu.Unlock()
		return nil
	}, func() error {
		h.life.Lock()
		h.smu.Lock()
		slot := h.services[k]
		wasTop := false
		if slot != nil {
			if i := slices.Index(slot.stack, p); i >= 0 {
				wasTop = i == len(slot.stack)-1
				slot.stack = slices.Delete(slot.stack, i, i+1)
			}
			if len(slot.stack) == 0 {
				delete(h.services, k)
			}
		}
		h.smu.Unlock()
		var deps []*Fiber
		if wasTop {
			deps = h.dependentsLocked(k, c.fiber)
		}
		h.life.Unlock()
		h.restartDependents(deps, k)
		return nil
	})
	if err != nil {
		h.life.Unlock()
		return nil, err
	}
	deps := h.dependentsLocked(k, c.fiber)
	h.life.Unlock()
	h.restartDependents(deps, k)
	return d, nil
}

func (h *Host) lookup(k slotKey) (any, bool) {
	h.smu.RLock()
	defer h.smu.RUnlock()
	slot := h.services[k]
	if slot == nil || len(slot.stack) == 0 {
		return nil, false
	}
	return slot.stack[len(slot.stack)-1].value, true
}

// typeName returns the name of T (which may be an interface type).
func typeName[T any]() string {
	return reflect.TypeFor[T]().String()
}

// missingLocked returns the required services of f that are not provided,
// as seen from f's context.
func (h *Host) missingLocked(f *Fiber) []string {
	var out []string
	for _, name := range f.inject {
		if _, ok := h.lookup(f.ctx.key(name)); !ok {
			out = append(out, name)
		}
	}
	return out
}

// dependentsLocked returns the plugin fibers that inject k, oldest first.
// Neither the provider's own fiber nor any of its ancestors is included: a
// fiber is never restarted by its own provision, since restarting an
// ancestor would dispose the provider, withdraw the service, and loop.
func (h *Host) dependentsLocked(k slotKey, provider *Fiber) []*Fiber {
	var deps []*Fiber
	for f := range h.fibers {
		if f.plugin == nil || f.ctx == nil || isAncestorOrSelf(f, provider) {
			continue
		}
		if slices.Contains(f.inject, k.name) && f.ctx.key(k.name) == k {
			deps = append(deps, f)
		}
	}
	slices.SortFunc(deps, func(a, b *Fiber) int { return cmp.Compare(a.seq, b.seq) })
	return deps
}

// restartDependents starts, restarts or suspends deps after a change of
// service k, one after the other on the calling goroutine; a dependent
// that is starting at that moment is restarted by the goroutine starting
// it (see requestRestartLocked).
func (h *Host) restartDependents(deps []*Fiber, k slotKey) {
	for _, f := range deps {
		h.life.Lock()
		run := h.requestRestartLocked(f, k)
		h.life.Unlock()
		if run {
			h.drive(f, true)
		}
	}
}

// MaxRestarts bounds how many restarts may follow one another while a
// fiber is starting: a restart requested while the fiber starts (by a
// change of a service it injects, or by [Fiber.Update]) runs when that
// start returns, and the start after more than MaxRestarts of them in a
// row fails the fiber with [ErrRestartLoop] instead.
const MaxRestarts = 32

// ErrRestartLoop is wrapped by the error of a fiber that was asked to
// restart more than [MaxRestarts] times in a row while starting:
// typically two plugins that each inject a service and (through a child)
// provide it, so that each one's start replaces the other's provider,
// forever.
var ErrRestartLoop = errors.New("restart loop")

// isAncestorOrSelf reports whether a is d or one of d's ancestors.
func isAncestorOrSelf(a, d *Fiber) bool {
	for ; d != nil; d = d.parent {
		if d == a {
			return true
		}
	}
	return false
}
