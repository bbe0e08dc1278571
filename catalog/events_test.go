package catalog

import (
	"context"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/events"
)

var (
	goldenPing = events.NewEvent[string](events.Descriptor{Name: "demo/ping", Mode: events.ModeEmit, Doc: "A ping was sent."})
	goldenPar  = events.NewEvent[int](events.Descriptor{Name: "demo/fan-out", Mode: events.ModeParallel, Doc: "Fan out.", Failure: events.Propagate})
	goldenAsk  = events.NewQuery[string, bool](events.Descriptor{Name: "other/ask", Mode: events.ModeBail, Doc: "First answer wins.", Filtered: true})
	goldenWf   = events.NewWaterfall[context.Context, error](events.Descriptor{Name: "other/wrap", Mode: events.ModeWaterfall, Doc: "Middleware.", Failure: events.Propagate, Filtered: true})
)

func TestRenderEventsGolden(t *testing.T) {
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(here))
	ds := []*events.Descriptor{goldenWf.Descriptor(), goldenPing.Descriptor(), goldenAsk.Descriptor(), goldenPar.Descriptor()}
	got := RenderEvents(ds, root)
	golden(t, "events.golden.md", got)
	if !strings.Contains(got, "catalog/events_test.go:") {
		t.Errorf("source location not relative to the module root:\n%s", got)
	}
}

func TestRenderEventsDeterministic(t *testing.T) {
	a := RenderEvents([]*events.Descriptor{goldenPing.Descriptor(), goldenAsk.Descriptor()}, "")
	b := RenderEvents([]*events.Descriptor{goldenAsk.Descriptor(), goldenPing.Descriptor()}, "")
	if a != b {
		t.Fatal("output depends on input order")
	}
}
