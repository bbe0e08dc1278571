package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// MaxNameLen is the longest accepted tool name, in bytes.
const MaxNameLen = 128

// ExecuteFunc is a tool body. It runs on the goroutine that calls the
// tools/execute stage's innermost next: the goroutine that called
// [Registry.Execute] unless a tools/execute wrapper runs next on a
// goroutine of its own. It runs under the call's (possibly
// wrapper-derived) context and should return promptly once ctx is done; a
// body that does not is waited for. exec is the call's immutable identity;
// exec.Args() are the canonical argument bytes. An error becomes an
// isError result whose error.code is the error's [Coder] code, or
// TOOL_ERROR; a panic is recovered into TOOL_ERROR.
type ExecuteFunc func(ctx context.Context, exec *Execution) (Output, error)

// Output is what a tool body returns: the model-facing Content, plus an
// optional opaque Meta presentation payload (lossless JSON, persisted on
// the session's tool/result event and handed back to presentResult) and
// optional AdditionalContext for the agent loop (first in the order tool,
// wrapper, post-execute). A body with only content to return can use
// [TextOutput] or an Output with only Content.
//
// AdditionalContext is deferred: the agent loop appends it after every
// tool result of the step (see [BatchContext]); it is kept even when the
// body also returns an error. ConcludeTurn asks the agent loop to end the
// turn after this step instead of calling the model again; it counts only
// on a successful result (see [ConcludesTurn]).
//
// Value is the canonical value of a tool that declares its output
// ([Definition].OutputSchema): JSON that must match the schema (a mismatch
// is an INVALID_OUTPUT error naming the path of each violation). When
// Content is nil the pipeline renders it from Value
// ([Definition].RenderOutput). A tool without a declared output leaves
// Value nil: its value is the text of its content (see
// [Result.CanonicalValue]).
type Output struct {
	Content           []Content
	Value             json.RawMessage
	Meta              json.RawMessage
	AdditionalContext []string
	ConcludeTurn      bool

	// checked is a typed body's proof that Value is canonical and valid:
	// see checkedValue. Unexported, so no other body can claim it.
	checked checkedValue
}

// checkedValue is what a typed tool's body ([Define]) knows of the value
// it encoded: text, a copy of the bytes, is canonical and valid against
// by. The pipeline trusts it only for a Value equal to text, of a tool
// whose output schema is by's, so a wrapper that changes the value in
// any way gets it validated as usual.
type checkedValue struct {
	by   *schema.ValueSchema
	text string
}

