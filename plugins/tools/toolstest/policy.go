package toolstest

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Unit tests of policies. A policy (a tools/pre-execute listener, a guard,
// a tools/execute wrapper) is a function of an *tools.Execution; these
// helpers build one and run the policy against it as the pipeline would,
// with no host and no registry:
//
//	exec := toolstest.NewExecution(t, tools.Call{Arguments: json.RawMessage(`{"path":".env"}`)}, readFile)
//	res, denied := toolstest.RunGuard(noSecrets, exec)
//
// An execution goes through each stage once, as in the pipeline: make a
// new one for each run.

// NewExecution returns the execution the pipeline hands to policy for call
// to the tool d defines (see [tools.NewExecution]: the id and arguments
// are checked, canonicalized and validated as Execute does; call.Name may
// be empty). It fails the test when d is invalid or the call would be
// rejected before any policy runs (INVALID_CALL, INVALID_ARGS); to test
// such a rejection, call tools.NewExecution.
func NewExecution(t testing.TB, call tools.Call, d tools.Definition) *tools.Execution {
	t.Helper()
	exec, err := tools.NewExecution(call, d)
	if err != nil {
		t.Fatal(err)
	}
	return exec
}

// RunPreExecute runs l as the only tools/pre-execute listener for exec;
// its next is the waterfall's base, which allows. It returns l's decision,
// or l's error (a panic is recovered as one), or an error when the
// decision is malformed (see [tools.PreDecision.Validate]; the pipeline
// fails such a call closed, INVALID_DECISION).
func RunPreExecute(ctx context.Context, exec *tools.Execution, l events.WaterfallListener[*tools.Execution, tools.PreDecision]) (tools.PreDecision, error) {
	return tools.Offline{}.PreExecute(ctx, exec, l)
}

// RunGuard runs g for exec as the pipeline's guard stage does, and reports
// whether g denied the call; if it did, res is the call's final result as
// the caller would get it without post-execute listeners: "Tool call
// denied: ..." with the code DENIED, the error's own [tools.Coder] code,
// or GUARD_FAILED when g panicked.
func RunGuard(g tools.Guard, exec *tools.Execution) (res tools.Result, denied bool) {
	return tools.Offline{}.Guard(g, exec)
}

// RunWrapper runs w as the only tools/execute wrapper for exec (nil: no
// wrapper) and returns the call's final result as the caller would get it
// without post-execute listeners. next runs exec's tool body as the
// pipeline's dispatch does: under the context w passes, still cancelled
// with ctx; not at all once ctx is done (ABORTED_BEFORE_DISPATCH); its
// error or panic becomes an isError result (its code, or TOOL_ERROR). When
// w returns, a body it left running is cancelled and waited for, and a
// failing w is LISTENER_ERROR (or its error's code), as in the pipeline.
// A typed tool's body gets the value decoded when the execution was made.
func RunWrapper(ctx context.Context, exec *tools.Execution, w events.WaterfallListener[*tools.Execution, tools.Result]) tools.Result {
	return tools.Offline{}.Execute(ctx, exec, w)
}
