package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// This file is Code Mode: the reserved run_code transport, the tools:sdk
// prompt section, and the dispatch bridge that runs a program's binding
// calls through the full pipeline (the contract: doc.go).

// Code Mode names.
const (
	// RunCodeName is the reserved wire transport of Code and Both.
	RunCodeName = "run_code"
	// SDKSection is the name of the prompt section declaring the SDK.
	SDKSection = "tools:sdk"
	// SDKSectionOrder places [SDKSection] among the prompt sections.
	SDKSectionOrder = 150
	// CodeDispatchEvent is the session event type of one binding call,
	// appended once it settled (payload: a [tools.CodeDispatch]).
	CodeDispatchEvent = "tool/code-dispatch"
	// CodeDispatchStartEvent is the session event type appended when a
	// binding call enters the pipeline (payload: a
	// [tools.CodeDispatchStart]), before its tool/code-dispatch event.
	CodeDispatchStartEvent = "tool/code-dispatch-start"
	// CodeLanguage is the language a Code Mode runtime must report.
	CodeLanguage = "typescript"
)

// DispatchLogInput is what a [CodeDispatchLog] listener receives: the
// identity of a settled sub-call's tool/code-dispatch event and its
// durable payload, a copy (the program already has its value).
type DispatchLogInput struct {
	// ID, Agent and Parent are the event's (see tools.SessionEvent); a
	// listener cannot change them.
	ID     string
	Agent  host.ScopeKey
	Parent string
	// Dispatch is the payload as the earlier listeners left it.
	Dispatch tools.CodeDispatch
}

// DispatchLogNext delegates from a [CodeDispatchLog] listener to the rest.
type DispatchLogNext = events.Next[tools.CodeDispatch]

// CodeDispatchLog is the tools/code-dispatch-log waterfall: it runs over
// each settled sub-call, on the sub-call's goroutine in submission order,
// before its tool/code-dispatch event is appended, and may replace the
// payload appended (the durable copy) — never what the program received,
// nor the call's result anywhere else. The base returns the payload
// unchanged. It is filtered by the run's agent; a failing listener is
// contained (logged and skipped). A listener that blocks holds up the
// sub-call's settlement, and so the program's next call: a slow durable
// store back-pressures the program instead of accumulating pending
// writes. Declared by [Plugin].
var CodeDispatchLog = events.NewWaterfall[DispatchLogInput, tools.CodeDispatch](events.Descriptor{
	Name:     "tools/code-dispatch-log",
	Mode:     events.ModeWaterfall,
	Doc:      "Before a Code Mode sub-call's tool/code-dispatch event is appended: replace the durable payload (e.g. spill large content to a store).",
	Filtered: true,
	Failure:  events.Contain,
})

// runCodeDescription is run_code's wire description: the contract in one
// paragraph (the tools:sdk section repeats it with the declarations).
const runCodeDescription = "Run a TypeScript program that calls your tools. `code` is the body of an async function: " +
	"the tools are async functions declared in the tools:sdk section of the system prompt, called as " +
	"`await tools.<name>({...})` (quoted names as `await tools[\"my-tool\"]({...})`); they start in the order called, " +
	"and calls made together (Promise.all) run at the same time when their tools allow it. " +
	"Only what the program prints (console.log; console.warn/error are prefixed [warn]/[error]) and the value it returns " +
	"come back to you, so print or return exactly what you need to see. A failed tool call rejects with an Error carrying " +
	"`code` and `name` (catch it with try/catch); an uncaught error fails the run and shows its message and the output printed before it."

const runCodeParameters = `{"type":"object","properties":{` +
	`"code":{"type":"string","description":"TypeScript: the body of an async function. Use top-level await to call tools (await tools.name({...})); console.log or return what you need to see."},` +
	`"description":{"type":"string","description":"One-line summary of what the program does, shown in user interfaces."}` +
	`},"required":["code"]}`

// sdkUsage is the fixed text of the tools:sdk section before the
// declaration.
const sdkUsage = "# Code Mode\n\n" +
	"Your tools are not called directly: write a TypeScript program and pass it to the `run_code` tool as `code`. " +
	"The program is the body of an async function, so top-level `await` and `return` work. " +
	"Each tool is an async function on the global `tools` object, declared below; call it with one argument object: " +
	"`const out = await tools.name({ ... })` (names that are not identifiers use quoted keys: `await tools[\"my-tool\"]({ ... })`).\n\n" +
	"- Only what the program prints with console.log (console.warn and console.error lines are prefixed [warn] and [error]) " +
	"and the value it returns come back to you. Tool results you neither print nor return are not shown, " +
	"so filter, slice or summarize large results inside the program.\n" +
	"- A tool call resolves to the tool's value, typed in `ToolOutputMap` below: structured data (an object, array, number, ...) " +
	"for a tool that declares its output, otherwise its text as a string. Images a tool returns are shown to you after the program's output.\n" +
	"- A failed or denied tool call rejects with a `ToolCallError`: an Error whose message names the tool, whose `tool` is the tool called and whose `code` (e.g. \"DENIED\", \"INVALID_ARGS\") and `name` say why; " +
	"catch it with try/catch to handle it.\n" +
	"- Tool calls start in the order you make them. Calls you make together (`await Promise.all([...])`) run at the same time " +
	"when their tools allow it (read-only tools usually do); the others run one at a time, and each call's promise settles in call order.\n" +
	"- An uncaught error fails the run: you see its message, line, and what was printed before it.\n" +
	"- The program has no file system, network, require, process or timers of its own: use the tools.\n\n" +
	"```ts\n"

// Plugin is the tool registry plugin with Code Mode: [tools.Plugin] (named "tools", providing the
// registry through tools.Service, configured by a tools.Config) that also accepts the modes Code
// and Both, presented as this package describes. It links no JavaScript engine: programs run in
// the code runtime provided through coderuntime.Service (see [Runtime]).
var Plugin host.Plugin = plugin{tools.PluginWith(present)}

// plugin is the registry plugin with Code Mode, a type of this package (so that it is listed as
// this package's).
type plugin struct{ host.Plugin }

