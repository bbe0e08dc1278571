package host

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/internal/safeerr"
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
	if err := h.declare(d); err != nil {
		return nil, err
	}
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
//
// A dispatchCtx is immutable and is a pure function of its parent context
// (its depth is read from the parent's values, which never change), so one
// wrapper can stand for every dispatch made under the same parent. Dispatch
// memoizes it in two places, which makes the steady state allocation-free
// without weakening the guard:
//   - child: the wrapper for a dispatch made directly under this one (a
//     listener dispatching with the context it was given);
//   - Host.memo: the wrapper of the last top-level context, reused when the
//     next top-level dispatch passes the identical context: the same
//     interface words (dynamic type and data pointer, see identity), which
//     is the same value, never a different one that merely compares equal.
//     Comparing two words can never panic or call user code, and costs
//     less than comparing the interfaces. The memo keeps that one context
//     reachable until the next top-level dispatch with a different one.
type dispatchCtx struct {
	context.Context
	id    ctxIdentity // identity(Context), for the memo
	depth int
	child atomic.Pointer[dispatchCtx]
}

// ctxIdentity is the two words of a context.Context interface value.
type ctxIdentity struct{ tab, data unsafe.Pointer }

// identity returns ctx's interface words. Equal identities are the same
// dynamic type (itabs are unique per interface and type) and the same data
// word: the same pointer, or the same boxed copy, which Go never mutates;
// so two contexts with equal identities are one value and behave alike.
func identity(ctx context.Context) ctxIdentity {
	return *(*ctxIdentity)(unsafe.Pointer(&ctx))
}

type depthKey struct{}

