package approval

import (
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// Render writes a plain-text rendering of the request: who asks, the tool's
// call card (or, without one, the tool name and its raw arguments; see
// cardtext.Call) and the reason. Everything that comes from the model or
// the tool is sanitized: control characters (terminal escape sequences
// could otherwise rewrite what the person sees) are shown as Go escapes,
// invalid UTF-8 as U+FFFD. [Terminal] uses it; other UIs may too.
func Render(req tools.ApprovalRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Approval requested: tool %s, call %s", cardtext.Line(req.Tool), cardtext.Line(req.CallID))
	if req.Agent != "" {
		fmt.Fprintf(&b, ", agent %s", cardtext.Line(string(req.Agent)))
	}
	b.WriteString("\n")
	var args []byte
	if req.Execution != nil {
		args = req.Execution.Args()
	}
	b.WriteString(cardtext.Call(req.Tool, args, req.Call))
	if req.Reason != "" {
		fmt.Fprintf(&b, "  reason: %s\n", cardtext.Line(req.Reason))
	}
	return b.String()
}