// Name implements host.Named: "tools".
func (p plugin) Name() string { return p.Plugin.(host.Named).Name() }

var _ host.Named = plugin{}

// present attaches Code Mode to r: the run_code transport and the prompt contribution.
func present(c *host.Context, r *tools.Registry) (tools.Presentation, error) {
	if err := c.Host().Declare(CodeDispatchLog); err != nil {
		return tools.Presentation{}, err
	}
	cm := &codeMode{c: c, r: r}
	return tools.Presentation{Transport: cm.transport(), Contribute: cm.contribute, DirectCallHint: codeOnlyHint}, nil
}

// codeMode is Code Mode attached to one registry.
type codeMode struct {
	c *host.Context
	r *tools.Registry
}

func (cm *codeMode) contribute(_ context.Context, r *tools.Registry, m tools.Mode, scope host.ScopeKey) (systemprompt.Contribution, error) {
	if _, err := cm.runtime(m, scope); err != nil {
		return systemprompt.Contribution{}, err
	}
	var ts []*tools.Tool
	var known []string
	if m == tools.Both {
		// Under Both a restricted-away end capability stays a valid
		// toolOrder name; under Code none is contributed, so naming one is
		// dead configuration that fails loud.
		ts, known = r.Visible(scope), r.KnownNames(scope)
	} else {
		ts = []*tools.Tool{r.Transport()}
	}
	return systemprompt.Contribution{
		Tools: schemas(ts),
		Sections: []systemprompt.Section{{
			Name:  SDKSection,
			Order: SDKSectionOrder,
			Render: func(_ context.Context, scope host.ScopeKey) (string, error) {
				return SDK(r, scope), nil
			},
		}},
		Protected:         []string{RunCodeName},
		ProtectedSections: []string{SDKSection},
		Reserved:          []string{RunCodeName},
		Known:             known,
	}, nil
}

// schemas returns the wire schemas of ts, in order.
func schemas(ts []*tools.Tool) []systemprompt.ToolSchema {
	out := make([]systemprompt.ToolSchema, len(ts))
	for i, t := range ts {
		out[i] = t.Schema()
	}
	return out
}

// Runtime returns the code runtime Code Mode runs programs in: the
// [coderuntime.Runtime] provided through coderuntime.Service, looked up
// non-reactively through c at each call (each prompt assembly and each
// run_code execution). It fails with an actionable error, naming mode,
// when no runtime is provided or its language is not [CodeLanguage].
func Runtime(c *host.Context, mode tools.Mode) (coderuntime.Runtime, error) {
	return lookupRuntime(c, mode, "(or set tools mode to native)")
}

// runtime is [Runtime] for scope presented in mode: when the mode is the
// agent's own PresentAs declaration, the way out the error suggests is
// presenting that agent natively (the registry's tools mode does not
// decide its presentation).
func (cm *codeMode) runtime(mode tools.Mode, scope host.ScopeKey) (coderuntime.Runtime, error) {
	if _, own := cm.r.PresentedAs(scope); own {
		return lookupRuntime(cm.c, mode, fmt.Sprintf("(or present agent %q as native)", scope))
	}
	return Runtime(cm.c, mode)
}

// lookupRuntime is [Runtime] whose error, when no runtime is provided,
// ends with orElse.
func lookupRuntime(c *host.Context, mode tools.Mode, orElse string) (coderuntime.Runtime, error) {
	need := fmt.Sprintf("tools mode %q needs a code runtime: load isolated.Plugin (package codeRuntime/isolated; service %q) with language %s",
		mode, coderuntime.Service.Name(), CodeLanguage)
	rt, ok := coderuntime.Service.Lookup(c)
	if !ok {
		return nil, fmt.Errorf("%s; found none %s", need, orElse)
	}
	if lang := rt.Language(); lang != CodeLanguage {
		return nil, fmt.Errorf("%s; found one with language %q", need, lang)
	}
	return rt, nil
}

// SDK renders the tools:sdk section for scope: fixed usage instructions
// and a `declare const tools: {...}` TypeScript declaration of the scope's
// [tools.Registry.EndCapabilities] (sorted by name, names that are not
// identifiers quoted, each description a JSDoc comment, each argument type
// derived from the tool's JSON Schema). It is deterministic: byte-identical
// for an unchanged tool set. It never fails; schema constructs TypeScript
// cannot express render as unknown.
func SDK(r *tools.Registry, scope host.ScopeKey) string { return SDKWithout(r, scope, nil) }

// SDKWithout is [SDK] without the tools hidden names (nil: none),
// such as the tools a permission rule denies without condition: a tool
// not offered in tools/list is not declared to run_code programs either.
// A program can still name it; its call is decided as any other.
func SDKWithout(r *tools.Registry, scope host.ScopeKey, hidden func(name string) bool) string {
	ts := r.EndCapabilities(scope)
	if hidden != nil {
		ts = slices.DeleteFunc(slices.Clone(ts), func(t *tools.Tool) bool { return hidden(t.Name()) })
	}
	return sdkUsage + declareSDK(sdkTools(ts)) + "\n```"
}

// sdkTools returns what the SDK declares of ts: each tool's wire schema
// and declared output schema.
func sdkTools(ts []*tools.Tool) []sdkTool {
	out := make([]sdkTool, len(ts))
	for i, t := range ts {
		out[i] = sdkTool{ToolSchema: t.Schema(), Output: t.OutputSchema()}
	}
	return out
}

// sdkAccess is how a program reaches tool name: tools.name, or
// tools["exotic-name"].
func sdkAccess(name string) string {
	if isIdent(name) {
		return "tools." + name
	}
	b, _ := json.Marshal(name)
	return "tools[" + string(b) + "]"
}

func isIdent(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return s != ""
}

func codeOnlyHint(name string) string {
	return fmt.Sprintf(": under tools mode %q tools are not called directly; call it from a %s program instead, e.g. "+
		"`const out = await %s({...}); console.log(out)` in its code", tools.Code, RunCodeName, sdkAccess(name))
}

