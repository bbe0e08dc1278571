package host

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/events"
)

// DefaultMaxDepth is the default limit on nested dispatches (a listener
// dispatching from inside a dispatch, through the context it was given).
const DefaultMaxDepth = 64

// ErrRecursion is returned (wrapped) by a dispatch nested deeper than the
// host's maximum depth: runaway recursion ends with an error, not a crashed
// process.
var ErrRecursion = errors.New("dispatch nested too deeply (runaway recursion?)")

// listener is one registration. Its fields are immutable after creation
// except removed, which is set once when its disposer runs.
type listener struct {
	fn      any // the typed listener func
	scope   ScopeKey
	fiber   *Fiber
	removed atomic.Bool
}

// table is an immutable snapshot of every listener list, indexed by
// descriptor ID. Writers copy and swap it under Host.lmu.
type table struct {
	byEvent [][]*listener
}

func (h *Host) listeners(id int) []*listener {
	t := h.table.Load()
	if id < len(t.byEvent) {
		return t.byEvent[id]
	}
	return nil
}

// ListenOption changes how a listener is registered.
type ListenOption func(*listenConfig)

type listenConfig struct{ prepend bool }

// Prepend registers the listener before every listener already registered
// for the event, so it runs first (for a waterfall: outermost). Without it,
// listeners run in registration order.
func Prepend() ListenOption { return func(c *listenConfig) { c.prepend = true } }

func addListener(c *Context, d *events.Descriptor, fn any, opts []ListenOption) (Disposer, error) {
	if fn == nil {
		return nil, fmt.Errorf("host: registering a nil listener for %s", d.Name)
	}
	var cfg listenConfig
	for _, o := range opts {
		o(&cfg)
	}
	h := c.h
	h.declare(d)
	l := &listener{fn: fn, scope: c.scope, fiber: c.fiber}
	return c.track(EffectListener, d.Name, func() error {
		h.lmu.Lock()
		defer h.lmu.Unlock()
		h.swapList(d.ID(), func(ls []*listener) []*listener {
			if cfg.prepend {
				return append([]*listener{l}, ls...)
			}
			return append(slices.Clip(ls), l)
		})
		return nil
	}, func() error {
		l.removed.Store(true)
		h.lmu.Lock()
		defer h.lmu.Unlock()
		h.swapList(d.ID(), func(ls []*listener) []*listener {
			i := slices.Index(ls, l)
			if i < 0 {
				return ls
			}
			return slices.Delete(slices.Clone(ls), i, i+1)
		})
		return nil
	})
}

// swapList replaces one event's listener list; h.lmu must be held.
func (h *Host) swapList(id int, f func([]*listener) []*listener) {
	old := h.table.Load()
	n := max(len(old.byEvent), id+1)
	nt := &table{byEvent: make([][]*listener, n)}
	copy(nt.byEvent, old.byEvent)
	nt.byEvent[id] = f(nt.byEvent[id])
	if len(nt.byEvent[id]) == 0 {
		nt.byEvent[id] = nil
	}
	h.table.Store(nt)
}

// On registers fn for an emit or parallel event through c: the listener
// belongs to c's fiber (disposed with it) and, when c is an agent scope and
// the event is scope-filtered, only receives that scope's dispatches. The
// returned disposer is idempotent.
func On[P any](c *Context, ev *events.Event[P], fn events.Listener[P], opts ...ListenOption) (Disposer, error) {
	if fn == nil {
		return addListener(c, ev.Descriptor(), nil, opts)
	}
	return addListener(c, ev.Descriptor(), fn, opts)
}

// OnQuery registers fn for a serial or bail event; see [On].
func OnQuery[P, R any](c *Context, ev *events.Query[P, R], fn events.QueryListener[P, R], opts ...ListenOption) (Disposer, error) {
	if fn == nil {
		return addListener(c, ev.Descriptor(), nil, opts)
	}
	return addListener(c, ev.Descriptor(), fn, opts)
}