func (c *dispatchCtx) Value(key any) any {
	if key == (depthKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// enter returns the context listeners of one dispatch run under. The
// memo hit, the steady state of a top-level dispatch, is small enough to
// be inlined into every dispatcher; the rest is enterSlow.
func (em Emitter) enter(ctx context.Context, d *events.Descriptor) (context.Context, error) {
	if m := em.h.memoFor(ctx); m != nil {
		return m, nil
	}
	return em.enterSlow(ctx, d)
}

// memoFor returns the memoized wrapper of ctx (Host.memo) if it is
// ctx's, else nil.
func (h *Host) memoFor(ctx context.Context) *dispatchCtx {
	if m := h.memo.Load(); m != nil && m.id == identity(ctx) {
		return m
	}
	return nil
}

func (em Emitter) enterSlow(ctx context.Context, d *events.Descriptor) (context.Context, error) {
	h := em.h
	if dc, ok := ctx.(*dispatchCtx); ok {
		// Nested directly under a dispatch.
		if dc.depth >= h.maxDepth {
			return nil, fmt.Errorf("host: dispatching %s at depth %d: %w", d.Name, dc.depth, ErrRecursion)
		}
		if c := dc.child.Load(); c != nil {
			return c, nil
		}
		c := &dispatchCtx{Context: dc, id: identity(dc), depth: dc.depth + 1}
		dc.child.Store(c) // a racing store installs an equivalent wrapper
		return c, nil
	}
	id := identity(ctx)
	if m := h.memo.Load(); m != nil && m.id == id {
		return m, nil
	}
	depth := 0
	if dc, ok := ctx.Value(depthKey{}).(*dispatchCtx); ok {
		depth = dc.depth
	}
	if depth >= h.maxDepth {
		return nil, fmt.Errorf("host: dispatching %s at depth %d: %w", d.Name, depth, ErrRecursion)
	}
	c := &dispatchCtx{Context: ctx, id: id, depth: depth + 1}
	if depth == 0 {
		h.memo.Store(c)
	}
	return c, nil
}

// failure applies the descriptor's failure policy to a listener error: it
// logs it with the owning plugin's name and returns it wrapped when the
// policy propagates, nil when it contains. err is plugin code: it is read
// only through errorAs and errorText (bounded, under recover), so a cyclic
// chain or a panicking method neither hangs nor panics the dispatch.
func failure(d *events.Descriptor, l *listener, err error) error {
	name := l.fiber.Name()
	if pe, ok := safeerr.As[*events.PanicError](err); ok && pe != nil && pe.Plugin == "" {
		pe.Plugin = name
	}
	log := l.fiber.Logger()
	withErr(log.Error(), err).Str("event", d.Name).Str("failure", d.FailurePolicy().String()).Msg("listener failed")
	if d.FailurePolicy() == events.Contain {
		return nil
	}
	if pe, ok := err.(*events.PanicError); ok && pe.Event == d.Name {
		return fmt.Errorf("host: %w", err) // it names the event and the plugin
	}
	return fmt.Errorf("host: listener of %s (plugin %s): %w", d.Name, name, err)
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
func Emit[P any](ctx context.Context, em Emitter, ev *events.Event[P], p P) (err error) {
	d := ev.Descriptor()
	ls := em.h.listeners(d.ID())
	if len(ls) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m := em.h.memoFor(ctx) // enter's steady state, inlined
	lctx := context.Context(m)
	if m == nil {
		if lctx, err = em.enterSlow(ctx, d); err != nil {
			return err
		}
	}
	if d.Mode == events.ModeParallel {
		return emitParallel(lctx, em, d, ls, p)
	}
	// The first run of listeners is emitRun inlined by hand (one call
	// less on the common path); after a failure emitRest goes on.
	cur := 0
	returned := false
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			err = emitRest(lctx, em, d, ls, cur, recovered(d, ls[cur], v), p)
		}
	}()
	filtered := d.Filtered
	for ; cur < len(ls); cur++ {
		l := ls[cur]
		if l.removed.Load() || filtered && l.scope != "" && l.scope != em.scope {
			continue // !em.accepts(d, l), with d.Filtered read once
		}
		if err := l.fn.(events.Listener[P])(lctx, p); err != nil {
			returned = true
			return emitRest(lctx, em, d, ls, cur, err, p)
		}
	}
	returned = true
	return nil
}

// emitRest applies the failure policy to ls[i]'s failure ferr and, when it
// is contained, calls the listeners after it.
func emitRest[P any](ctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, i int, ferr error, p P) error {
	if err := failure(d, ls[i], ferr); err != nil {
		return err
	}
	for i++; i < len(ls); {
		var err error
		if i, err = emitRun(ctx, em, d, ls, i, p); err != nil {
			if err = failure(d, ls[i-1], err); err != nil {
				return err
			}
		}
	}
	return nil
}

// emitRun calls ls[i:] in order until one fails (returns an error or
// panics); it returns the index after the failed listener and its error,
// or len(ls) and nil. One deferred recover covers the whole run, instead
// of one per listener: that is most of the cost of a call.
func emitRun[P any](ctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, i int, p P) (next int, err error) {
	cur := i
	returned := false // recover only when unwinding: the common path skips the call
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			next, err = cur+1, recovered(d, ls[cur], v)
		}
	}()
	filtered := d.Filtered
	for ; cur < len(ls); cur++ {
		l := ls[cur]
		if l.removed.Load() || filtered && l.scope != "" && l.scope != em.scope {
			continue // !em.accepts(d, l), with d.Filtered read once
		}
		if err := l.fn.(events.Listener[P])(ctx, p); err != nil {
			returned = true
			return cur + 1, err
		}
	}
	returned = true
	return cur, nil
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
				if err = failure(d, l, err); err != nil {
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
	for i := 0; i < len(ls); {
		var q queryRun[R]
		i, q = runQuery[P, R](ctx, lctx, em, d, ls, i, p)
		switch {
		case q.done:
			return q.r, q.ok, q.err
		case q.err != nil:
			if err := failure(d, ls[i-1], q.err); err != nil {
				return result, false, err
			}
		}
	}
	return result, false, nil
}

// queryRun is how a run of query listeners ended: done when the dispatch
// is over (an answer, or ctx done in serial mode), otherwise err is the
// failure of the listener before the returned index (nil: nobody answered).
type queryRun[R any] struct {
	r    R
	ok   bool
	done bool
	err  error
}

// runQuery calls ls[i:] in order until one answers or fails; like emitRun,
// one deferred recover covers the whole run. It returns the index after the
// last listener it called (the failed one, on a failure).
func runQuery[P, R any](ctx, lctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, i int, p P) (next int, q queryRun[R]) {
	cur := i
	defer func() {
		if v := recover(); v != nil {
			next, q = cur+1, queryRun[R]{err: recovered(d, ls[cur], v)}
		}
	}()
	serial := d.Mode == events.ModeSerial
	for ; cur < len(ls); cur++ {
		if serial {
			if err := ctx.Err(); err != nil {
				return cur, queryRun[R]{done: true, err: err}
			}
		}
		l := ls[cur]
		if !em.accepts(d, l) {
			continue
		}
		r, ok, err := l.fn.(events.QueryListener[P, R])(lctx, p)
		if err != nil {
			return cur + 1, queryRun[R]{err: err}
		}
		if ok {
			return cur + 1, queryRun[R]{r: r, ok: true, done: true}
		}
	}
	return cur, queryRun[R]{}
}

