package events

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"sync/atomic"
)

// Mode is how an event is dispatched to its listeners.
type Mode uint8

const (
	// ModeEmit calls every listener synchronously, in order. Listener errors are
	// handled per the descriptor's [Failure] policy.
	ModeEmit Mode = iota + 1
	// ModeParallel calls every listener concurrently and waits for all of them;
	// every listener runs and their errors are joined.
	ModeParallel
	// ModeSerial calls listeners in order until one returns a result (ok=true);
	// that result wins. The dispatch context is checked between listeners,
	// so listeners may block.
	ModeSerial
	// ModeBail is the synchronous variant of ModeSerial for cheap, non-blocking
	// listeners: the first result wins and cancellation is not checked.
	ModeBail
	// ModeWaterfall is middleware: each listener receives the payload and a next
	// function; calling next delegates to the following listener (and
	// finally to the dispatcher's base), not calling it short-circuits.
	ModeWaterfall
)

var modeNames = [...]string{ModeEmit: "emit", ModeParallel: "parallel", ModeSerial: "serial", ModeBail: "bail", ModeWaterfall: "waterfall"}

// String returns the mode's lower-case name, as the catalog prints it.
func (m Mode) String() string {
	if int(m) < len(modeNames) && modeNames[m] != "" {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", m)
}

// Failure says what a dispatcher does when a listener returns an error or
// panics. A panic is always recovered first and turned into a *[PanicError].
type Failure uint8

const (
	// Contain logs the failure with the owning plugin's name and goes on
	// with the next listener; the dispatcher's caller never sees it.
	Contain Failure = iota + 1
	// Propagate stops the dispatch and returns the error to the dispatcher's
	// caller (for a waterfall: to the previous listener's next call). The
	// failure is logged too.
	Propagate
)

// String returns the policy's name, as the catalog prints it.
func (f Failure) String() string {
	switch f {
	case Contain:
		return "contain (logged, dispatch continues)"
	case Propagate:
		return "propagate (logged, returned to the dispatcher)"
	}
	return fmt.Sprintf("Failure(%d)", f)
}

// Descriptor describes one event. It is filled in by the declaring package
// and completed (id, signature, source) by the handle constructor; treat a
// handle's descriptor as read-only.
type Descriptor struct {
	// Name is the event's unique name, e.g. "tools/pre-execute"; see
	// [ValidateName].
	Name string
	// Mode is the dispatch mode. The constructors check that it matches the
	// handle kind.
	Mode Mode
	// Doc is a one-line description for the catalog.
	Doc string
	// Filtered marks the event as scope-filtered: a listener registered
	// through an agent scope only receives dispatches for that scope, while
	// global listeners receive all. Unfiltered events reach every listener.
	Filtered bool
	// Failure is what happens when a listener fails. Zero means [Contain].
	Failure Failure

	id        int
	signature string
	file      string
	line      int
}

// ID is a small process-unique integer assigned at construction; hosts use
// it to index their listener tables.
func (d *Descriptor) ID() int { return d.id }

// Signature is the Go type of a listener, e.g.
// "func(context.Context, string) error".
func (d *Descriptor) Signature() string { return d.signature }

// Source is the file and line where the handle was declared.
func (d *Descriptor) Source() (file string, line int) { return d.file, d.line }

// FailurePolicy returns d.Failure with the zero value read as [Contain].
func (d *Descriptor) FailurePolicy() Failure {
	if d.Failure == 0 {
		return Contain
	}
	return d.Failure
}

// Handle is implemented by every typed event handle.
type Handle interface {
	// Descriptor returns the handle's descriptor. It is shared, not copied:
	// do not modify it.
	Descriptor() *Descriptor
}

var nextID atomic.Int64

func complete(d Descriptor, allowed []Mode, sig reflect.Type) Descriptor {
	if err := ValidateName(d.Name); err != nil {
		panic(fmt.Sprintf("events: declaring %q: %v", d.Name, err))
	}
	ok := false
	for _, m := range allowed {
		ok = ok || d.Mode == m
	}
	if !ok {
		panic(fmt.Sprintf("events: declaring %q: mode %v does not fit this handle kind (want one of %v)", d.Name, d.Mode, allowed))
	}
	if d.Failure == 0 {
		d.Failure = Contain
	}
	if d.Failure != Contain && d.Failure != Propagate {
		panic(fmt.Sprintf("events: declaring %q: unknown failure policy %d", d.Name, d.Failure))
	}
	d.id = int(nextID.Add(1)) - 1
	d.signature = sig.String()
	_, d.file, d.line, _ = runtime.Caller(2)
	return d
}

// Listener is the listener of an [Event]: emit and parallel events.
type Listener[P any] func(ctx context.Context, payload P) error

// Event is a handle for an event dispatched in [ModeEmit] or [ModeParallel] mode.
type Event[P any] struct{ d Descriptor }

// NewEvent declares an emit or parallel event. It panics on an invalid
// descriptor: declarations are package-level and a bad one is a programming
// error found at init.
func NewEvent[P any](d Descriptor) *Event[P] {
	return &Event[P]{d: complete(d, []Mode{ModeEmit, ModeParallel}, reflect.TypeFor[func(context.Context, P) error]())}
}

// Descriptor implements [Handle].
func (e *Event[P]) Descriptor() *Descriptor { return &e.d }

// QueryListener is the listener of a [Query]: it returns ok=true to answer.
type QueryListener[P, R any] func(ctx context.Context, payload P) (result R, ok bool, err error)

// Query is a handle for an event dispatched in [ModeSerial] or [ModeBail] mode: the
// first listener that answers wins.
type Query[P, R any] struct{ d Descriptor }

// NewQuery declares a serial or bail event. It panics on an invalid
// descriptor.
func NewQuery[P, R any](d Descriptor) *Query[P, R] {
	return &Query[P, R]{d: complete(d, []Mode{ModeSerial, ModeBail}, reflect.TypeFor[func(context.Context, P) (R, bool, error)]())}
}

// Descriptor implements [Handle].
func (q *Query[P, R]) Descriptor() *Descriptor { return &q.d }

// Next delegates from a waterfall listener to the rest of the chain. The
// context passed is the one the rest of the chain runs under: a listener may
// derive a new one (a deadline, say) and pass it on.
type Next[R any] func(ctx context.Context) (R, error)

// WaterfallListener is the listener of a [Waterfall] event.
type WaterfallListener[P, R any] func(ctx context.Context, payload P, next Next[R]) (R, error)

// Waterfall is a handle for an event dispatched in [ModeWaterfall] mode.
type Waterfall[P, R any] struct{ d Descriptor }

// NewWaterfall declares a waterfall event. It panics on an invalid
// descriptor.
func NewWaterfall[P, R any](d Descriptor) *Waterfall[P, R] {
	return &Waterfall[P, R]{d: complete(d, []Mode{ModeWaterfall}, reflect.TypeFor[func(context.Context, P, Next[R]) (R, error)]())}
}

// Descriptor implements [Handle].
func (w *Waterfall[P, R]) Descriptor() *Descriptor { return &w.d }

var (
	_ Handle = (*Event[int])(nil)
	_ Handle = (*Query[int, int])(nil)
	_ Handle = (*Waterfall[int, int])(nil)
)
