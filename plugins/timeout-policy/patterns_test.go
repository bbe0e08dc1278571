package timeoutpolicy_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Config.Tools bounds the tools its patterns name, first match, in the
// grammar of permission rules ("mcp__fs" names every tool of the server
// fs); a tool's declared budget wins; Default covers the rest.
func TestToolBudgetsByPattern(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		sleep := func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			select {
			case <-time.After(time.Hour):
				return ok("done")
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			}
		}
		e.tool(t, "mcp__fs__write_file", 0, sleep)
		e.tool(t, "mcp__fs__read_file", 0, sleep)
		e.tool(t, "declared", 7*time.Second, sleep)
		e.tool(t, "other", 0, sleep)
		e.load(t, timeoutpolicy.Plugin, timeoutpolicy.Config{
			Tools:   []timeoutpolicy.ToolBudget{{Tool: "mcp__fs__read_*", Budget: 2 * time.Second}, {Tool: "mcp__fs", Budget: 3 * time.Second}, {Tool: "declared", Budget: time.Second}},
			Default: 9 * time.Second,
		})
		for _, tc := range []struct {
			tool string
			took time.Duration
		}{
			{"mcp__fs__read_file", 2 * time.Second},
			{"mcp__fs__write_file", 3 * time.Second},
			{"declared", 7 * time.Second},
			{"other", 9 * time.Second},
		} {
			start := time.Now()
			if res := e.exec(context.Background(), tc.tool); code(res) != tools.CodeToolTimeout || time.Since(start) != tc.took {
				t.Errorf("%s: %+v after %v, want TOOL_TIMEOUT after %v", tc.tool, res.Error, time.Since(start), tc.took)
			}
		}
	})
}

func TestToolBudgetsAreValidated(t *testing.T) {
	for _, tb := range []timeoutpolicy.ToolBudget{{Tool: "", Budget: time.Second}, {Tool: "a b", Budget: time.Second}, {Tool: "x", Budget: 0}, {Tool: "x", Budget: -1}} {
		if err := (timeoutpolicy.Config{Tools: []timeoutpolicy.ToolBudget{tb}}).Validate(); err == nil {
			t.Errorf("%+v accepted", tb)
		}
	}
}