// Definition is what a tool plugin registers: the wire schema (Name,
// Description, Parameters), the body, optional presenters, and an optional
// cooperative Timeout enforced by the timeout policy (never sent to the
// model). Build one literally for a raw JSON-Schema tool (as MCP servers
// describe them; its arguments are not validated by the harness), or with
// [Define] for a typed tool. Register freezes it into a [*Tool].
type Definition struct {
	// Name is the wire name: 1 to MaxNameLen bytes of UTF-8 without
	// whitespace or control characters.
	Name string
	// Description tells the model what the tool does; it must not be empty.
	Description string
	// Parameters is the JSON Schema of the argument object. It must be
	// lossless JSON (see canonjson.Canonicalize) whose root is an object; empty
	// means {"type":"object","properties":{}}. It is stored canonicalized.
	Parameters json.RawMessage
	// Execute is the body; it must not be nil.
	Execute ExecuteFunc
	// PresentCall optionally renders a pending call. It must be pure; it may
	// be given arguments from an older session log, so it must tolerate
	// shapes it does not expect (returning nil). Panics are recovered.
	PresentCall func(args json.RawMessage) CallView
	// PresentResult optionally renders a completed call; same rules.
	PresentResult func(args json.RawMessage, r ResultData) ResultView
	// Timeout is a cooperative budget for the body, enforced by the
	// registry whether or not a timeout policy is mounted (TOOL_TIMEOUT;
	// see [ErrTimeout]). Zero means none; negative is invalid.
	Timeout time.Duration
	// ValidateArgs, when set, checks a call's canonical arguments
	// (exec.ArgsString(), exec.Arg, exec.Decode) before any policy runs; an
	// error becomes an INVALID_ARGS result. It is called on the goroutine
	// running the call, once per call, and must not block. [Define] sets it;
	// raw (MCP) definitions usually leave it nil.
	ValidateArgs func(exec *Execution) error
	// Concurrency declares which calls of the tool may run alongside
	// others in a batch ([Registry.ExecuteBatch], Code Mode sub-calls):
	// [Parallel] for every call, a [ConcurrencyFunc] deciding per call from
	// its arguments, or nil (and [Exclusive]) for none: each call is then
	// a barrier. A fixed value other than Exclusive or Parallel is invalid.
	Concurrency ConcurrencyRule
	// Annotations optionally carries behaviour hints (see [Annotations]),
	// shown on cards and in the catalog; policy acts on them only when
	// they are Trusted. Registration copies them.
	Annotations *Annotations
	// OutputSchema, when set, declares the tool's output: the JSON Schema
	// of its canonical value, in the structured-output subset
	// (schema.AssertSupportedValueSchema; any root type). A successful
	// result then carries a value ([Result].Value) that matches it: the
	// body's [Output].Value, or a tools/post-execute replacement, each
	// validated (a mismatch, or no value, is INVALID_OUTPUT with the path
	// of every violation). Empty means text-only output: the tool's value
	// is the text of its content. It is stored canonicalized.
	OutputSchema json.RawMessage
	// RenderOutput, optional with OutputSchema, turns a validated value
	// into the model-facing content when the body (or a post-execute
	// replacement of the value) gives none. Nil renders the value as its
	// JSON text, a string value as the string itself. An error or panic is
	// an INVALID_OUTPUT result. It must be pure and not block.
	RenderOutput func(value json.RawMessage) ([]Content, error)
	// FinalizeContent, optional, runs exactly once for every normalized
	// result of a call that resolved to this tool, successes and failures
	// alike (including those that never reached post-execute: invalid
	// arguments, a runtime.Goexit), synchronously, on the goroutine that
	// finalizes the call, just before the result is validated and frozen.
	// It receives a copy of the result and returns the final model-facing
	// content, or nil to keep it (a non-nil empty slice empties it). It
	// cannot change anything else: not the code, the error info, the value
	// or the additional context. A panic is contained (logged, like a
	// listener's) and fails closed: the content is replaced by a note that
	// it was withheld. Use it for what the tool owns about its final text,
	// such as a redaction.
	FinalizeContent func(exec *Execution, r Result) []Content

	// admitArgs, set by [Define], admits a call's arguments as they were
	// sent, in one pass: it reports true when they are canonical (the
	// execution's copy of them, exec.args, is already what stage 1 would
	// make of them) and pass the typed tool's validation, having stored
	// their decoded value, and marks exec so that the tool's own
	// ValidateArgs, next, accepts them without a second pass; else false,
	// and stage 1 canonicalizes them as for any tool.
	admitArgs func(exec *Execution) bool
}

// Validate checks d without registering it. Every problem is reported,
// joined; the error wraps [ErrInvalidDefinition].
func (d Definition) Validate() error {
	_, _, err := d.canonicalParameters()
	return err
}

func validateName(name string) error {
	if name == "" {
		return errors.New("empty name")
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("name is %d bytes, longer than %d", len(name), MaxNameLen)
	}
	if !utf8.ValidString(name) {
		return errors.New("name is not valid UTF-8")
	}
	for i, r := range name {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("name contains %q at offset %d (whitespace and control characters are not allowed)", r, i)
		}
	}
	return nil
}

// emptyParameters is the schema of a tool without parameters.
const emptyParameters = `{"type":"object","properties":{}}`

func (d Definition) canonicalParameters() (string, *schema.ValueSchema, error) {
	var errs []error
	if err := validateName(d.Name); err != nil {
		errs = append(errs, err)
	}
	if d.Description == "" {
		errs = append(errs, errors.New("empty description"))
	} else if !utf8.ValidString(d.Description) {
		errs = append(errs, errors.New("description is not valid UTF-8"))
	}
	if d.Execute == nil {
		errs = append(errs, errors.New("nil Execute"))
	}
	if err := checkConcurrencyRule(d.Concurrency); err != nil {
		errs = append(errs, err)
	}
	if d.Timeout < 0 {
		errs = append(errs, fmt.Errorf("negative Timeout %v", d.Timeout))
	}
	params := emptyParameters
	if len(d.Parameters) > 0 {
		canon, err := canonjson.Canonicalize(d.Parameters, canonjson.Options{})
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("parameters: %w", err))
		case canon[0] != '{':
			errs = append(errs, errors.New("parameters: the JSON Schema must be an object"))
		default:
			params = string(canon)
		}
	}
	var out *schema.ValueSchema
	if len(d.OutputSchema) > 0 {
		var err error
		if out, err = schema.CompileValueSchema(d.OutputSchema); err != nil {
			errs = append(errs, fmt.Errorf("output schema: %w", err))
		}
	} else if d.RenderOutput != nil {
		errs = append(errs, errors.New("RenderOutput without an OutputSchema (a text-only tool has nothing to render)"))
	}
	if len(errs) > 0 {
		return "", nil, fmt.Errorf("%w %q: %w", ErrInvalidDefinition, d.Name, errors.Join(errs...))
	}
	return params, out, nil
}

