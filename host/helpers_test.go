package host_test

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// The services of the tests, each declared once with its type.
var (
	svcDB     = host.NewService[int]("db")
	svcSvc    = host.NewService[int]("svc")
	svcCache  = host.NewService[int]("cache")
	svcA      = host.NewService[int]("a")
	svcB      = host.NewService[int]("b")
	svcC      = host.NewService[int]("c")
	svcAbsent = host.NewService[int]("absent")
)

var (
	evPing = events.NewEvent[string](events.Descriptor{
		Name: "test/ping", Mode: events.ModeEmit, Doc: "A test ping.",
	})
	evFiltered = events.NewEvent[string](events.Descriptor{
		Name: "test/filtered", Mode: events.ModeEmit, Doc: "A scope-filtered test event.", Filtered: true,
	})
	evPropagate = events.NewEvent[string](events.Descriptor{
		Name: "test/propagate", Mode: events.ModeEmit, Doc: "Failures propagate.", Failure: events.Propagate,
	})
	evParallel = events.NewEvent[string](events.Descriptor{
		Name: "test/parallel", Mode: events.ModeParallel, Doc: "Parallel, failures propagate.", Failure: events.Propagate,
	})
	evSerial = events.NewQuery[string, string](events.Descriptor{
		Name: "test/serial", Mode: events.ModeSerial, Doc: "Serial query.",
	})
	evBail = events.NewQuery[string, string](events.Descriptor{
		Name: "test/bail", Mode: events.ModeBail, Doc: "Bail query.",
	})
	evWaterfall = events.NewWaterfall[string, string](events.Descriptor{
		Name: "test/waterfall", Mode: events.ModeWaterfall, Doc: "Waterfall.", Failure: events.Propagate,
	})
	evWaterfallContain = events.NewWaterfall[string, string](events.Descriptor{
		Name: "test/waterfall-contain", Mode: events.ModeWaterfall, Doc: "Waterfall, failures contained.",
	})
)

// logBuf is a goroutine-safe buffer for zerolog output.
type logBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// newHost returns a host logging into a buffer, closed at the end of the
// test.
func newHost(t testing.TB, opts ...host.Option) (*host.Host, *logBuf) {
	t.Helper()
	buf := &logBuf{}
	h := host.New(append([]host.Option{host.WithLogger(zerolog.New(buf))}, opts...)...)
	t.Cleanup(func() { _ = h.Close() })
	return h, buf
}

// recorder collects strings from several goroutines.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	r.got = append(r.got, s)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// statuses records every FiberStatus change of fibers with the given name.
func statuses(t testing.TB, h *host.Host, name string) *recorder {
	t.Helper()
	r := &recorder{}
	_, err := host.On(h.Root(), host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
		if s.Fiber.Name() == name {
			r.add(s.To.String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func must[T any](t testing.TB) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// loaded returns the fiber of a Plugin call whose error must match want
// (errors.Is), or be nil when want is nil.
func loaded(t testing.TB, want error) func(*host.Fiber, error) *host.Fiber {
	return func(f *host.Fiber, err error) *host.Fiber {
		t.Helper()
		if want == nil && err != nil || !errors.Is(err, want) {
			t.Fatalf("Plugin: %v, want an error matching %v", err, want)
		}
		if f == nil {
			t.Fatal("Plugin returned no fiber")
		}
		return f
	}
}

// within runs f on its own goroutine and ends the test binary, with every
// goroutine's stack, when f does not return in time: a deadlock. (A
// failure on the test's goroutine would hang too, in the host's cleanup,
// waiting for what the deadlocked goroutines hold.)
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		go panic(t.Name() + ": " + what + ": deadlocked") // not recoverable: ends the binary
		select {}
	}
}