// transport is the run_code tool's definition (the registry freezes it).
func (cm *codeMode) transport() tools.Definition {
	return tools.Definition{
		Name:          RunCodeName,
		Description:   runCodeDescription,
		Parameters:    json.RawMessage(runCodeParameters),
		Execute:       cm.runCode,
		ValidateArgs:  func(e *tools.Execution) error { return validateRunCodeArgs(e.Args()) },
		PresentCall:   presentRunCode,
		PresentResult: nil,
	}
}

func validateRunCodeArgs(args []byte) error {
	var bad []string
	switch c := gjson.GetBytes(args, "code"); {
	case !c.Exists():
		bad = append(bad, "code: required (a string of TypeScript)")
	case c.Type != gjson.String:
		bad = append(bad, "code: must be a string")
	}
	if d := gjson.GetBytes(args, "description"); d.Exists() && d.Type != gjson.String {
		bad = append(bad, "description: must be a string")
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("invalid arguments for tool %q: %s", RunCodeName, strings.Join(bad, "; "))
}

// presentRunCode renders a pending run_code call: the description as the
// title and the program as text content (readable in a UI, unlike an
// escaped JSON string).
func presentRunCode(args json.RawMessage) tools.CallView {
	var a struct {
		Code        *string `json:"code"`
		Description string  `json:"description"`
	}
	if json.Unmarshal(args, &a) != nil || a.Code == nil {
		return nil
	}
	title := a.Description
	if title == "" {
		title = "Run code"
	}
	return tools.GenericCall{Title: title, Kind: "execute", Content: []tools.Content{tools.Text(*a.Code)}}
}

// CodeRunFailedError is how a failed Code Mode run reaches the model: the
// pipeline turns it into an isError result with code CODE_RUN_FAILED and
// name "CodeRunFailedError", whose text is [CodeRunFailedError.Error]: the
// failure kind, the message, the program position when known, and the
// console output captured before the failure. errors.As finds the
// runtime's *coderuntime.Failure through it (when there is one), and
// errors.Is its cause; the runtime's error value is only ever read under
// recover, so one whose methods panic cannot break the pipeline.
type CodeRunFailedError struct {
	// Kind is the runtime's failure kind ("syntax", "exception",
	// "timeout", "abort", "output-limit", "invalid-output", "limit"), or
	// "unavailable" when no usable code runtime is loaded, or "internal"
	// when the runtime refused the program itself or misbehaved (panicked,
	// called runtime.Goexit, returned neither a result nor an error, a
	// value that is not JSON, or an error value that cannot be read).
	Kind coderuntime.FailureKind
	// Message says what went wrong.
	Message string
	// Line and Column (1-based, 0 = unknown) point into the program the
	// model wrote.
	Line, Column int
	// Logs is the console output captured before the failure.
	Logs []coderuntime.Log
	// Err is the underlying error.
	Err error
}

// The kinds CodeRunFailedError adds to the runtime's.
const (
	KindUnavailable coderuntime.FailureKind = "unavailable"
	KindInternal    coderuntime.FailureKind = "internal"
)

// Error implements error: "code run failed (<kind>): <message> (line L,
// column C)", then the captured output.
func (e *CodeRunFailedError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "code run failed (%s)", e.Kind)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	}
	if len(e.Logs) > 0 {
		b.WriteString("\nconsole output before the failure:\n")
		b.WriteString(formatLogs(e.Logs))
	}
	return strings.ToValidUTF8(b.String(), "\uFFFD")
}

// Code implements [tools.Coder]: CODE_RUN_FAILED.
func (e *CodeRunFailedError) Code() string { return string(tools.CodeCodeRunFailed) }

// Name implements [tools.Namer].
func (e *CodeRunFailedError) Name() string { return "CodeRunFailedError" }

// Unwrap returns Err.
func (e *CodeRunFailedError) Unwrap() error { return e.Err }

// containedErr is an error value a code runtime returned, read only under
// recover: its message is read once, and errors.Is / errors.As reach it
// through Is and As, which report false when the value's own methods
// panic. It has no Unwrap, so nothing walks its chain unprotected.
type containedErr struct {
	err error
	msg string
}

func (c *containedErr) Error() string { return c.msg }

func (c *containedErr) Is(target error) bool { return safeerr.Is(c.err, target) }

// As is errors.As over the runtime's error, bounded and contained like
// Is (see package safeerr).
func (c *containedErr) As(target any) bool { return safeerr.AsAny(c.err, target) }

// ToolCallError is how a failed binding call reaches the program: the
// promise of `await tools.<tool>(...)` rejects with an Error (declared as
// ToolCallError in the tools:sdk section) whose message is
// [ToolCallError.Error] ("tools.<tool>: <the result's text>"), whose
// `tool` is the called tool, whose `code` is the sub-call's error code
// (DENIED, INVALID_ARGS, TOOL_ERROR, ...) and whose `name` is its error
// name. A call refused without dispatch because its run had settled has
// code [tools.CodeRunSettled] and wraps coderuntime.ErrRunSettled.
type ToolCallError struct {
	// Tool is the called tool.
	Tool string
	// Info is the sub-call's error class.
	Info tools.ErrorInfo
	// Message is the model-facing text of the failed result.
	Message string
	// Err is the underlying error, if any (coderuntime.ErrRunSettled for
	// a refused call).
	Err error
}

// CodeCallError is the former name of [ToolCallError].
//
// Deprecated: use ToolCallError.
type CodeCallError = ToolCallError

// Error implements error.
func (e *ToolCallError) Error() string { return sdkAccess(e.Tool) + ": " + e.Message }

// Code implements [tools.Coder].
func (e *ToolCallError) Code() string { return string(e.Info.Code) }

// Name implements [tools.Namer].
func (e *ToolCallError) Name() string { return e.Info.Name }

// Unwrap returns Err.
func (e *ToolCallError) Unwrap() error { return e.Err }

// ErrorDetails implements ErrorDetails: the program sees the
// failed sub-call's tool as err.tool.
func (e *ToolCallError) ErrorDetails() map[string]string { return map[string]string{"tool": e.Tool} }

var (
	_ tools.Coder = (*CodeRunFailedError)(nil)
	_ tools.Namer = (*CodeRunFailedError)(nil)
	_ tools.Coder = (*ToolCallError)(nil)
	_ tools.Namer = (*ToolCallError)(nil)

	_ coderuntime.ErrorDetails = (*ToolCallError)(nil)
)

