package busbridge

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// DefaultQueueSize is the default capacity of a bridge's queue.
const DefaultQueueSize = 1024

// DefaultStopTimeout is how long disposal waits, by default, for the
// publishing goroutine to finish.
const DefaultStopTimeout = 5 * time.Second

// ErrStuck is returned by the bridge's disposal when its goroutine did not
// stop within the stop timeout: a bus handler is blocked (typically one
// that published into the bus synchronously, which deadlocks EventBus).
// The goroutine exits once the handler returns.
var ErrStuck = errors.New("busbridge: publisher goroutine stuck in a bus handler")

// ErrClosed is returned by [Forward] on a bridge that was disposed.
var ErrClosed = errors.New("busbridge: bridge closed")

// Publisher is the part of EventBus.Bus the bridge uses; an EventBus.Bus
// satisfies it.
type Publisher interface {
	Publish(topic string, args ...any)
}

// Option configures a bridge.
type Option func(*config)

type config struct {
	queue int
	stop  time.Duration
}

// WithQueueSize sets the queue's capacity (default [DefaultQueueSize];
// values below 1 are ignored).
func WithQueueSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.queue = n
		}
	}
}

// WithStopTimeout sets how long disposal waits for the publishing goroutine
// (default [DefaultStopTimeout]; values of zero or less are ignored).
func WithStopTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.stop = d
		}
	}
}

type item struct {
	topic string
	arg   any
}

// Bridge publishes host events to an EventBus bus from its own goroutine.
// It is safe for concurrent use.
type Bridge struct {
	c       *host.Context
	bus     Publisher
	cfg     config
	mu      sync.RWMutex // guards closed and sends on queue
	closed  bool
	queue   chan item
	done    chan struct{}
	dropped atomic.Uint64
}

// New creates a bridge to bus as an effect of c's fiber and starts its
// goroutine. It fails when c's fiber no longer accepts registrations.
func New(c *host.Context, bus Publisher, opts ...Option) (*Bridge, error) {
	if bus == nil {
		return nil, errors.New("busbridge: nil bus")
	}
	cfg := config{queue: DefaultQueueSize, stop: DefaultStopTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	b := &Bridge{c: c, bus: bus, cfg: cfg, queue: make(chan item, cfg.queue), done: make(chan struct{})}
	_, err := c.Effect("eventbus-bridge", func() (func() error, error) {
		go b.run()
		return b.stop, nil
	})
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (b *Bridge) run() {
	defer close(b.done)
	for it := range b.queue {
		b.publish(it)
	}
}

func (b *Bridge) publish(it item) {
	defer func() {
		if v := recover(); v != nil {
			b.c.Logger().Error().Str("topic", it.topic).Interface("panic", v).Msg("eventbus handler panicked")
		}
	}()
	b.bus.Publish(it.topic, it.arg)
}

// stop closes the queue and waits for the goroutine to publish what was
// queued and exit, at most the stop timeout.
func (b *Bridge) stop() error {
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.queue)
	}
	b.mu.Unlock()
	t := time.NewTimer(b.cfg.stop)
	defer t.Stop()
	select {
	case <-b.done:
		return nil
	case <-t.C:
		return fmt.Errorf("%w (waited %v)", ErrStuck, b.cfg.stop)
	}
}

// Done is closed when the bridge's goroutine has exited.
func (b *Bridge) Done() <-chan struct{} { return b.done }

// Dropped returns how many items were dropped because the queue was full.
func (b *Bridge) Dropped() uint64 { return b.dropped.Load() }

// Publish queues a publish of the single argument arg to
// topic and returns at once; it reports whether the item was queued (false
// when the queue is full or the bridge is disposed). It is safe to call
// from inside a bus handler, where a direct bus.Publish would deadlock.
func (b *Bridge) Publish(topic string, arg any) bool {
	b.mu.RLock()
	defer b.mu.RUnlock()
	if b.closed {
		return false
	}
	select {
	case b.queue <- item{topic, arg}:
		return true
	default:
		b.dropped.Add(1)
		b.c.Logger().Debug().Str("topic", topic).Msg("eventbus bridge queue full; dropped")
		return false
	}
}

// ForwardOption configures one forward.
type ForwardOption func(*forward)

type forward struct{ topic string }

// Topic sets the bus topic (default: the event's name).
func Topic(name string) ForwardOption { return func(f *forward) { f.topic = name } }

// Forward forwards every dispatch of ev that reaches the bridge's context
// to the bus topic: for a scope-filtered event and a bridge created through
// an agent scope, only that scope's dispatches (not global ones, nor other
// scopes'); otherwise every dispatch. The listener only queues, so it never
// blocks the dispatch. The forward is an effect of the bridge's fiber; the
// returned disposer stops it earlier.
func Forward[P any](b *Bridge, ev *events.Event[P], opts ...ForwardOption) (host.Disposer, error) {
	fw := forward{topic: ev.Descriptor().Name}
	for _, o := range opts {
		o(&fw)
	}
	b.mu.RLock()
	closed := b.closed
	b.mu.RUnlock()
	if closed {
		return nil, ErrClosed
	}
	return host.On(b.c, ev, func(_ context.Context, p P) error {
		b.Publish(fw.topic, p)
		return nil
	})
}