// Tool is a registered tool: a frozen snapshot of its [Definition] taken at
// registration. Its parameters are canonical bytes owned by the registry
// and its callbacks are fixed, so changing the caller's Definition
// afterwards changes nothing. A *Tool is immutable and safe for concurrent
// use.
type Tool struct {
	name          string
	description   string
	params        string
	exec          ExecuteFunc
	presentCall   func(args json.RawMessage) CallView
	presentResult func(args json.RawMessage, r ResultData) ResultView
	timeout       time.Duration
	validate      func(exec *Execution) error
	layer         host.ScopeKey
	concurrency   ConcurrencyRule
	annotations   *Annotations
	output        *schema.ValueSchema // nil: text-only
	render        func(json.RawMessage) ([]Content, error)
	finalizeC     func(*Execution, Result) []Content
	admit         func(exec *Execution) bool // Definition.admitArgs
}

func freeze(d Definition, layer host.ScopeKey) (*Tool, error) {
	params, out, err := d.canonicalParameters()
	if err != nil {
		return nil, err
	}
	return &Tool{
		output: out, render: d.RenderOutput, finalizeC: d.FinalizeContent,
		name: d.Name, description: d.Description, params: params,
		exec: d.Execute, presentCall: d.PresentCall, presentResult: d.PresentResult,
		timeout: d.Timeout, validate: d.ValidateArgs, layer: layer,
		concurrency: d.Concurrency, annotations: copyAnnotations(d.Annotations),
		admit: d.admitArgs,
	}, nil
}

// Name returns the tool's wire name.
func (t *Tool) Name() string { return t.name }

// Description returns the tool's description.
func (t *Tool) Description() string { return t.description }

// Parameters returns a copy of the canonical parameters JSON Schema.
func (t *Tool) Parameters() json.RawMessage { return json.RawMessage(t.params) }

// Timeout returns the tool's cooperative budget (zero = none).
func (t *Tool) Timeout() time.Duration { return t.timeout }

// Layer returns the scope the tool was registered for ("" = global).
func (t *Tool) Layer() host.ScopeKey { return t.layer }

// Typed reports whether the tool validates its arguments (built by
// [Define]).
func (t *Tool) Typed() bool { return t.validate != nil }

// ConcurrencyRule returns the tool's declared [ConcurrencyRule] (nil: every
// call exclusive). [DescribeConcurrency] renders it for a catalog;
// [Registry.Concurrency] answers for one call.
func (t *Tool) ConcurrencyRule() ConcurrencyRule { return t.concurrency }

// Schema returns the tool's wire schema, as the model sees it (a fresh
// copy): name, description and parameters, without callbacks or the
// timeout budget.
func (t *Tool) Schema() systemprompt.ToolSchema {
	return systemprompt.ToolSchema{Name: t.name, Description: t.description, Parameters: json.RawMessage(t.params)}
}

// Definition returns a copy of the frozen definition (callbacks included),
// for wrapping the tool into another one.
func (t *Tool) Definition() Definition {
	return Definition{
		Name: t.name, Description: t.description, Parameters: json.RawMessage(t.params),
		Execute: t.exec, PresentCall: t.presentCall, PresentResult: t.presentResult,
		Timeout: t.timeout, ValidateArgs: t.validate, Concurrency: t.concurrency,
		Annotations: copyAnnotations(t.annotations), OutputSchema: t.OutputSchema(),
		RenderOutput: t.render, FinalizeContent: t.finalizeC, admitArgs: t.admit,
	}
}

// OutputSchema returns a copy of the tool's declared output schema
// (canonical JSON), or nil for a text-only tool.
func (t *Tool) OutputSchema() json.RawMessage {
	if t.output == nil {
		return nil
	}
	return t.output.JSON()
}

// OutputSchemaCompiled returns the tool's compiled output schema, or nil
// for a text-only tool.
func (t *Tool) OutputSchemaCompiled() *schema.ValueSchema { return t.output }

// PresentCall renders a pending call of t with args, or returns nil when t
// has no presenter, the presenter declines, or it panics (display must
// never crash a live stream or a replay).
func (t *Tool) PresentCall(args json.RawMessage) (v CallView) {
	if t == nil || t.presentCall == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return t.presentCall(args)
}

// PresentResult renders a completed call of t; see [Tool.PresentCall].
func (t *Tool) PresentResult(args json.RawMessage, r ResultData) (v ResultView) {
	if t == nil || t.presentResult == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			v = nil
		}
	}()
	return t.presentResult(args, r)
}