// runCode is run_code's body: the dispatch bridge. What it guarantees (the
// bindings, the sub-calls' ids, order and batch, what they defer, the
// session log, settlement and cancellation) is the package doc's contract,
// "The contract"; the comments below say how each part holds.
func (cm *codeMode) runCode(ctx context.Context, exec *tools.Execution) (tools.Output, error) {
	r := cm.r
	rt, err := cm.runtime(r.ModeOf(exec.Agent()), exec.Agent())
	if err != nil {
		return tools.Output{}, &CodeRunFailedError{Kind: KindUnavailable, Message: err.Error(), Err: err}
	}
	runCtx, cancelRun := context.WithCancelCause(ctx)
	b := &bridge{c: cm.c, outer: exec, runCtx: runCtx, logCtx: context.WithoutCancel(runCtx), nextSeq: 1}
	b.sched = r.NewSubCalls(b.done)
	if exec.Agent() != "" {
		b.log, _ = tools.SessionLogService.Lookup(cm.c)
	}
	ends := r.EndCapabilities(exec.Agent())
	bindings := make(map[string]coderuntime.Binding, len(ends))
	for _, t := range ends {
		bindings[t.Name()] = b.binding(t.Name())
	}
	o := b.run(rt, coderuntime.Program{
		Source:             gjson.Get(exec.ArgsString(), "code").String(), // validated: a string
		Bindings:           bindings,
		MaxConcurrentCalls: b.sched.Cap(),
	})
	cancelRun(coderuntime.ErrRunSettled)
	b.settle()
	b.stopShared()
	out, err := o.output()
	b.mu.Lock()
	out.AdditionalContext = b.contexts
	if err == nil {
		// The sub-calls' images reach the model once, after the program's
		// output (a program receives a tool's value, never its images).
		out.Content = append(out.Content, b.images...)
	}
	out.ConcludeTurn = err == nil && b.conclude
	b.mu.Unlock()
	return out, err
}

// runOutcome is how a runtime's Run ended.
type runOutcome struct {
	res      *coderuntime.Result
	err      error
	panicked bool
	panicVal any
	goexit   bool
}

// run calls rt.Run on a goroutine of its own and waits for it, so that a
// panic or runtime.Goexit in the runtime ends only that goroutine.
func (b *bridge) run(rt coderuntime.Runtime, p coderuntime.Program) runOutcome {
	done := make(chan runOutcome, 1)
	go func() {
		var o runOutcome
		returned := false
		defer func() {
			if !returned {
				if v := recover(); v != nil {
					o.panicked, o.panicVal = true, v
					b.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Bytes("stack", debug.Stack()).Msg("the code runtime panicked")
				} else {
					o.goexit = true
					b.c.Logger().Error().Msg("the code runtime called runtime.Goexit")
				}
			}
			done <- o
		}()
		o.res, o.err = rt.Run(b.runCtx, p)
		returned = true
	}()
	return <-done
}

// output turns a run's outcome into run_code's output or error.
func (o runOutcome) output() (tools.Output, error) {
	internal := func(msg string) (tools.Output, error) {
		return tools.Output{}, &CodeRunFailedError{Kind: KindInternal, Message: msg, Err: errors.New(msg)}
	}
	switch {
	case o.goexit:
		return internal("the code runtime called runtime.Goexit")
	case o.panicked:
		return internal("the code runtime panicked: " + safeerr.Sprint(o.panicVal))
	case o.err != nil:
		return tools.Output{}, runFailure(o.err)
	case o.res == nil:
		return internal("the code runtime returned neither a result nor an error")
	case len(o.res.Value) > 0 && !json.Valid(o.res.Value):
		return internal("the code runtime returned a value that is not JSON")
	}
	return tools.Output{Content: []tools.Content{tools.Text(programOutput(o.res))}}, nil
}

// runFailure reads the error a runtime's Run returned, under recover: a
// *coderuntime.Failure keeps its kind, message, position and logs; any
// other error is a failure of kind internal with its message. The
// runtime's value is kept only behind a [containedErr].
func runFailure(err error) *CodeRunFailedError {
	c := &containedErr{err: err}
	var f *coderuntime.Failure
	isFailure := c.As(&f)
	if isFailure && f == nil {
		return &CodeRunFailedError{Kind: KindInternal, Message: "the code runtime returned a nil *coderuntime.Failure"}
	}
	msg, ok := safeErrorString(err)
	if !ok {
		return &CodeRunFailedError{Kind: KindInternal,
			Message: fmt.Sprintf("the code runtime returned an error (%T) whose Error method panicked: %s", err, msg)}
	}
	c.msg = msg
	if !isFailure {
		return &CodeRunFailedError{Kind: KindInternal, Message: msg, Err: c}
	}
	return &CodeRunFailedError{Kind: f.Kind, Message: f.Message, Line: f.Line, Column: f.Column, Logs: f.Logs, Err: c}
}

// safeErrorString returns err.Error(), or, when that panics, what it
// panicked with and false.
func safeErrorString(err error) (s string, ok bool) {
	defer func() {
		if v := recover(); v != nil {
			s, ok = safeerr.Sprint(v), false
		}
	}()
	return err.Error(), true
}

// programOutput is what re-enters the model's context from a successful
// run: the console lines in order (warn and error prefixed), then the
// returned value (a string as itself, anything else as JSON), joined by
// newlines. Nothing else.
func programOutput(res *coderuntime.Result) string {
	var parts []string
	if len(res.Logs) > 0 {
		parts = append(parts, formatLogs(res.Logs))
	}
	if v := res.Value; len(v) > 0 {
		var s string
		if v[0] == '"' && json.Unmarshal(v, &s) == nil {
			parts = append(parts, s)
		} else {
			parts = append(parts, string(v))
		}
	}
	return strings.ToValidUTF8(strings.Join(parts, "\n"), "\uFFFD")
}

func formatLogs(logs []coderuntime.Log) string {
	var b strings.Builder
	for i, l := range logs {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch l.Level {
		case "warn", "error":
			b.WriteString("[" + l.Level + "] ")
		}
		b.WriteString(l.Text)
	}
	return b.String()
}

