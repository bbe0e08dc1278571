package main

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The "timeouts" of a dsh.json bound the tools they match, first match in
// file order, with TOOL_TIMEOUT, through the timeout policy; a pattern
// names the tools a permission rule with the same text names ("mcp__srv":
// every tool of the server srv); other tools run unbounded.
func TestGateway_PerToolTimeouts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := host.New()
		defer h.Close()
		root := h.Root()
		root.Plugin(tools.Plugin, nil)
		reg, err := tools.Service.Get(root)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"mcp__slow__a", "mcp__slow__b", "mcp__srv__x", "other"} {
			reg.Register(root, tools.Definition{
				Name: name, Description: "Sleeps 10s unless cancelled.",
				Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
					select {
					case <-time.After(10 * time.Second):
						return tools.TextOutput("done"), nil
					case <-ctx.Done():
						return tools.Output{}, ctx.Err()
					}
				},
			})
		}
		ts := []dshconfig.Timeout{{Tool: "mcp__slow__b", Budget: 5 * time.Second}, {Tool: "mcp__slow__*", Budget: time.Second}, {Tool: "mcp__srv", Budget: 2 * time.Second}}
		if f, err := root.Plugin(timeoutpolicy.Plugin, timeoutConfig(ts)); err != nil || f.Err() != nil {
			t.Fatal(err, f.Err())
		}
		for _, tc := range []struct {
			tool string
			took time.Duration
			code tools.ErrorCode
		}{
			{"mcp__slow__a", time.Second, tools.CodeToolTimeout},
			{"mcp__slow__b", 5 * time.Second, tools.CodeToolTimeout},
			{"mcp__srv__x", 2 * time.Second, tools.CodeToolTimeout},
			{"other", 10 * time.Second, ""},
		} {
			start := time.Now()
			r := reg.Execute(context.Background(), tools.Call{Name: tc.tool})
			if took := time.Since(start); took != tc.took {
				t.Errorf("%s took %v, want %v", tc.tool, took, tc.took)
			}
			if (r.Error == nil) != (tc.code == "") || r.Error != nil && r.Error.Code != tc.code {
				t.Errorf("%s: %+v", tc.tool, r.Error)
			}
		}
	})
}
