package busbridge_test

import (
	"context"
	"slices"
	"testing"

	EventBus "github.com/asaskevich/EventBus"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/busbridge"
)

var evScoped = events.NewEvent[string](events.Descriptor{
	Name: "test/scoped-note", Mode: events.ModeEmit, Doc: "A scope-filtered test notification.", Filtered: true,
})

// Pins Forward's doc: a bridge created through an agent scope forwards a
// scope-filtered event's dispatches for that scope only, not global ones.
func TestH12_ForwardThroughScopeGetsOnlyItsScope(t *testing.T) {
	h := host.New()
	defer h.Close()
	sc, err := h.Root().Scope("a")
	if err != nil {
		t.Fatal(err)
	}
	bus := EventBus.New()
	g := newGot()
	if err := bus.Subscribe("test/scoped-note", func(s string) { g.add(s) }); err != nil {
		t.Fatal(err)
	}
	b, err := busbridge.New(sc, bus)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := busbridge.Forward(b, evScoped); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, s := range []host.ScopeKey{"", "b", "a"} {
		if err := host.Emit(ctx, h.Emitter(s), evScoped, "scope:"+string(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := sc.Fiber().Dispose(); err != nil { // drains the queue
		t.Fatal(err)
	}
	if got := g.list(); !slices.Equal(got, []string{"scope:a"}) {
		t.Fatalf("forwarded %v, want only scope:a", got)
	}
}