// bridge is the state of one run_code execution: the gate binding calls
// pass (open until the run settles), the scheduler their sub-calls go
// through in submission order, the count of calls accepted and not yet
// finished, and what the sub-calls defer to run_code's result.
type bridge struct {
	c      *host.Context
	outer  *tools.Execution
	log    tools.SessionLog // nil: logging skipped
	runCtx context.Context  // cancelled when the run settles
	logCtx context.Context  // runCtx without its cancellation: the session log's and the waterfall's
	sched  *tools.SubCalls

	mu       sync.Mutex
	settled  bool                   // no call is accepted any more
	n        int64                  // calls admitted so far: the n of the last id
	nextSeq  uint64                 // the runtime submission number admitted next
	parked   map[uint64]*parkedCall // calls that reached the bridge before an earlier-submitted one
	pending  int                    // calls accepted and not finished
	drained  chan struct{}          // closed when settled and pending drops to 0
	contexts []string               // the sub-calls' additional context, in submission order
	images   []tools.Content        // the sub-calls' image blocks, in submission order
	started  map[string]time.Time   // when each logged sub-call entered the pipeline, by id
	startN   int64                  // the last call number whose start event was appended
	startC   *sync.Cond             // signalled when startN moves (on mu)
	conclude bool                   // a sub-call asked to conclude the turn
	rejected int64                  // calls refused before the batch (not lossless JSON), logged

	// The sub-call context shared by the calls whose runtime context is
	// done with the same channel (see callContext), and what releases it.
	shared     *subCallCtx
	sharedDone <-chan struct{}
	sharedStop func()
}

// parkedCall is a call waiting for its submission number to come up, or
// (skip) a number whose call was rejected before it entered the batch.
type parkedCall struct {
	admitted chan struct{} // closed once n and e are set
	n        int64
	e        tools.SubCall
	skip     bool
}

// accept admits a call into the run's batch: it returns the call's number
// and its entry, in submission order, or false when the run has settled
// (the call must not be made). A call that carries a submission number
// (coderuntime.CallSeq) ahead of the next one waits until the calls
// submitted before it were admitted, or until the run's context is done
// (then the calls waiting are admitted at once, in submission-number
// order: the shipped runtime delivers every number, so this only bounds a
// runtime that skips one).
func (b *bridge) accept(rctx context.Context) (int64, tools.SubCall, bool) {
	seq, hasSeq := safeCallSeq(rctx)
	b.mu.Lock()
	if b.settled {
		b.mu.Unlock()
		return 0, tools.SubCall{}, false
	}
	b.pending++
	if !hasSeq || seq <= b.nextSeq || b.parked[seq] != nil {
		n, e := b.admitLocked()
		if hasSeq && seq == b.nextSeq {
			b.nextSeq++
			b.admitParkedLocked()
		}
		b.mu.Unlock()
		return n, e, true
	}
	p := &parkedCall{admitted: make(chan struct{})}
	if b.parked == nil {
		b.parked = map[uint64]*parkedCall{}
	}
	b.parked[seq] = p
	b.mu.Unlock()
	select {
	case <-p.admitted:
	case <-b.runCtx.Done():
		b.mu.Lock()
		b.flushParkedLocked()
		b.mu.Unlock()
		<-p.admitted
	}
	return p.n, p.e, true
}

// pass consumes the submission number of a call rejected before it
// entered the batch (its argument is not lossless JSON), so that the calls
// submitted after it need not wait for it.
func (b *bridge) pass(rctx context.Context) {
	seq, hasSeq := safeCallSeq(rctx)
	if !hasSeq {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case seq == b.nextSeq:
		b.nextSeq++
		b.admitParkedLocked()
	case seq > b.nextSeq && b.parked[seq] == nil:
		if b.parked == nil {
			b.parked = map[uint64]*parkedCall{}
		}
		b.parked[seq] = &parkedCall{skip: true}
	}
}

// admitLocked numbers the next call and gives it its entry; b.mu held.
func (b *bridge) admitLocked() (int64, tools.SubCall) {
	b.n++
	return b.n, b.sched.Entry(b.n)
}

// admitParkedLocked admits the parked calls whose numbers now come up, in
// order; b.mu held.
func (b *bridge) admitParkedLocked() {
	for {
		p := b.parked[b.nextSeq]
		if p == nil {
			return
		}
		delete(b.parked, b.nextSeq)
		b.nextSeq++
		if !p.skip {
			p.n, p.e = b.admitLocked()
			close(p.admitted)
		}
	}
}

// flushParkedLocked admits every parked call, in submission-number order;
// b.mu held.
func (b *bridge) flushParkedLocked() {
	seqs := make([]uint64, 0, len(b.parked))
	for seq := range b.parked {
		seqs = append(seqs, seq)
	}
	slices.Sort(seqs)
	for _, seq := range seqs {
		p := b.parked[seq]
		delete(b.parked, seq)
		b.nextSeq = max(b.nextSeq, seq+1)
		if !p.skip {
			p.n, p.e = b.admitLocked()
			close(p.admitted)
		}
	}
}

// safeCallSeq is coderuntime.CallSeq for a context a runtime made, read
// under recover.
func safeCallSeq(ctx context.Context) (n uint64, ok bool) {
	defer func() {
		if recover() != nil {
			n, ok = 0, false
		}
	}()
	if ctx == nil {
		return 0, false
	}
	return coderuntime.CallSeq(ctx)
}

// release ends an accepted call.
func (b *bridge) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pending--
	if b.settled && b.pending == 0 && b.drained != nil {
		close(b.drained)
	}
}

// settle closes the gate and waits for every accepted call to finish.
func (b *bridge) settle() {
	b.mu.Lock()
	b.settled = true
	if b.pending == 0 {
		b.mu.Unlock()
		return
	}
	b.drained = make(chan struct{})
	drained := b.drained
	b.mu.Unlock()
	<-drained
}