// chain is one waterfall dispatch under the Contain policy, allocated
// once per dispatch: a failed listener is skipped unless it delegated, so
// each call of a listener records whether (and what) its next returned in
// a frame of its own, taken from frames (one allocation, one frame per
// listener that can run) or, past those (a retry), allocated; its next is
// the frame's method value. (The Propagate policy needs no record and no
// chain: see waterfallLinks.)
//
// Nothing in a chain is reused by another dispatch, so a next kept and
// called after Waterfall returned behaves as it did during the dispatch.
type chain[P, R any] struct {
	em     Emitter
	d      *events.Descriptor
	ls     []*listener
	p      P
	base   events.Next[R]
	frames []frame[P, R] // handed out in order through nframe
	nframe atomic.Int32
}

// frame is the state of one call of one listener under the Contain policy.
type frame[P, R any] struct {
	c      *chain[P, R]
	i      int // the listener's position
	called bool
	nr     R
	nerr   error
}

func (f *frame[P, R]) next(ctx context.Context) (R, error) {
	f.called = true
	defer func() {
		if v := recover(); v != nil {
			// The rest of the chain did not return: the dispatcher's base
			// panicked (a later listener's panic is recovered at its own
			// level). Record it as what next "returned", so a contained
			// failure of this listener does not turn it into a zero-value
			// success, and let the panic go on to this listener.
			var zero R
			f.nr, f.nerr = zero, recovered(f.c.d, f.c.ls[f.i], v)
			panic(v)
		}
	}()
	f.nr, f.nerr = f.c.from(ctx, f.i+1)
	return f.nr, f.nerr
}

func (c *chain[P, R]) frame(i int) *frame[P, R] {
	if k := int(c.nframe.Add(1)) - 1; k < len(c.frames) {
		f := &c.frames[k]
		f.c, f.i = c, i
		return f
	}
	return &frame[P, R]{c: c, i: i}
}

func (c *chain[P, R]) from(ctx context.Context, i int) (R, error) {
	for i < len(c.ls) && !c.em.accepts(c.d, c.ls[i]) {
		i++
	}
	if i == len(c.ls) {
		return c.base(ctx)
	}
	l := c.ls[i]
	f := c.frame(i)
	r, err := callWaterfall(ctx, c.d, l, c.p, f.next)
	if err != nil {
		if err = failure(c.d, l, err); err != nil {
			var zero R
			return zero, err
		}
		// Contained: the failed listener is skipped, unless it already
		// delegated, in which case what its (last) next returned stands.
		if !f.called {
			return c.from(ctx, i+1)
		}
		return f.nr, f.nerr
	}
	return r, nil
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
// wrapper), one call after another; for an event whose failures are
// contained, next must not be called from several goroutines at once (it
// records whether the listener delegated). Failures follow the descriptor's
// policy: a propagated failure is returned to the previous listener's next
// (and finally to the caller); a contained one is logged and the listener
// is skipped.
func Waterfall[P, R any](ctx context.Context, em Emitter, ev *events.Waterfall[P, R], p P, base events.Next[R]) (R, error) {
	d := ev.Descriptor()
	ls := em.h.listeners(d.ID())
	if len(ls) == 0 {
		return base(ctx)
	}
	// Listeners that cannot run now never will (removal is final, the scope
	// fixed), so they get no next function and the last one that can run
	// gets base.
	n := 0
	for _, l := range ls {
		if em.accepts(d, l) {
			n++
		}
	}
	lctx, err := em.enter(ctx, d)
	if err != nil {
		var zero R
		return zero, err
	}
	if n == 0 {
		return base(lctx)
	}
	if d.FailurePolicy() == events.Contain {
		c := &chain[P, R]{em: em, d: d, ls: ls, p: p, base: base, frames: make([]frame[P, R], n)}
		return c.from(lctx, 0)
	}
	return waterfallLinks(lctx, em, d, ls, p, base)
}

// waterfallLinks runs a waterfall dispatch under the Propagate policy. A
// propagated failure needs no record of what next returned, so a next
// carries no state beyond what it runs: the next a listener gets is a
// link, one closure per listener that can run except the last (which gets
// base itself), made back to front, each holding the listener after it
// and that listener's own next. That is n-1 allocations for n listeners
// (plus one copy of a payload larger than linkedPayload, which the links
// share instead of each holding its own) and nothing else: no chain
// object, and nothing reused by another dispatch, so a next kept and
// called after Waterfall returned, again (a retry) or from several
// goroutines at once, runs the rest of its own dispatch as it did during
// it.
func waterfallLinks[P, R any](ctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, p P, base events.Next[R]) (R, error) {
	if unsafe.Sizeof(p) > linkedPayload {
		return waterfallLinksOf(ctx, em, d, ls, box(p), base)
	}
	next := base
	var after *listener // the listener that runs after ls[i], with next
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		if !em.accepts(d, l) {
			continue
		}
		if after != nil {
			next = link(d, after, p, next)
		}
		after = l
	}
	// The first listener runs through a link too: called at once, it
	// does not escape, so it is not allocated.
	return link(d, after, p, next)(ctx)
}

