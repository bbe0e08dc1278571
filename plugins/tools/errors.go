package tools

import (
	"errors"
	"fmt"
	"reflect"
)

// Stable failure codes carried in [ErrorInfo].Code of an isError [Result].
// They are part of the public contract: retry, sandbox and replay plugins
// switch on them.
const (
	// CodeUnknownTool: no tool of that name is visible to the call's agent.
	CodeUnknownTool = "UNKNOWN_TOOL"
	// CodeInvalidArgs: the arguments are not lossless JSON, not an object,
	// or fail a typed tool's schema (the message lists every violation).
	CodeInvalidArgs = "INVALID_ARGS"
	// CodeAborted: the call's context was cancelled while the tool body ran;
	// reported after the body returned.
	CodeAborted = "ABORTED"
	// CodeAbortedBeforeDispatch: the call's context was done before the tool
	// body started (including while waiting for approval).
	CodeAbortedBeforeDispatch = "ABORTED_BEFORE_DISPATCH"
	// CodeToolError: the tool body returned an error that carries no code of
	// its own, or panicked.
	CodeToolError = "TOOL_ERROR"
	// CodeDenied: a tools/pre-execute listener returned a deny decision, or a
	// guard returned a reason.
	CodeDenied = "DENIED"
	// CodeGuardFailed: a guard panicked; the call is denied (fail closed).
	CodeGuardFailed = "GUARD_FAILED"
	// CodeApprovalRejected: an ask was answered "rejected".
	CodeApprovalRejected = "APPROVAL_REJECTED"
	// CodeApprovalCancelled: an ask was answered "cancelled" (the user
	// dismissed the prompt).
	CodeApprovalCancelled = "APPROVAL_CANCELLED"
	// CodeApprovalUnavailable: an ask could not be put to anyone: no approval
	// service is mounted, the call has no agent, or the service answered
	// "unavailable".
	CodeApprovalUnavailable = "APPROVAL_UNAVAILABLE"
	// CodeApprovalFailed: the approval service returned an error, panicked
	// or answered with an unknown outcome; the call is denied (fail closed).
	CodeApprovalFailed = "APPROVAL_FAILED"
	// CodeBlocked: a tools/post-execute listener blocked the result; the
	// content is its feedback.
	CodeBlocked = "BLOCKED"
	// CodeListenerError: a tools/* waterfall listener returned an error
	// without a code of its own, or panicked.
	CodeListenerError = "LISTENER_ERROR"
	// CodeInvalidDecision: a listener returned a malformed decision (zero or
	// unknown kind, deny without a reason, a field that does not belong to
	// the kind). The call fails closed.
	CodeInvalidDecision = "INVALID_DECISION"
	// CodeInvalidResult: the final result is not lossless JSON (invalid
	// UTF-8, an unknown content type, a missing required content field,
	// meta that is not lossless JSON, error info on a success).
	CodeInvalidResult = "INVALID_RESULT"
	// CodeToolTimeout: the timeout policy's own deadline for the tool's
	// Timeout fired (set by plugins/timeout-policy, not by this package).
	CodeToolTimeout = "TOOL_TIMEOUT"
	// CodeCodeRunFailed: a Code Mode program failed (reserved for Code
	// Mode).
	CodeCodeRunFailed = "CODE_RUN_FAILED"
	// CodeInternal: the pipeline itself panicked. It should never appear;
	// it exists so that even then the call gets exactly one result.
	CodeInternal = "INTERNAL_ERROR"
)

// Coder is implemented by typed errors that carry a stable failure code
// (such as *schema.ArgsError, "INVALID_ARGS"). When a tool, listener or
// guard fails with a Coder anywhere in its error chain, the result's
// error.code is that code.
type Coder interface {
	Code() string
}

// Namer is optionally implemented by a [Coder] to name its failure class
// (error.name). Without it the name is the error's Go type name.
type Namer interface {
	Name() string
}

// Error is a ready-made typed error for tools and listeners: it reports
// Info.Code and Info.Name as the result's error info, Message (or Err's
// message) as the model-facing text, and unwraps to Err.
//
// Go does not allow a field and a method of the same name, so the code and
// name live in Info rather than in fields called Code and Name.
type Error struct {
	Info    ErrorInfo
	Message string
	Err     error
}

// NewError returns an *Error with the given code, name and message.
func NewError(code, name, message string) *Error {
	return &Error{Info: ErrorInfo{Code: code, Name: name}, Message: message}
}

// Error implements error.
func (e *Error) Error() string {
	switch {
	case e.Message != "" && e.Err != nil:
		return e.Message + ": " + e.Err.Error()
	case e.Message != "":
		return e.Message
	case e.Err != nil:
		return e.Err.Error()
	}
	return e.Info.Code
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Code implements [Coder].
func (e *Error) Code() string { return e.Info.Code }

// Name implements [Namer].
func (e *Error) Name() string { return e.Info.Name }

var (
	_ Coder = (*Error)(nil)
	_ Namer = (*Error)(nil)
)

// Registration errors. The errors Register, Restrict and Guard return wrap
// one of these, so callers can match them with errors.Is.
var (
	// ErrInvalidDefinition: the definition failed [Definition.Validate].
	ErrInvalidDefinition = errors.New("tools: invalid tool definition")
	// ErrDuplicate: a tool of that name is already registered in the layer.
	ErrDuplicate = errors.New("tools: duplicate tool name")
	// ErrNotScoped: Restrict was called through a plain (global) context.
	ErrNotScoped = errors.New("tools: restrict needs an agent-scoped context")
	// ErrEmptyRestriction: a restriction with neither Allow nor Deny names.
	ErrEmptyRestriction = errors.New("tools: empty restriction")
	// ErrUnknownName: a restriction names a tool the scope does not know.
	ErrUnknownName = errors.New("tools: restriction names an unknown tool")
	// ErrReserved: the name is a reserved transport name of the mode.
	ErrReserved = errors.New("tools: reserved tool name")
)

// errorInfo derives the structured failure class of err: the code of the
// first Coder in its chain (with its Namer name or Go type name), or the
// fallback code with the fallback name.
func errorInfo(err error, fallbackCode, fallbackName string) *ErrorInfo {
	var c Coder
	if errors.As(err, &c) && c.Code() != "" {
		name := ""
		if n, ok := c.(Namer); ok {
			name = n.Name()
		}
		if name == "" {
			t := reflect.TypeOf(c)
			for t.Kind() == reflect.Pointer {
				t = t.Elem()
			}
			name = t.Name()
		}
		return &ErrorInfo{Name: name, Code: c.Code()}
	}
	return &ErrorInfo{Name: fallbackName, Code: fallbackCode}
}

// failure builds an isError result with one text block.
func failure(code, name, text string) Result {
	return Result{Content: []Content{Text(text)}, IsError: true, Error: &ErrorInfo{Name: name, Code: code}}
}

// errorResult builds an isError result from err, prefixing its message.
func errorResult(prefix string, err error, fallbackCode, fallbackName string) Result {
	msg := err.Error()
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	return Result{Content: []Content{Text(msg)}, IsError: true, Error: errorInfo(err, fallbackCode, fallbackName)}
}

func panicMessage(what string, v any) string {
	return fmt.Sprintf("%s panicked: %v", what, v)
}