// done is the scheduler's hook after a sub-call's tools/result, in
// submission order: the call is logged, and what it deferred is kept for
// run_code's result.
func (b *bridge) done(_ context.Context, call tools.Call, res tools.Result) {
	deferred := res.AdditionalContext
	// Delivered once, through run_code's result.
	res.AdditionalContext = nil
	var images []tools.Content
	for _, c := range res.Content {
		if c.Type == tools.ContentImage {
			images = append(images, c)
		}
	}
	b.appendSettled(call.ID, call.Name, call.Arguments, res)
	b.mu.Lock()
	b.contexts = append(b.contexts, deferred...)
	b.images = append(b.images, images...)
	b.conclude = b.conclude || res.ConcludeTurn
	b.mu.Unlock()
}

// callContext is the context of one sub-call: a child of the run's
// context, also cancelled (with its cause) when rctx, the context the
// runtime passed, is done. stop releases it.
//
// context.AfterFunc cancels it on a goroutine of its own, some time after
// rctx is done; until then its Err reads rctx itself (see subCallCtx), so
// a sub-call that waited for its turn while the runtime settled is never
// dispatched.
//
// The calls whose rctx is done with the same channel (the shipped
// runtimes pass one binding context per run, each call's carrying its own
// submission number) share one such context, made for the first of them
// and released when the run settles (stopShared): a sub-call then costs no
// context, cancel function or AfterFunc of its own. Like the context
// Execute hands a tool body, it is not cancelled when the call returns; it
// is when the run settles, as every sub-call's context. A call whose rctx
// has another channel gets a context of its own.
func (b *bridge) callContext(rctx context.Context) (ctx context.Context, stop func()) {
	if rctx == nil {
		return b.ownContext(rctx)
	}
	done := rctx.Done()
	if done == nil || safeErr(rctx) != nil {
		return b.ownContext(rctx)
	}
	b.mu.Lock()
	if b.shared == nil && !b.settled {
		ctx, cancel := context.WithCancelCause(b.runCtx)
		stopAfter := context.AfterFunc(rctx, func() { cancel(safeCause(rctx)) })
		b.shared, b.sharedDone = &subCallCtx{Context: ctx, rctx: rctx, cancel: cancel}, done
		b.sharedStop = func() { stopAfter(); cancel(nil) }
	}
	shared := b.shared
	if shared == nil || b.sharedDone != done {
		shared = nil
	}
	b.mu.Unlock()
	if shared == nil {
		return b.ownContext(rctx)
	}
	return shared, noStop
}

func noStop() {}

// stopShared releases the shared sub-call context (see callContext), once
// every call was settled.
func (b *bridge) stopShared() {
	b.mu.Lock()
	stop := b.sharedStop
	b.sharedStop = nil
	b.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// ownContext is callContext's context for one call alone.
func (b *bridge) ownContext(rctx context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(b.runCtx)
	if rctx == nil || rctx.Done() == nil {
		return ctx, func() { cancel(nil) }
	}
	if safeErr(rctx) != nil {
		cancel(safeCause(rctx))
		return ctx, func() { cancel(nil) }
	}
	stopAfter := context.AfterFunc(rctx, func() { cancel(safeCause(rctx)) })
	return &subCallCtx{Context: ctx, rctx: rctx, cancel: cancel}, func() { stopAfter(); cancel(nil) }
}

// subCallCtx is a sub-call's context (callContext): a child of the run's
// context whose Err, when rctx is done but the AfterFunc has not cancelled
// the context yet, cancels it first (with rctx's cause). Every check the
// pipeline makes before it starts a body (ctx.Err()) therefore sees the
// runtime's settlement as soon as it happened. Done, Value, Deadline and
// the contexts derived from it are the child's (Err and Done agree: Err
// is non-nil only once Done is closed).
type subCallCtx struct {
	context.Context
	rctx   context.Context
	cancel context.CancelCauseFunc
}

func (c *subCallCtx) Err() error {
	if err := c.Context.Err(); err != nil {
		return err
	}
	if safeErr(c.rctx) != nil {
		c.cancel(safeCause(c.rctx))
	}
	return c.Context.Err()
}

// safeErr is ctx.Err() for a context a runtime made, read under recover
// (context.Canceled when it cannot be read: done, when unsure).
func safeErr(ctx context.Context) (err error) {
	defer func() {
		if recover() != nil {
			err = context.Canceled
		}
	}()
	return ctx.Err()
}

// safeCause is context.Cause(ctx) for a context a runtime made, read under
// recover (context.Canceled when it cannot be read).
func safeCause(ctx context.Context) (err error) {
	defer func() {
		if recover() != nil || err == nil {
			err = context.Canceled
		}
	}()
	return context.Cause(ctx)
}

func (b *bridge) binding(name string) coderuntime.Binding {
	return func(rctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		canon, err := canonjson.CanonicalizeObject(args, canonjson.Options{})
		if err != nil {
			b.pass(rctx)
			cerr := &ToolCallError{Tool: name, Info: tools.ErrorInfo{Name: "ToolArgsError", Code: tools.CodeInvalidArgs},
				Message: "the argument is not lossless JSON, so the call was not made: " + err.Error()}
			b.logRejected(name, args, cerr)
			return nil, cerr
		}
		n, e, ok := b.accept(rctx)
		if !ok {
			return nil, &ToolCallError{Tool: name, Info: tools.ErrorInfo{Name: "RunSettledError", Code: tools.CodeRunSettled},
				Message: "the call was not made: its run_code run had already settled (" + coderuntime.ErrRunSettled.Error() + ")",
				Err:     coderuntime.ErrRunSettled}
		}
		defer b.release()
		ctx, stop := b.callContext(rctx)
		defer stop()
		var digits [20]byte
		id := b.outer.CallID() + ":code:" + string(strconv.AppendInt(digits[:0], n, 10))
		b.logStart(n, id, name, canon)
		res := b.sched.Run(ctx, e, tools.Call{ID: id, Name: name, Arguments: canon, Agent: b.outer.Agent(), Parent: b.outer.Token()})
		if res.IsError {
			info := tools.ErrorInfo{Name: "ToolError", Code: tools.CodeToolError}
			if res.Error != nil {
				info = *res.Error
			}
			return nil, &ToolCallError{Tool: name, Info: info, Message: contentText(res.Content)}
		}
		// The canonical value after policy: the declared output's value
		// (post-execute may have replaced it), or a text-only tool's text.
		return res.CanonicalValue(), nil
	}
}

// logStart appends the tool/code-dispatch-start event of call n (id),
// in call-number order: it waits until the start of call n-1 was
// appended (each admitted call reaches logStart right after admission,
// so the wait is bounded by the appends before it). A slow session log
// therefore holds up the start of the calls after it.
func (b *bridge) logStart(n int64, id, name string, args []byte) {
	if b.log == nil {
		return
	}
	b.mu.Lock()
	if b.startC == nil {
		b.startC = sync.NewCond(&b.mu)
	}
	for b.startN != n-1 {
		b.startC.Wait()
	}
	now := time.Now()
	if b.started == nil {
		b.started = map[string]time.Time{}
	}
	b.started[id] = now
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.startN = n
		b.startC.Broadcast()
		b.mu.Unlock()
	}()
	data, err := encodeDispatchStart(name, args, now)
	b.appendEvent(CodeDispatchStartEvent, id, name, data, err)
}