// OnWaterfall registers fn for a waterfall event; see [On]. The first
// listener in order is the outermost.
func OnWaterfall[P, R any](c *Context, ev *events.Waterfall[P, R], fn events.WaterfallListener[P, R], opts ...ListenOption) (Disposer, error) {
	if fn == nil {
		return addListener(c, ev.Descriptor(), nil, opts)
	}
	return addListener(c, ev.Descriptor(), fn, opts)
}

// Emitter is where a dispatch goes: a host and the scope the dispatched
// event belongs to (for scope-filtered events). It is a small value; make
// one with [Context.Emitter] or [Host.Emitter].
type Emitter struct {
	h     *Host
	scope ScopeKey
}

// Scope is the scope the emitter dispatches for ("" = global).
func (em Emitter) Scope() ScopeKey { return em.scope }

func (em Emitter) accepts(d *events.Descriptor, l *listener) bool {
	return !l.removed.Load() && (!d.Filtered || l.scope == "" || l.scope == em.scope)
}

// dispatchCtx marks a context as running inside a dispatch, for the
// recursion limit. It carries no values of its own beyond its depth.
type dispatchCtx struct {
	context.Context
	depth int
}

type depthKey struct{}

func (c *dispatchCtx) Value(key any) any {
	if key == (depthKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// enter returns the context listeners of one dispatch run under.
func (em Emitter) enter(ctx context.Context, d *events.Descriptor) (context.Context, error) {
	depth := 0
	if dc, ok := ctx.Value(depthKey{}).(*dispatchCtx); ok {
		depth = dc.depth
	}
	if depth >= em.h.maxDepth {
		return nil, fmt.Errorf("host: dispatching %s at depth %d: %w", d.Name, depth, ErrRecursion)
	}
	return &dispatchCtx{Context: ctx, depth: depth + 1}, nil
}

// failure applies the descriptor's failure policy to a listener error: it
// logs it with the owning plugin's name and returns it wrapped when the
// policy propagates, nil when it contains.
func (em Emitter) failure(d *events.Descriptor, l *listener, err error) error {
	name := l.fiber.Name()
	var pe *events.PanicError
	if errors.As(err, &pe) && pe.Plugin == "" {
		pe.Plugin = name
	}
	log := l.fiber.Logger()
	log.Error().Err(err).Str("event", d.Name).Str("failure", d.FailurePolicy().String()).Msg("listener failed")
	if d.FailurePolicy() == events.Contain {
		return nil
	}
	return fmt.Errorf("listener of %s (plugin %s): %w", d.Name, name, err)
}

func recovered(d *events.Descriptor, l *listener, v any) error {
	return &events.PanicError{Event: d.Name, Plugin: l.fiber.Name(), Value: v, Stack: debug.Stack()}
}

func callListener[P any](ctx context.Context, d *events.Descriptor, l *listener, p P) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(d, l, v)
		}
	}()
	return l.fn.(events.Listener[P])(ctx, p)
}

// Emit dispatches an emit or parallel event. Emit mode calls the listeners
// in order on the calling goroutine; parallel mode calls each on its own
// goroutine and waits for all. A listener registered during the dispatch is
// not called by it; one removed during it is not called after its removal.
// Listener failures (errors and panics) follow the descriptor's policy:
// contained ones are logged; propagated ones stop an emit dispatch and are
// returned, and are joined for a parallel one. Emit checks ctx only before
// starting. It is safe for concurrent use and holds no lock while a
// listener runs.
func Emit[P any](ctx context.Context, em Emitter, ev *events.Event[P], p P) error {
	d := ev.Descriptor()
	ls := em.h.listeners(d.ID())
	if len(ls) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	lctx, err := em.enter(ctx, d)
	if err != nil {
		return err
	}
	if d.Mode == events.ModeParallel {
		return emitParallel(lctx, em, d, ls, p)
	}
	for _, l := range ls {
		if !em.accepts(d, l) {
			continue
		}
		if err := callListener(lctx, d, l, p); err != nil {
			if err = em.failure(d, l, err); err != nil {
				return err
			}
		}
	}
	return nil
}

