package toolotel_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/dsh-go/dsh/host"
	toolotel "github.com/dsh-go/dsh/plugins/otel"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A registry with the otel plugin: each call is an execute_tool span with
// a child span per stage that ran (an unknown tool has no body to
// dispatch), and a failed call's status is its error code.
func Example() {
	exporter := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exporter))
	defer tp.Shutdown(context.Background())

	h := host.New()
	defer h.Close()
	root := h.Root()
	_, _ = root.Plugin(systemprompt.Plugin, nil)
	_, _ = root.Plugin(tools.Plugin, tools.Config{})
	if _, err := root.Plugin(toolotel.Plugin, toolotel.Config{TracerProvider: tp}); err != nil {
		fmt.Println(err)
		return
	}
	reg, _ := tools.Service.Get(root)
	_, _ = reg.Register(root, tools.Definition{
		Name: "echo", Description: "Echo a text.",
		Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(x.Arg("text").String()), nil
		},
	})

	reg.Execute(context.Background(), tools.Call{ID: "call_1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`)})
	reg.Execute(context.Background(), tools.Call{ID: "call_2", Name: "missing"})

	for _, s := range exporter.GetSpans() {
		fmt.Println(strings.TrimSpace(s.Name + " " + s.Status.Description))
	}
	// Output:
	// pre-execute
	// guards
	// dispatch
	// post-execute
	// execute_tool echo
	// pre-execute
	// guards
	// post-execute
	// execute_tool missing UNKNOWN_TOOL
}