// linkedPayload is the largest payload a link holds by value (four
// words: a string or slice and a little more); a larger one is copied to
// the heap once and shared.
const linkedPayload = 4 * unsafe.Sizeof(uintptr(0))

// waterfallLinksOf is waterfallLinks with the payload shared through pp.
func waterfallLinksOf[P, R any](ctx context.Context, em Emitter, d *events.Descriptor, ls []*listener, pp *P, base events.Next[R]) (R, error) {
	next := base
	var after *listener
	for i := len(ls) - 1; i >= 0; i-- {
		l := ls[i]
		if !em.accepts(d, l) {
			continue
		}
		if after != nil {
			next = linkOf(d, after, pp, next)
		}
		after = l
	}
	return linkStep(ctx, d, after, *pp, next)
}

func box[P any](p P) *P { return &p }

// link is the next function that runs l (with next as l's own next). It
// is linkStep written out in the closure, for one call level and one
// copy of the result less per listener (a function with a defer is never
// inlined); keep the two alike.
func link[P, R any](d *events.Descriptor, l *listener, p P, next events.Next[R]) events.Next[R] {
	return func(ctx context.Context) (r R, err error) {
		if l.removed.Load() {
			return next(ctx)
		}
		returned := false
		defer func() {
			if returned {
				return
			}
			if v := recover(); v != nil {
				var zero R
				r, err = zero, failure(d, l, recovered(d, l, v))
			}
		}()
		r, err = l.fn.(events.WaterfallListener[P, R])(ctx, p, next)
		returned = true
		if err != nil {
			var zero R
			return zero, failure(d, l, err)
		}
		return r, nil
	}
}

// linkOf is link with the payload read through pp.
func linkOf[P, R any](d *events.Descriptor, l *listener, pp *P, next events.Next[R]) events.Next[R] {
	return func(ctx context.Context) (R, error) { return linkStep(ctx, d, l, *pp, next) }
}

// linkStep runs l with next under the Propagate policy: a listener
// removed during the dispatch is skipped (the rest of the chain runs), a
// failure (error or panic, attributed to l) is returned as the policy's
// error. It is callWaterfall and the policy in one frame: one call level
// and one copy of the result less per listener. The deferred recover runs
// only while unwinding from l itself (a later listener's panic is
// recovered at that listener's own level, inside next), and the policy is
// applied after the listener returned, outside its containment, as
// callWaterfall's caller does.
func linkStep[P, R any](ctx context.Context, d *events.Descriptor, l *listener, p P, next events.Next[R]) (r R, err error) {
	if l.removed.Load() {
		return next(ctx)
	}
	returned := false
	defer func() {
		if returned {
			return
		}
		if v := recover(); v != nil {
			var zero R
			r, err = zero, failure(d, l, recovered(d, l, v))
		}
	}()
	r, err = l.fn.(events.WaterfallListener[P, R])(ctx, p, next)
	returned = true
	if err != nil {
		var zero R
		return zero, failure(d, l, err)
	}
	return r, nil
}
