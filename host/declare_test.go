package host_test

import (
	"context"
	"errors"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

var (
	dupA = events.NewEvent[int](events.Descriptor{Name: "test/dup", Mode: events.ModeEmit, Doc: "a"})
	dupB = events.NewEvent[int](events.Descriptor{Name: "test/dup", Mode: events.ModeEmit, Doc: "b"})
)

// TestH9_ConflictingEventNamesFail: two handles with one name on one host
// would never meet (listeners of one, dispatches of the other) and the
// catalog would list one of them, so the second declaration fails loudly.
func TestH9_ConflictingEventNamesFail(t *testing.T) {
	h := host.New()
	defer h.Close()
	if err := h.Declare(dupA, dupA); err != nil {
		t.Fatalf("declaring one handle twice: %v", err)
	}
	if err := h.Declare(dupB); !errors.Is(err, host.ErrEventConflict) {
		t.Fatalf("Declare(conflicting) = %v, want ErrEventConflict", err)
	}
	if _, err := host.On(h.Root(), dupB, func(context.Context, int) error { return nil }); !errors.Is(err, host.ErrEventConflict) {
		t.Fatalf("On(conflicting) = %v, want ErrEventConflict", err)
	}
	if _, err := host.On(h.Root(), dupA, func(context.Context, int) error { return nil }); err != nil {
		t.Fatalf("On(first handle) = %v", err)
	}
}
