package busbridge_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	EventBus "github.com/asaskevich/EventBus"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/busbridge"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var evNote = events.NewEvent[string](events.Descriptor{
	Name: "test/note", Mode: events.ModeEmit, Doc: "An observe-only test notification.",
})

const wait = 10 * time.Second // a failure guard, never a synchronisation

type got struct {
	mu sync.Mutex
	s  []string
	ch chan struct{}
}

func newGot() *got { return &got{ch: make(chan struct{}, 100)} }

func (g *got) add(s string) {
	g.mu.Lock()
	g.s = append(g.s, s)
	g.mu.Unlock()
	g.ch <- struct{}{}
}

func (g *got) waitN(t *testing.T, n int) []string {
	t.Helper()
	for range n {
		select {
		case <-g.ch:
		case <-time.After(wait):
			t.Fatalf("timed out; have %v", g.list())
		}
	}
	return g.list()
}

func (g *got) list() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.s)
}

func TestForwardByTopic(t *testing.T) {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()
	g := newGot()
	if err := bus.Subscribe("test/note", func(s string) { g.add("default:" + s) }); err != nil {
		t.Fatal(err)
	}
	if err := bus.Subscribe("custom", func(s string) { g.add("custom:" + s) }); err != nil {
		t.Fatal(err)
	}
	f, _ := h.Root().Plugin(host.Define("bridge", nil, func(c *host.Context) error {
		b, err := busbridge.New(c, bus)
		if err != nil {
			return err
		}
		if _, err := busbridge.Forward(b, evNote); err != nil {
			return err
		}
		_, err = busbridge.Forward(b, evNote, busbridge.Topic("custom"))
		return err
	}), nil)
	if err := host.Emit(context.Background(), h.Root().Emitter(), evNote, "x"); err != nil {
		t.Fatal(err)
	}
	if l := g.waitN(t, 2); !slices.Equal(l, []string{"default:x", "custom:x"}) {
		t.Errorf("got %v", l)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if n := h.ListenerCount("test/note"); n != 0 {
		t.Errorf("listeners left: %d", n)
	}
}

// Hazard 1: EventBus holds its lock while a handler runs. A bus handler
// that emits host events (forwarded ones) and publishes through the bridge
// must not deadlock the host or the bridge.
func TestHandlerPublishingAndEmittingDoesNotDeadlock(t *testing.T) {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()
	g := newGot()
	b, err := busbridge.New(h.Root(), bus)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := busbridge.Forward(b, evNote); err != nil {
		t.Fatal(err)
	}
	err = bus.Subscribe("test/note", func(s string) {
		g.add(s)
		if len(s) < 3 {
			// emit a forwarded host event from inside a bus handler
			if err := host.Emit(context.Background(), h.Root().Emitter(), evNote, s+"e"); err != nil {
				t.Error(err)
			}
			// publish into the bus from inside a handler, the safe way
			b.Publish("test/note", s+"p")
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- host.Emit(context.Background(), h.Root().Emitter(), evNote, "a") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(wait):
		t.Fatal("host emit blocked")
	}
	// a, ae, ap, aee, aep, ape, app
	l := g.waitN(t, 7)
	slices.Sort(l)
	if want := []string{"a", "ae", "aee", "aep", "ap", "ape", "app"}; !slices.Equal(l, want) {
		t.Errorf("got %v, want %v", l, want)
	}
}

// Hazard 2: EventBus unsubscribes by code pointer. Disposing a bridge (or
// one of two bridges on the same bus) must not remove any application
// handler, even ones made from one closure literal.
func TestDisposeNeverUnsubscribesApplicationHandlers(t *testing.T) {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()
	g := newGot()
	for _, name := range []string{"app1", "app2"} {
		if err := bus.Subscribe("test/note", func(s string) { g.add(name + ":" + s) }); err != nil {
			t.Fatal(err)
		}
	}
	mk := func() *host.Fiber {
		f, err := h.Root().Plugin(host.Define("bridge", nil, func(c *host.Context) error {
			b, err := busbridge.New(c, bus)
			if err != nil {
				return err
			}
			_, err = busbridge.Forward(b, evNote)
			return err
		}), nil)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	f1, f2 := mk(), mk()
	_ = host.Emit(context.Background(), h.Root().Emitter(), evNote, "1")
	g.waitN(t, 4)
	if err := f1.Dispose(); err != nil {
		t.Fatal(err)
	}
	_ = host.Emit(context.Background(), h.Root().Emitter(), evNote, "2")
	l := g.waitN(t, 2)[4:]
	if !slices.Equal(l, []string{"app1:2", "app2:2"}) {
		t.Errorf("after disposing one bridge: %v", l)
	}
	if err := f2.Dispose(); err != nil {
		t.Fatal(err)
	}
	bus.Publish("test/note", "direct")
	if l := g.waitN(t, 2)[6:]; !slices.Equal(l, []string{"app1:direct", "app2:direct"}) {
		t.Errorf("application handlers after disposing both: %v", l)
	}
}

func TestQueueFullDropsNewest(t *testing.T) {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()
	release := make(chan struct{})
	entered := make(chan struct{}, 10)
	g := newGot()
	_ = bus.Subscribe("test/note", func(s string) {
		entered <- struct{}{}
		<-release
		g.add(s)
	})
	b, err := busbridge.New(h.Root(), bus, busbridge.WithQueueSize(1))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = busbridge.Forward(b, evNote)
	em := h.Root().Emitter()
	_ = host.Emit(context.Background(), em, evNote, "1") // taken by the goroutine
	select {
	case <-entered:
	case <-time.After(wait):
		t.Fatal("not delivered")
	}
	_ = host.Emit(context.Background(), em, evNote, "2") // queued
	_ = host.Emit(context.Background(), em, evNote, "3") // dropped
	if d := b.Dropped(); d != 1 {
		t.Errorf("dropped = %d, want 1", d)
	}
	close(release)
	if l := g.waitN(t, 2); !slices.Equal(l, []string{"1", "2"}) {
		t.Errorf("got %v", l)
	}
}

// A bus handler that blocks (as one that publishes directly into the bus
// does) cannot hang the host's disposal.
func TestStuckHandlerDoesNotHangDisposal(t *testing.T) {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()
	release := make(chan struct{})
	entered := make(chan struct{})
	_ = bus.Subscribe("test/note", func(string) { close(entered); <-release })
	var b *busbridge.Bridge
	f, _ := h.Root().Plugin(host.Define("bridge", nil, func(c *host.Context) error {
		var err error
		b, err = busbridge.New(c, bus, busbridge.WithStopTimeout(20*time.Millisecond))
		if err != nil {
			return err
		}
		_, err = busbridge.Forward(b, evNote)
		return err
	}), nil)
	_ = host.Emit(context.Background(), h.Root().Emitter(), evNote, "x")
	<-entered
	if err := f.Dispose(); !errors.Is(err, busbridge.ErrStuck) {
		t.Fatalf("Dispose = %v, want ErrStuck", err)
	}
	if b.Publish("late", 1) {
		t.Error("publish after dispose accepted")
	}
	if _, err := busbridge.Forward(b, evNote); !errors.Is(err, busbridge.ErrClosed) {
		t.Errorf("Forward after dispose = %v", err)
	}
	close(release)
	select {
	case <-b.Done():
	case <-time.After(wait):
		t.Fatal("goroutine did not exit")
	}
}
