package tools

import (
	"encoding/json"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/tidwall/gjson"

	"github.com/dsh-go/dsh/host"
)

// Call is the caller-supplied description of one tool call (the spec's
// ToolExecutionInput). The caller's cancellation is the context.Context
// passed to [Registry.Execute] next to it.
type Call struct {
	// ID is the model's tool-call id; it is copied onto the result.
	ID string
	// Name is the tool to call.
	Name string
	// Arguments is the argument object as the model produced it. It must be
	// lossless JSON (see schema.CanonicalizeObject); empty or null means {}.
	Arguments json.RawMessage
	// Agent is the agent scope the call runs for ("" = none): tool
	// resolution, scope-filtered listeners, scoped guards and approval all
	// follow it.
	Agent host.ScopeKey
	// Parent is the token of an enclosing execution (a Code Mode sub-call),
	// or zero.
	Parent Token
}

// Token is the opaque identity of one execution, assigned by the registry
// (callers can only pass an existing token as a Call's Parent). Tokens are
// comparable; the zero Token means "none". A Token exposes no state of the
// execution it names.
type Token struct{ id uint64 }

var tokenSeq atomic.Uint64

func newToken() Token { return Token{id: tokenSeq.Add(1)} }

// IsZero reports whether t is the zero ("none") token.
func (t Token) IsZero() bool { return t.id == 0 }

// String returns an opaque label for logs ("tok-17"); it is not a way to
// make tokens.
func (t Token) String() string {
	if t.id == 0 {
		return "tok-none"
	}
	return "tok-" + strconv.FormatUint(t.id, 10)
}

// Execution is the pipeline-owned identity of one call, shared by every
// phase: token, call id, tool name, the frozen canonical arguments, agent,
// parent and the tool resolved for the agent when the call entered the
// pipeline (nil for an unknown tool). It is immutable and safe for
// concurrent use: the arguments are held as a string, every accessor
// returns a copy or an immutable value, so no listener can change what
// another phase or the tool body sees.
type Execution struct {
	token  Token
	callID string
	name   string
	args   string // canonical JSON; "" when the input was rejected
	agent  host.ScopeKey
	parent Token
	tool   *Tool
	// hint is appended to the UNKNOWN_TOOL message (Code Mode's "call it
	// from run_code").
	hint string
	// settled is set once the tools/execute stage returned: dispatch no
	// longer runs the body after that.
	settled atomic.Bool
}

// Token returns the execution's opaque identity.
func (e *Execution) Token() Token { return e.token }

// CallID returns the model's tool-call id.
func (e *Execution) CallID() string { return e.callID }

// Name returns the called tool's name.
func (e *Execution) Name() string { return e.name }

// Args returns a copy of the canonical argument bytes (nil when the input
// was rejected as not lossless; such executions never reach a policy or a
// tool). Prefer [Execution.Arg] or [Execution.Decode] on hot paths.
func (e *Execution) Args() json.RawMessage {
	if e.args == "" {
		return nil
	}
	return json.RawMessage(e.args)
}

// ArgsString returns the canonical arguments as a string, without copying.
func (e *Execution) ArgsString() string { return e.args }

// Arg reads one value from the arguments by gjson path ("path",
// "edits.0.old", ...) without decoding the rest.
func (e *Execution) Arg(path string) gjson.Result { return gjson.Get(e.args, path) }

// Decode unmarshals the arguments into v (a pointer), as encoding/json
// does.
func (e *Execution) Decode(v any) error {
	args := e.args
	if args == "" {
		args = "{}"
	}
	return json.Unmarshal([]byte(args), v)
}

// Agent returns the agent scope of the call ("" = none).
func (e *Execution) Agent() host.ScopeKey { return e.agent }

// Parent returns the enclosing execution's token, or zero.
func (e *Execution) Parent() Token { return e.parent }

// Tool returns the tool this call dispatches to, as resolved for the agent
// when the call entered the pipeline, or nil for an unknown tool.
func (e *Execution) Tool() *Tool { return e.tool }

// ErrorInfo is the structured failure class of an isError result.
type ErrorInfo struct {
	Name string `json:"name"`
	Code string `json:"code"`
}

// Result is the outcome of one call (the spec's ToolExecutionResult). It is
// a value: every copy the pipeline hands out (to the caller, to each
// observer, to each post-execute listener) shares no mutable memory with
// another, so nobody can change what someone else sees. Use
// [Result.Clone] when keeping one.
type Result struct {
	// CallID is the call's id.
	CallID string `json:"callId"`
	// Content is the model-facing content.
	Content []Content `json:"content"`
	// IsError marks a failed call.
	IsError bool `json:"isError"`
	// Error is the structured failure class. Execute sets it on every
	// isError result (TOOL_ERROR when nothing more specific is known) and
	// never on a success, so a failed result's Error is never nil.
	Error *ErrorInfo `json:"error,omitempty"`
	// AdditionalContext is context for the agent loop to append after the
	// step's tool results, in the order tool, wrapper, post-execute.
	AdditionalContext []string `json:"additionalContext,omitempty"`
	// Meta is the tool's opaque presentation payload (lossless JSON) from a
	// successful execute.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// Clone returns a deep copy of r.
func (r Result) Clone() Result {
	r.Content = slices.Clone(r.Content)
	r.AdditionalContext = slices.Clone(r.AdditionalContext)
	r.Meta = slices.Clone(r.Meta)
	if r.Error != nil {
		e := *r.Error
		r.Error = &e
	}
	return r
}

// Data returns what presentResult receives about r (a copy).
func (r Result) Data() ResultData {
	c := r.Clone()
	return ResultData{Content: c.Content, IsError: c.IsError, Meta: c.Meta}
}

// Validate reports whether r is losslessly JSON-serializable: valid content
// blocks, meta that is lossless JSON, no error info on a success.
func (r Result) Validate() error {
	_, err := validateResult(r)
	return err
}
