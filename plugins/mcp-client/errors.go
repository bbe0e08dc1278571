package mcpclient

import (
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools"
)

// The error codes of a mounted tool's failed call (tools.ErrorInfo.Code),
// besides the pipeline's own (ABORTED when the caller cancels, ...).
const (
	// CodeServerUnavailable: the server is not connected (not started
	// yet, reconnecting, given up) or the session ended during the call
	// (the server died, closed the connection or sent a message larger
	// than the limit). The call did not complete; it may or may not have
	// had effects.
	CodeServerUnavailable tools.ErrorCode = "MCP_SERVER_UNAVAILABLE"
	// CodeToolError: the server's tool reported a failure (isError); the
	// content is the server's text.
	CodeToolError tools.ErrorCode = "MCP_TOOL_ERROR"
	// CodeServerError: the server answered the call with a JSON-RPC error
	// (unknown tool, invalid params, internal error).
	CodeServerError tools.ErrorCode = "MCP_SERVER_ERROR"
	// CodeInvalidOutput is tools.CodeInvalidOutput: the tool declared an
	// output schema in the structured-output subset and the server's
	// structured content does not match it (or is missing); the message
	// names the server and lists the violations.
	CodeInvalidOutput = tools.CodeInvalidOutput
	// CodeCallTimeout is tools.CodeToolTimeout: the server's
	// Config.CallTimeout expired and the request was cancelled.
	CodeCallTimeout = tools.CodeToolTimeout
)

// failf returns a *tools.Error with code and a formatted message.
func failf(code tools.ErrorCode, name, format string, a ...any) error {
	return tools.NewError(code, name, fmt.Sprintf(format, a...))
}