func emitParallel[P any](ctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, p P) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, l := range ls {
		if !em.accepts(d, l) {
			continue
		}
		wg.Go(func() {
			if err := callListener(ctx, d, l, p); err != nil {
				if err = em.failure(d, l, err); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func callQuery[P, R any](ctx context.Context, d *events.Descriptor, l *listener, p P) (r R, ok bool, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(d, l, v)
		}
	}()
	return l.fn.(events.QueryListener[P, R])(ctx, p)
}

// Query dispatches a serial or bail event: listeners are called in order
// until one answers (ok=true), and its result wins. Serial mode checks ctx
// between listeners and returns ctx.Err() once it is done; bail mode does
// not. A contained failure skips the listener; a propagated one ends the
// dispatch with the error. ok is false when nobody answered.
func Query[P, R any](ctx context.Context, em Emitter, ev *events.Query[P, R], p P) (result R, ok bool, err error) {
	d := ev.Descriptor()
	ls := em.h.listeners(d.ID())
	if len(ls) == 0 {
		return result, false, nil
	}
	lctx, err := em.enter(ctx, d)
	if err != nil {
		return result, false, err
	}
	for _, l := range ls {
		if d.Mode == events.ModeSerial {
			if err := ctx.Err(); err != nil {
				return result, false, err
			}
		}
		if !em.accepts(d, l) {
			continue
		}
		r, ok, err := callQuery[P, R](lctx, d, l, p)
		if err != nil {
			if err = em.failure(d, l, err); err != nil {
				return result, false, err
			}
			continue
		}
		if ok {
			return r, true, nil
		}
	}
	return result, false, nil
}

type chain[P, R any] struct {
	em   Emitter
	d    *events.Descriptor
	ls   []*listener
	p    P
	base events.Next[R]
}

func (c *chain[P, R]) from(ctx context.Context, i int) (R, error) {
	for i < len(c.ls) && !c.em.accepts(c.d, c.ls[i]) {
		i++
	}
	if i == len(c.ls) {
		return c.base(ctx)
	}
	l := c.ls[i]
	called := false
	next := func(ctx context.Context) (R, error) {
		called = true
		return c.from(ctx, i+1)
	}
	r, err := callWaterfall(ctx, c.d, l, c.p, next)
	if err != nil {
		if err = c.em.failure(c.d, l, err); err != nil {
			var zero R
			return zero, err
		}
		// Contained: the failed listener is skipped, unless it already
		// delegated, in which case what it delegated to stands.
		if !called {
			return c.from(ctx, i+1)
		}
	}
	return r, err
}

func callWaterfall[P, R any](ctx context.Context, d *events.Descriptor, l *listener, p P, next events.Next[R]) (r R, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = recovered(d, l, v)
		}
	}()
	return l.fn.(events.WaterfallListener[P, R])(ctx, p, next)
}

// Waterfall dispatches a waterfall event: the first listener is called with
// a next function that calls the second, and so on; the last next calls
// base. A listener that does not call next short-circuits the rest. The
// context a listener passes to next is the one the rest of the chain (and
// base) runs under. A listener may call next more than once (a retry
// wrapper). Failures follow the descriptor's policy: a propagated failure
// is returned to the previous listener's next (and finally to the caller);
// a contained one is logged and the listener is skipped.
func Waterfall[P, R any](ctx context.Context, em Emitter, ev *events.Waterfall[P, R], p P, base events.Next[R]) (R, error) {
	d := ev.Descriptor()
	ls := em.h.listeners(d.ID())
	if len(ls) == 0 {
		return base(ctx)
	}
	lctx, err := em.enter(ctx, d)
	if err != nil {
		var zero R
		return zero, err
	}
	c := &chain[P, R]{em: em, d: d, ls: ls, p: p, base: base}
	return c.from(lctx, 0)
}