// logRejected logs a call refused before it entered the batch (its
// argument is not lossless JSON) as a tool/code-dispatch event with its
// INVALID_ARGS result, so the session log accounts for every call the
// program made. Its id is "<run_code id>:code:rejected:<k>", k counting the
// run's refused calls; the arguments are kept as a JSON string when they
// are not valid JSON. Nothing is logged once the run settled.
func (b *bridge) logRejected(name string, args json.RawMessage, cerr *ToolCallError) {
	b.mu.Lock()
	if b.settled {
		b.mu.Unlock()
		return
	}
	b.rejected++
	k := b.rejected
	b.pending++ // the event is appended before run_code's result
	b.mu.Unlock()
	defer b.release()
	if !json.Valid(args) {
		args, _ = json.Marshal(strings.ToValidUTF8(string(args), "\uFFFD"))
	}
	id := b.outer.CallID() + ":code:rejected:" + strconv.FormatInt(k, 10)
	info := cerr.Info
	b.appendSettled(id, name, args, tools.Result{CallID: id, IsError: true, Error: &info, Content: []tools.Content{tools.Text(cerr.Message)}})
}

func contentText(cs []tools.Content) string {
	if len(cs) == 1 {
		return cs[0].Text
	}
	texts := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Type == tools.ContentText {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// appendSettled logs one settled sub-call as a tool/code-dispatch event,
// with the timing of its start event when one was appended. The payload is
// the tools/code-dispatch-log waterfall's over a copy of the result
// (listeners cannot reach the program's), or in's when the waterfall fails;
// with no listener registered, nothing is copied and the timing stays on
// the stack.
func (b *bridge) appendSettled(id, name string, args []byte, res tools.Result) {
	if b.log == nil {
		return
	}
	var timing tools.DispatchTiming
	timed := false
	b.mu.Lock()
	if start, ok := b.started[id]; ok {
		delete(b.started, id)
		end := time.Now()
		timing, timed = tools.DispatchTiming{StartedAt: start, SettledAt: end, DurationMs: float64(end.Sub(start)) / float64(time.Millisecond)}, true
	}
	b.mu.Unlock()
	var data []byte
	var err error
	if b.c.Host().Listening(CodeDispatchLog.Descriptor()) == 0 {
		var local *tools.DispatchTiming // encodeDispatch keeps no pointer: timing does not escape
		if timed {
			local = &timing
		}
		data, err = encodeDispatch(name, args, res, local)
	} else {
		var shared *tools.DispatchTiming // the listeners' copy
		if timed {
			shared = new(tools.DispatchTiming)
			*shared = timing
		}
		d := b.waterfall(DispatchLogInput{ID: id, Agent: b.outer.Agent(), Parent: b.outer.CallID(),
			Dispatch: tools.CodeDispatch{Name: name, Arguments: args, Result: res, Timing: shared}})
		data, err = encodeDispatch(d.Name, d.Arguments, d.Result, d.Timing)
	}
	b.appendEvent(CodeDispatchEvent, id, name, data, err)
}

// waterfall runs the tools/code-dispatch-log waterfall over in (a copy of
// the result: listeners cannot reach the program's) and returns the
// payload to append: in's when the waterfall fails.
func (b *bridge) waterfall(in DispatchLogInput) (d tools.CodeDispatch) {
	orig := in.Dispatch
	in.Dispatch.Result = orig.Result.Clone()
	in.Dispatch.Arguments = slices.Clone(orig.Arguments)
	defer func() {
		if v := recover(); v != nil {
			b.c.Logger().Warn().Str("panic", safeerr.Sprint(v)).Str("id", in.ID).Msg(CodeDispatchLog.Descriptor().Name + " dispatch panicked")
			d = orig
		}
	}()
	out, err := host.Waterfall(b.logCtx, b.c.Host().Emitter(in.Agent), CodeDispatchLog, in,
		func(context.Context) (tools.CodeDispatch, error) { return in.Dispatch, nil })
	if err != nil {
		b.c.Logger().Warn().Err(err).Str("id", in.ID).Msg(CodeDispatchLog.Descriptor().Name + " failed; the payload is logged as it was")
		return orig
	}
	return out
}

// appendEvent appends one event of the run, under the run's context
// without its cancellation; a failure (or a panic of the session log) is
// logged, not returned (the call itself happened).
func (b *bridge) appendEvent(typ, id, name string, data []byte, err error) {
	if err == nil {
		err = safeAppend(b.log, b.logCtx, tools.SessionEvent{
			Type: typ, ID: id, Agent: b.outer.Agent(), Parent: b.outer.CallID(), Data: data,
		})
	}
	if err != nil {
		b.c.Logger().Warn().Err(err).Str("event", typ).Str("id", id).Str("tool", name).
			Msg("appending a Code Mode sub-call to the session log failed")
	}
}

// safeAppend is l.Append with a panic turned into an error.
func safeAppend(l tools.SessionLog, ctx context.Context, ev tools.SessionEvent) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New("the session log panicked: " + safeerr.Sprint(v))
		}
	}()
	return l.Append(ctx, ev)
}

