package tools

import (
	"errors"
	"reflect"
	"strings"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// ErrorCode is the stable failure class of an isError [Result] (its
// [ErrorInfo].Code, "error.code" on the wire): an upper-case ASCII word
// such as "DENIED". Codes are part of the public contract: retry, sandbox
// and replay plugins switch on them. The codes the registry, its Code Mode
// and the policy plugins of this module produce are the constants below;
// a tool or policy may carry its own (any non-empty string), through a
// [Coder] error or [NewError].
type ErrorCode string

// The codes of this module, in one place.
const (
	// CodeUnknownTool: no tool of that name is visible to the call's agent.
	CodeUnknownTool ErrorCode = "UNKNOWN_TOOL"
	// CodeInvalidArgs: the arguments are not lossless JSON, not an object,
	// or fail a typed tool's schema (the message lists every violation).
	CodeInvalidArgs ErrorCode = "INVALID_ARGS"
	// CodeInvalidCall: the call itself is malformed: its ID is not a valid
	// call id (see [Call].ID: invalid UTF-8, a control character, longer
	// than [MaxCallIDLen]). Like INVALID_ARGS it is decided before any
	// policy runs; the result carries a repaired CallID (see [Result]).
	CodeInvalidCall ErrorCode = "INVALID_CALL"
	// CodeAborted: the call's context was cancelled while the tool body ran;
	// reported after the body returned.
	CodeAborted ErrorCode = "ABORTED"
	// CodeAbortedBeforeDispatch: the call's context was done before the tool
	// body started (including while waiting for approval): the body never
	// ran, whatever context a tools/execute wrapper passed to next and
	// whether or not a wrapper short-circuited. Also the answer of a next
	// called after the tools/execute stage was over.
	CodeAbortedBeforeDispatch ErrorCode = "ABORTED_BEFORE_DISPATCH"
	// CodeToolError: the tool body returned an error that carries no code of
	// its own, panicked, or called runtime.Goexit.
	CodeToolError ErrorCode = "TOOL_ERROR"
	// CodeDenied: a tools/pre-execute listener returned a deny decision, or a
	// guard returned an error without a code of its own.
	CodeDenied ErrorCode = "DENIED"
	// CodeGuardFailed: a guard panicked or called runtime.Goexit; the call
	// is denied (fail closed).
	CodeGuardFailed ErrorCode = "GUARD_FAILED"
	// CodeApprovalRejected: an ask was answered "rejected".
	CodeApprovalRejected ErrorCode = "APPROVAL_REJECTED"
	// CodeApprovalCancelled: an ask was answered "cancelled" (the user
	// dismissed the prompt).
	CodeApprovalCancelled ErrorCode = "APPROVAL_CANCELLED"
	// CodeApprovalUnavailable: an ask could not be put to anyone: no approval
	// service is mounted, the call has no agent, or the service answered
	// "unavailable".
	CodeApprovalUnavailable ErrorCode = "APPROVAL_UNAVAILABLE"
	// CodeApprovalFailed: the approval service returned an error, panicked,
	// called runtime.Goexit or answered with an unknown outcome; the call is
	// denied (fail closed).
	CodeApprovalFailed ErrorCode = "APPROVAL_FAILED"
	// CodeBlocked: a tools/post-execute listener blocked the result; the
	// content is its feedback.
	CodeBlocked ErrorCode = "BLOCKED"
	// CodeListenerError: a tools/* waterfall listener returned an error
	// without a code of its own, panicked, or called runtime.Goexit.
	CodeListenerError ErrorCode = "LISTENER_ERROR"
	// CodeInvalidDecision: a listener returned a malformed decision (zero or
	// unknown kind, deny without a reason, a field that does not belong to
	// the kind). The call fails closed.
	CodeInvalidDecision ErrorCode = "INVALID_DECISION"
	// CodeInvalidResult: the final result is not lossless JSON (invalid
	// UTF-8, an unknown content type, a missing required content field,
	// meta that is not lossless JSON, error info on a success).
	CodeInvalidResult ErrorCode = "INVALID_RESULT"
	// CodeInvalidOutput: a tool that declares its output
	// ([Definition].OutputSchema) produced a value that does not match the
	// schema (the message lists every violation with its path), no value,
	// or a value it cannot render; or a tool without a declared output
	// returned a value. A mounted MCP server that violates its own
	// outputSchema gets it too.
	CodeInvalidOutput ErrorCode = "INVALID_OUTPUT"
	// CodeToolTimeout: the tool's time budget expired: its declared
	// Timeout (enforced by the registry) or a budget of the timeout
	// policy (plugins/timeout-policy).
	CodeToolTimeout ErrorCode = "TOOL_TIMEOUT"
	// CodeCodeRunFailed: a Code Mode program failed: run_code's result
	// (see codemode.CodeRunFailedError, package plugins/codemode).
	CodeCodeRunFailed ErrorCode = "CODE_RUN_FAILED"
	// CodeRunSettled: a Code Mode binding call refused because its run had
	// already settled (the runtime kept the binding and called it after Run
	// returned): the call is neither dispatched nor logged. It is the code
	// the shipped runtime gives such calls too.
	CodeRunSettled ErrorCode = "RUN_SETTLED"
	// CodeInternal: the pipeline itself panicked. It should never appear;
	// it exists so that even then the call gets exactly one result.
	CodeInternal ErrorCode = "INTERNAL_ERROR"
)

// Coder is implemented by typed errors that carry a stable failure code
// (such as *schema.ArgsError, "INVALID_ARGS"). When a tool, listener or
// guard fails with a Coder anywhere in its error chain, the result's
// error.code is c.Code() (an empty code counts as none).
//
// The method returns a plain string rather than an [ErrorCode] so that
// errors of packages that do not import tools (schema, a code runtime,
// another library) implement it as they are; return string(tools.CodeX)
// to use one of this package's codes, or use [Error].
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
func NewError(code ErrorCode, name, message string) *Error {
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
	return string(e.Info.Code)
}

// Unwrap returns Err.
func (e *Error) Unwrap() error { return e.Err }

// Code implements [Coder].
func (e *Error) Code() string { return string(e.Info.Code) }

// Name implements [Namer].
func (e *Error) Name() string { return e.Info.Name }

var (
	_ Coder = (*Error)(nil)
	_ Namer = (*Error)(nil)
)

// Registration errors. The errors Register, Restrict, Guard and PresentAs return wrap
// one of these, so callers can match them with errors.Is.
var (
	// ErrInvalidDefinition: the definition failed [Definition.Validate].
	ErrInvalidDefinition = errors.New("tools: invalid tool definition")
	// ErrDuplicate: a tool of that name is already registered in the layer.
	ErrDuplicate = errors.New("tools: duplicate tool name")
	// ErrNotScoped: Restrict or PresentAs was called through a plain
	// (global) context.
	ErrNotScoped = errors.New("tools: an agent-scoped context is needed")
	// ErrEmptyRestriction: a restriction with neither Allow nor Deny names.
	ErrEmptyRestriction = errors.New("tools: empty restriction")
	// ErrUnknownName: a restriction names a tool the scope does not know.
	ErrUnknownName = errors.New("tools: restriction names an unknown tool")
	// ErrReserved: the name is a reserved transport name of the mode.
	ErrReserved = errors.New("tools: reserved tool name")
	// ErrPresentedTwice: PresentAs in a scope that already has a
	// declaration in force.
	ErrPresentedTwice = errors.New("tools: the agent's presentation is already declared")
	// ErrNoCodeMode: PresentAs chose Code or Both on a registry without
	// Code Mode attached (tools.Plugin rather than codemode.Plugin).
	ErrNoCodeMode = errors.New("tools: Code Mode is not loaded")
)

// Reading what user code hands back. A tool, listener, guard or approver
// returns an error (or panics with a value) that the pipeline must turn
// into a result: its text, its Coder code and Namer name, and whether it is
// the call's cancellation. Each of those reads calls the value's own
// methods (Error, Code, Name, Unwrap, Is, As), which may panic, return
// invalid UTF-8 or form a cyclic chain. So every read below runs under
// recover, walks at most safeerr.MaxChain wrapped errors, and returns valid
// UTF-8: a hostile error value still becomes an ordinary isError result.
// (runtime.Goexit in such a method is handled by Execute's deferred
// completion.)

// safeName returns n.Name() as valid UTF-8, or "" when it panics.
func safeName(n Namer) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return strings.ToValidUTF8(n.Name(), "\uFFFD")
}

