package host

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/events"
)

// Host is the root of a plugin tree: it owns the root context and fiber, the
// service table, the listener tables and the logger. A Host is safe for
// concurrent use.
type Host struct {
	log      zerolog.Logger
	maxDepth int

	// lmu serializes writers of the listener table; readers load table.
	lmu   sync.Mutex
	table atomic.Pointer[table]

	// life guards lifecycle bookkeeping: every fiber's state, generation,
	// owner and disposal flags, the fibers set and changes to the service
	// table. It is a plain mutex, held only for bookkeeping and never while
	// plugin code runs (Apply, a disposer, a FiberStatus listener), so that
	// code may itself load plugins, provide services and dispose fibers, on
	// its own goroutine or another one. Functions named ...Locked must be
	// called with life held and never release it; every other function
	// must be called without it. See lifecycle.go.
	life sync.Mutex

	// smu guards services and declared.
	smu      sync.RWMutex
	services map[slotKey]*serviceSlot
	declared map[string]events.Handle
	nsSeq    atomic.Uint64
	fiberSeq atomic.Uint64

	// fibers is every live (not disposed) fiber; written with life held,
	// guarded by fmu (so Stats never waits for a lifecycle operation).
	fmu    sync.Mutex
	fibers map[*Fiber]struct{}

	// memo is the dispatch wrapper of the last top-level dispatch context
	// (see Emitter.enter).
	memo atomic.Pointer[dispatchCtx]

	root *Context
}

// Option configures a Host.
type Option func(*Host)

// WithLogger sets the host's logger; each fiber logs through a child logger
// with a "plugin" field. The default discards everything.
func WithLogger(l zerolog.Logger) Option { return func(h *Host) { h.log = l } }

// WithMaxDepth sets the nested-dispatch limit (default [DefaultMaxDepth]).
func WithMaxDepth(n int) Option {
	return func(h *Host) {
		if n > 0 {
			h.maxDepth = n
		}
	}
}

// New creates a host with an active root fiber named "root".
func New(opts ...Option) *Host {
	h := &Host{
		log:      zerolog.New(io.Discard),
		maxDepth: DefaultMaxDepth,
		services: map[slotKey]*serviceSlot{},
		declared: map[string]events.Handle{},
		fibers:   map[*Fiber]struct{}{},
	}
	h.table.Store(&table{})
	for _, o := range opts {
		o(h)
	}
	f := newFiber(h, nil, "root", nil, nil, nil)
	f.state = Active
	h.fibers[f] = struct{}{}
	h.root = &Context{h: h, fiber: f, gen: f.gen}
	f.ctx = h.root
	_ = h.declare(FiberStatus.Descriptor()) // the first declaration on a new host
	return h
}

// Root returns the root context: registrations through it are global and
// live until [Host.Close].
func (h *Host) Root() *Context { return h.root }

// Logger returns the host's logger.
func (h *Host) Logger() *zerolog.Logger { return &h.log }

// Emitter returns an emitter that dispatches on this host for scope ("" =
// global).
func (h *Host) Emitter(scope ScopeKey) Emitter { return Emitter{h: h, scope: scope} }

// Close disposes the root fiber and with it every plugin, service and
// listener. It returns the joined errors of every disposer that failed.
func (h *Host) Close() error { return h.root.fiber.Dispose() }

// declare records an event descriptor so the catalog can list it.
// ErrEventConflict is wrapped when two different handles declare the same
// event name on one host: listeners and dispatches of the two would never
// meet, and the catalog could list only one of them.
var ErrEventConflict = errors.New("event name declared by two different handles")

func (h *Host) declare(d *events.Descriptor) error {
	h.smu.Lock()
	defer h.smu.Unlock()
	prev, ok := h.declared[d.Name]
	if !ok {
		h.declared[d.Name] = descHandle{d}
		return nil
	}
	if p := prev.Descriptor(); p != d {
		pf, pl := p.Source()
		df, dl := d.Source()
		return fmt.Errorf("host: %w: %q is declared at %s:%d and again at %s:%d", ErrEventConflict, d.Name, pf, pl, df, dl)
	}
	return nil
}

type descHandle struct{ d *events.Descriptor }

func (x descHandle) Descriptor() *events.Descriptor { return x.d }

// Declare records event handles as declared by this host's plugins, so that
// [Host.Events] (and the generated catalog) lists them even before anyone
// listens. Registering a listener declares too. Declaring a name that a
// different handle already declared fails with [ErrEventConflict] (the
// other handles are still declared); declaring the same handle again is
// harmless.
func (h *Host) Declare(hs ...events.Handle) error {
	var errs []error
	for _, x := range hs {
		if err := h.declare(x.Descriptor()); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Events returns the descriptors of every event declared on this host,
// sorted by name.
func (h *Host) Events() []*events.Descriptor {
	h.smu.RLock()
	out := make([]*events.Descriptor, 0, len(h.declared))
	for _, x := range h.declared {
		out = append(out, x.Descriptor())
	}
	h.smu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ListenerCount returns how many listeners are registered for the named
// event (all scopes).
func (h *Host) ListenerCount(name string) int {
	h.smu.RLock()
	x, ok := h.declared[name]
	h.smu.RUnlock()
	if !ok {
		return 0
	}
	return len(h.listeners(x.Descriptor().ID()))
}

// Listening returns the number of listeners registered on h for d's event
// (0 when d is not declared on h). Unlike [Host.ListenerCount] it takes no
// lock and looks nothing up by name: it is the dispatcher's cheap "is
// anyone listening?" check.
func (h *Host) Listening(d *events.Descriptor) int { return len(h.listeners(d.ID())) }

// Stats is a snapshot of what a host holds, for tests and debugging: a
// disposed plugin must leave these counts as they were before it loaded.
type Stats struct {
	// Listeners counts listeners per event name (events with none omitted).
	Listeners map[string]int
	// Services lists the provided service names (with namespace for
	// isolated ones), sorted.
	Services []string
	// Fibers counts live fibers, the root included.
	Fibers int
}

// Stats returns a snapshot of the host's registrations.
func (h *Host) Stats() Stats {
	s := Stats{Listeners: map[string]int{}}
	for _, d := range h.Events() {
		if n := len(h.listeners(d.ID())); n > 0 {
			s.Listeners[d.Name] = n
		}
	}
	h.smu.RLock()
	for k, slot := range h.services {
		if len(slot.stack) > 0 {
			s.Services = append(s.Services, k.String())
		}
	}
	h.smu.RUnlock()
	sort.Strings(s.Services)
	h.fmu.Lock()
	s.Fibers = len(h.fibers)
	h.fmu.Unlock()
	return s
}