// encodeDispatch is json.Marshal(CodeDispatch{name, args, res}) with a
// reflection-free fast path for the common result (text blocks, no meta):
// it runs once per sub-call, inside the run.
func encodeDispatch(name string, args []byte, res tools.Result, timing *tools.DispatchTiming) ([]byte, error) {
	slow := func() ([]byte, error) {
		// A copy of timing: encodeDispatch keeps no pointer to it (see appendSettled).
		var t *tools.DispatchTiming
		if timing != nil {
			t = new(tools.DispatchTiming)
			*t = *timing
		}
		return json.Marshal(tools.CodeDispatch{Name: name, Arguments: args, Result: res, Timing: t})
	}
	size := 96 + len(name) + len(args) + len(res.CallID) + len(res.Value)
	if timing != nil {
		size += 128 // two RFC 3339 times with nanoseconds and a duration
	}
	for _, c := range res.Content {
		if c.Type != tools.ContentText {
			return slow()
		}
		size += 24 + len(c.Text)
	}
	if len(res.Meta) > 0 || len(res.AdditionalContext) > 0 || res.ConcludeTurn {
		return slow()
	}
	b := make([]byte, 0, size)
	b = append(b, `{"name":`...)
	b = canonjson.AppendString(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `,"result":{"callId":`...)
	b = canonjson.AppendString(b, res.CallID)
	b = append(b, `,"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = canonjson.AppendString(b, c.Text)
		b = append(b, '}')
	}
	b = append(b, `],"isError":`...)
	b = strconv.AppendBool(b, res.IsError)
	if res.Error != nil {
		b = append(b, `,"error":{"name":`...)
		b = canonjson.AppendString(b, res.Error.Name)
		b = append(b, `,"code":`...)
		b = canonjson.AppendString(b, string(res.Error.Code))
		b = append(b, '}')
	}
	if len(res.Value) > 0 {
		b = append(b, `,"value":`...)
		b = append(b, res.Value...)
	}
	b = append(b, '}')
	if timing != nil {
		var ok bool
		if b, ok = appendTiming(append(b, `,"timing":`...), timing); !ok {
			return slow()
		}
	}
	return append(b, '}'), nil
}

// encodeDispatchStart is json.Marshal(tools.CodeDispatchStart{name, args,
// at}) without reflection (args is canonical JSON).
func encodeDispatchStart(name string, args []byte, at time.Time) ([]byte, error) {
	b := make([]byte, 0, 96+len(name)+len(args))
	b = append(b, `{"name":`...)
	b = canonjson.AppendString(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `,"startedAt":`...)
	var ok bool
	if b, ok = appendTime(b, at); !ok {
		return json.Marshal(tools.CodeDispatchStart{Name: name, Arguments: args, StartedAt: at})
	}
	return append(b, '}'), nil
}

// appendTime appends t as encoding/json writes it (RFC 3339 with
// nanoseconds, quoted); false for a year encoding/json refuses or writes
// otherwise. A sub-call writes three times (its start, and its timing's
// start and end), nearly always within one second: the text of that
// second is kept (lastSecond) and only the fraction is written.
func appendTime(b []byte, t time.Time) ([]byte, bool) {
	sec, loc := t.Unix(), t.Location()
	p := lastSecond.Load()
	if p == nil || p.sec != sec || p.loc != loc {
		if y := t.Year(); y < 0 || y > 9999 {
			return b, false
		}
		p = newSecondText(t, sec, loc)
		lastSecond.Store(p)
	}
	b = append(b, '"')
	b = append(b, p.date[:]...)
	b = appendFraction(b, t.Nanosecond())
	b = append(b, p.zone...)
	return append(b, '"'), true
}

// secondText is the RFC 3339 text of one second in one location, as
// time.RFC3339Nano writes every instant of it: the date and time
// ("2006-01-02T15:04:05", 19 bytes for a year 0–9999), then the fraction
// (appendFraction), then the zone ("Z" or "±hh:mm", the same for the
// whole second: a location's offset changes on a second's boundary at the
// earliest). It is immutable once made.
type secondText struct {
	sec  int64
	loc  *time.Location
	date [19]byte
	zone string
}

// lastSecond is the secondText of the last time appendTime wrote.
var lastSecond atomic.Pointer[secondText]

// newSecondText is the secondText of t's second (t.Unix() is sec,
// t.Location() loc, its year 0–9999), cut from time's own text of the
// second's first instant.
func newSecondText(t time.Time, sec int64, loc *time.Location) *secondText {
	var buf [64]byte
	whole := time.Unix(sec, 0).In(loc).AppendFormat(buf[:0], time.RFC3339Nano) // no fraction
	p := &secondText{sec: sec, loc: loc, zone: string(whole[19:])}
	copy(p.date[:], whole[:19])
	return p
}

// appendFraction appends the fraction of a second time.RFC3339Nano
// writes for ns nanoseconds: none for 0, else a dot and the nine digits
// without their trailing zeros.
func appendFraction(b []byte, ns int) []byte {
	if ns == 0 {
		return b
	}
	var d [10]byte
	d[0] = '.'
	for i := 9; i >= 1; i-- {
		d[i] = byte('0' + ns%10)
		ns /= 10
	}
	n := 10
	for d[n-1] == '0' {
		n--
	}
	return append(b, d[:n]...)
}

// appendTiming appends t as encoding/json writes it; false when a field
// needs encoding/json's own rules.
func appendTiming(b []byte, t *tools.DispatchTiming) ([]byte, bool) {
	f := t.DurationMs
	if f < 0 || f != 0 && (f < 1e-6 || f >= 1e21) || f != f {
		return b, false
	}
	var ok1, ok2 bool
	b = append(b, `{"startedAt":`...)
	b, ok1 = appendTime(b, t.StartedAt)
	b = append(b, `,"settledAt":`...)
	b, ok2 = appendTime(b, t.SettledAt)
	b = append(b, `,"durationMs":`...)
	b = strconv.AppendFloat(b, f, 'f', -1, 64)
	return append(b, '}'), ok1 && ok2
}
