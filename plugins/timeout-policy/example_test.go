package timeoutpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A tool declares a 50ms budget; its body waits for its context. The
// policy's deadline fires, the body sees why, and the call fails with
// TOOL_TIMEOUT.
func Example() {
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, tools.Config{})
	root.Plugin(timeoutpolicy.Plugin, timeoutpolicy.Config{Default: 30 * time.Second})
	reg, _ := tools.Service.Get(root)

	reg.Register(root, tools.Definition{
		Name:        "wait",
		Description: "Waits until cancelled.",
		Timeout:     50 * time.Millisecond,
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			<-ctx.Done()
			fmt.Println("body cancelled by the policy:", errors.Is(context.Cause(ctx), timeoutpolicy.ErrTimeout))
			return tools.Output{}, ctx.Err()
		},
	})

	r := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "wait"})
	fmt.Println(r.Error.Code)
	fmt.Println(r.Content[0].Text)
	// Output:
	// body cancelled by the policy: true
	// TOOL_TIMEOUT
	// tool "wait" exceeded its time budget of 50ms; it was cancelled
}