// errorInfo derives the structured failure class of err: the code of the
// first Coder in its chain (with its Namer name or Go type name), or the
// fallback code with the fallback name. A Coder whose Code method panics
// or reports no code gives the fallback; one whose Name method panics is
// named by its type; a code or name that is not valid UTF-8 is repaired.
func errorInfo(err error, fallbackCode ErrorCode, fallbackName string) *ErrorInfo {
	c, ok := safeerr.As[Coder](err)
	if !ok || c == nil {
		return &ErrorInfo{Name: fallbackName, Code: fallbackCode}
	}
	code := ErrorCode(safeCode(c))
	if code == "" {
		return &ErrorInfo{Name: fallbackName, Code: fallbackCode}
	}
	name := ""
	if n, ok := c.(Namer); ok {
		name = safeName(n)
	}
	if name == "" {
		t := reflect.TypeOf(c)
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		name = t.Name()
	}
	return &ErrorInfo{Name: name, Code: code}
}

// safeCode returns c.Code() as valid UTF-8, or "" when it panics.
func safeCode(c Coder) (s string) {
	defer func() {
		if recover() != nil {
			s = ""
		}
	}()
	return strings.ToValidUTF8(c.Code(), "\uFFFD")
}

// failure builds an isError result with one text block.
func failure(code ErrorCode, name, text string) Result {
	return Result{Content: []Content{Text(text)}, IsError: true, Error: &ErrorInfo{Name: name, Code: code}}
}

// errorResult builds an isError result from err, prefixing its message.
func errorResult(prefix string, err error, fallbackCode ErrorCode, fallbackName string) Result {
	msg := safeerr.Text(err)
	if prefix != "" {
		msg = prefix + ": " + msg
	}
	return Result{Content: []Content{Text(msg)}, IsError: true, Error: errorInfo(err, fallbackCode, fallbackName)}
}

func panicMessage(what string, v any) string {
	return what + " panicked: " + safeerr.Sprint(v)
}

// ApprovalOutcomeOf names the denial an approval stage's error code stands
// for: Rejected, Cancelled or Unavailable for CodeApprovalRejected,
// CodeApprovalCancelled and CodeApprovalUnavailable, and "failed" for any
// other code (the stage failed otherwise, e.g. the approver panicked).
func ApprovalOutcomeOf(code ErrorCode) ApprovalOutcome {
	switch code {
	case CodeApprovalRejected:
		return Rejected
	case CodeApprovalCancelled:
		return Cancelled
	case CodeApprovalUnavailable:
		return Unavailable
	}
	return "failed"
}
