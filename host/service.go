package host

import (
	"cmp"
	"errors"
	"fmt"
	"slices"

	"github.com/dsh-go/dsh/events"
)

// ErrNoService is wrapped by [Get] when a service is not provided.
var ErrNoService = errors.New("service not provided")

type serviceKey struct {
	ns   string
	name string
}

func (k serviceKey) String() string {
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

func (c *Context) key(name string) serviceKey {
	return serviceKey{ns: c.namespace(name), name: name}
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

// Provide makes v available as service name (in c's isolation view) until
// the returned disposer runs or c's fiber is disposed. Providing a name
// that is already provided replaces it (the newest provider wins, and the
// previous one is restored when the newest goes away). Plugins that inject
// the name start, restart or go pending accordingly, before Provide returns
// (or, when called from inside a lifecycle operation, as part of it).
func (c *Context) Provide(name string, v any) (Disposer, error) {
	if err := ValidateServiceName(name); err != nil {
		return nil, err
	}
	if v == nil {
		return nil, fmt.Errorf("host: providing service %q: nil value", name)
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

func (h *Host) lookup(k serviceKey) (any, bool) {
	h.smu.RLock()
	defer h.smu.RUnlock()
	slot := h.services[k]
	if slot == nil || len(slot.stack) == 0 {
		return nil, false
	}
	return slot.stack[len(slot.stack)-1].value, true
}

// Lookup returns service name as seen from c, as a T. It is a
// non-reactive read: the caller is not restarted when the service changes,
// so read it again each time it is needed (the optional-dependency
// pattern). ok is false when it is missing or not a T.
func Lookup[T any](c *Context, name string) (T, bool) {
	v, ok := c.h.lookup(c.key(name))
	if !ok {
		var zero T
		return zero, false
	}
	t, ok := v.(T)
	return t, ok
}

// Get is [Lookup] with an error that says what was wrong: the service is
// missing, or is not a T.
func Get[T any](c *Context, name string) (T, error) {
	var zero T
	v, ok := c.h.lookup(c.key(name))
	if !ok {
		return zero, fmt.Errorf("host: service %q: %w", name, ErrNoService)
	}
	t, ok := v.(T)
	if !ok {
		return zero, fmt.Errorf("host: service %q is a %T, not a %T", name, v, zero)
	}
	return t, nil
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
func (h *Host) dependentsLocked(k serviceKey, provider *Fiber) []*Fiber {
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
func (h *Host) restartDependents(deps []*Fiber, k serviceKey) {
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
