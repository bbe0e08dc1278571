package hooks_test

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/hooks"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A Claude Code PreToolUse payload answered with a registry's policy: a
// tools/pre-execute listener that denies Bash commands holding "sudo".
func Example() {
	h := host.New()
	defer h.Close()
	_, _ = h.Root().Plugin(tools.Plugin, tools.Config{Mode: tools.Native})
	reg, _ := tools.Service.Get(h.Root())
	_, _ = host.OnWaterfall(h.Root(), tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if x.Name() == "Bash" && strings.Contains(x.Arg("command").String(), "sudo") {
			return tools.Denied("no sudo"), nil
		}
		return next(ctx)
	})
	load := func(context.Context, hooks.Payload) (hooks.Policy, func(), error) { return reg, nil, nil }

	payload := `{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"sudo rm -rf /"},"tool_use_id":"toolu_1"}`
	code := hooks.Run(context.Background(), hooks.ClaudeCode, strings.NewReader(payload), os.Stdout, os.Stderr, load, hooks.Options{})
	fmt.Println("exit", code)
	// Output:
	// {"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"Tool call denied: no sudo"}}
	// exit 0
}
