package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// This file is Code Mode: the reserved run_code transport, the tools:sdk
// prompt section, and the dispatch bridge that runs a program's binding
// calls through the full pipeline.

// Code Mode names.
const (
	// RunCodeName is the reserved wire transport of Code and Both.
	RunCodeName = "run_code"
	// SDKSection is the name of the prompt section declaring the SDK.
	SDKSection = "tools:sdk"
	// SDKSectionOrder places [SDKSection] among the prompt sections.
	SDKSectionOrder = 150
	// CodeDispatchEvent is the session event type of one binding call.
	CodeDispatchEvent = "tool/code-dispatch"
	// CodeLanguage is the language a Code Mode runtime must report.
	CodeLanguage = "typescript"
)

// runCodeDescription is run_code's wire description: the contract in one
// paragraph (the tools:sdk section repeats it with the declarations).
const runCodeDescription = "Run a TypeScript program that calls your tools. `code` is the body of an async function: " +
	"the tools are async functions declared in the tools:sdk section of the system prompt, called as " +
	"`await tools.<name>({...})` (quoted names as `await tools[\"my-tool\"]({...})`); they run one at a time, in the order called. " +
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
	"- A tool call resolves to a string when the tool answered with text, otherwise to an array of content blocks.\n" +
	"- A failed or denied tool call rejects with an Error whose message names the tool and whose `code` (e.g. \"DENIED\", \"INVALID_ARGS\") and `name` say why; " +
	"catch it with try/catch to handle it. Tool calls run one at a time, in the order you make them, even under Promise.all.\n" +
	"- An uncaught error fails the run: you see its message, line, and what was printed before it.\n" +
	"- The program has no file system, network, require, process or timers of its own: use the tools.\n\n" +
	"```ts\n"

// codeMode is the modeSupport of Code and Both.
type codeMode struct{ m Mode }

var codeReserved = []string{RunCodeName}

func (c codeMode) mode() Mode                { return c.m }
func (codeMode) reserved() []string          { return codeReserved }
func (codeMode) isReserved(name string) bool { return name == RunCodeName }
func (c codeMode) contribute(_ context.Context, r *Registry, scope host.ScopeKey) (systemprompt.Contribution, error) {
	if _, err := r.CodeRuntime(); err != nil {
		return systemprompt.Contribution{}, err
	}
	var ts []*Tool
	var known []string
	if c.m == Both {
		// Under Both a restricted-away end capability stays a valid
		// toolOrder name; under Code none is contributed, so naming one is
		// dead configuration that fails loud.
		ts, known = r.Visible(scope), r.KnownNames(scope)
	} else {
		ts = []*Tool{r.transport}
	}
	out := make([]systemprompt.ToolSchema, len(ts))
	for i, t := range ts {
		out[i] = systemprompt.ToolSchema{Name: t.name, Description: t.description, Parameters: t.Parameters()}
	}
	return systemprompt.Contribution{
		Tools: out,
		Sections: []systemprompt.Section{{
			Name:  SDKSection,
			Order: SDKSectionOrder,
			Render: func(_ context.Context, scope host.ScopeKey) (string, error) {
				return r.SDK(scope), nil
			},
		}},
		Protected:         []string{RunCodeName},
		ProtectedSections: []string{SDKSection},
		Reserved:          []string{RunCodeName},
		Known:             known,
	}, nil
}

// CodeRuntime returns the code runtime Code Mode runs programs in: the
// [coderuntime.Runtime] provided under coderuntime.ServiceName, looked up
// non-reactively at each call (each prompt assembly and each run_code
// execution). It fails with an actionable error when the registry is in
// Code or Both and no runtime is provided, the service is not a Runtime,
// or its language is not [CodeLanguage]. In native mode it returns the
// runtime when one is there and an error otherwise.
func (r *Registry) CodeRuntime() (coderuntime.Runtime, error) {
	need := fmt.Sprintf("tools mode %q needs a code runtime: load coderuntime.Plugin (service %q) with language %s",
		r.mode.mode(), coderuntime.ServiceName, CodeLanguage)
	v, ok := host.Lookup[any](r.c, coderuntime.ServiceName)
	if !ok {
		return nil, fmt.Errorf("%s; found none (or set tools mode to native)", need)
	}
	rt, ok := v.(coderuntime.Runtime)
	if !ok || rt == nil {
		return nil, fmt.Errorf("%s; found a %T, which is not a coderuntime.Runtime", need, v)
	}
	if lang := rt.Language(); lang != CodeLanguage {
		return nil, fmt.Errorf("%s; found one with language %q", need, lang)
	}
	return rt, nil
}

// SDK renders the tools:sdk section for scope: fixed usage instructions
// and a `declare const tools: {...}` TypeScript declaration (see
// schema.DeclareTools) of the scope's [Registry.EndCapabilities]. It is
// deterministic: byte-identical for an unchanged tool set. It never fails;
// schema constructs TypeScript cannot express render as unknown.
func (r *Registry) SDK(scope host.ScopeKey) string {
	ts := r.EndCapabilities(scope)
	decls := make([]schema.ToolDecl, len(ts))
	for i, t := range ts {
		decls[i] = schema.ToolDecl{Name: t.name, Description: t.description, Parameters: []byte(t.params)}
	}
	return sdkUsage + schema.DeclareTools(decls) + "\n```"
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
		"`const out = await %s({...}); console.log(out)` in its code", Code, RunCodeName, sdkAccess(name))
}

// inCodeRun reports whether parent is a run_code execution in progress
// for the same agent: a sub-call cannot borrow another agent's run.
func (r *Registry) inCodeRun(parent Token, agent host.ScopeKey) bool {
	if parent.IsZero() {
		return false
	}
	runAgent, ok := r.codeRuns.Load(parent)
	return ok && runAgent.(host.ScopeKey) == agent
}

// newTransport builds the frozen run_code tool.
func (r *Registry) newTransport() *Tool {
	t, err := freeze(Definition{
		Name:          RunCodeName,
		Description:   runCodeDescription,
		Parameters:    json.RawMessage(runCodeParameters),
		Execute:       r.runCode,
		ValidateArgs:  validateRunCodeArgs,
		PresentCall:   presentRunCode,
		PresentResult: nil,
	}, "")
	if err != nil {
		panic("tools: the run_code definition is invalid: " + err.Error())
	}
	return t
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
func presentRunCode(args json.RawMessage) CallView {
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
	return GenericCall{Title: title, Kind: "execute", Content: []Content{Text(*a.Code)}}
}

// CodeRunFailedError is how a failed Code Mode run reaches the model: the
// pipeline turns it into an isError result with code CODE_RUN_FAILED and
// name "CodeRunFailedError", whose text is [CodeRunFailedError.Error]: the
// failure kind, the message, the program position when known, and the
// console output captured before the failure. It unwraps to the runtime's
// *coderuntime.Failure (when there is one).
type CodeRunFailedError struct {
	// Kind is the runtime's failure kind ("syntax", "exception",
	// "timeout", "abort", "output-limit", "invalid-output", "limit"), or
	// "unavailable" when no usable code runtime is loaded, or "internal"
	// when the runtime refused the program itself.
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
	return b.String()
}

// Code implements [Coder]: CODE_RUN_FAILED.
func (e *CodeRunFailedError) Code() string { return CodeCodeRunFailed }

// Name implements [Namer].
func (e *CodeRunFailedError) Name() string { return "CodeRunFailedError" }

// Unwrap returns Err.
func (e *CodeRunFailedError) Unwrap() error { return e.Err }

// CodeCallError is how a failed binding call reaches the program: the
// promise of `await tools.<Tool>(...)` rejects with an Error whose message
// is [CodeCallError.Error] ("tools.<tool>: <the result's text>"), whose
// `code` is the sub-call's error code (DENIED, INVALID_ARGS, TOOL_ERROR,
// ...) and whose `name` is its error name.
type CodeCallError struct {
	// Tool is the called tool.
	Tool string
	// Info is the sub-call's error class.
	Info ErrorInfo
	// Message is the model-facing text of the failed result.
	Message string
}

// Error implements error.
func (e *CodeCallError) Error() string { return sdkAccess(e.Tool) + ": " + e.Message }

// Code implements [Coder].
func (e *CodeCallError) Code() string { return e.Info.Code }

// Name implements [Namer].
func (e *CodeCallError) Name() string { return e.Info.Name }

// ErrorDetails implements coderuntime.ErrorDetails: the program sees the
// failed sub-call's tool as err.tool.
func (e *CodeCallError) ErrorDetails() map[string]string { return map[string]string{"tool": e.Tool} }

var (
	_ Coder = (*CodeRunFailedError)(nil)
	_ Namer = (*CodeRunFailedError)(nil)
	_ Coder = (*CodeCallError)(nil)
	_ Namer = (*CodeCallError)(nil)

	_ coderuntime.ErrorDetails = (*CodeCallError)(nil)
)

// runCode is run_code's body: the dispatch bridge.
//
// The program gets one binding per end capability of the call's agent (a
// snapshot taken when the run starts) and runs with MaxConcurrentCalls 1,
// so binding calls execute one at a time in submission order, even under
// Promise.all. Each call is canonicalized (a value that is not lossless
// JSON rejects that call only, before dispatch) and executed through the
// full pipeline as Call{ID: "<outer call id>:code:<n>" (n from 1 per run),
// Agent: the outer agent, Parent: the outer token}; its additional context
// is dropped; it is appended to the session log as a tool/code-dispatch
// event; an isError rejects the binding with a [*CodeCallError].
//
// Settlement: the runtime cancels the context of in-flight binding calls
// when the run settles for any reason (cause coderuntime.ErrRunSettled, the
// outer cancellation, or the run's budget) and waits for them before Run
// returns; each still gets exactly one result and its event is appended
// before run_code returns. Calls still queued at settlement are delivered
// afterwards with the cancelled context, so each is aborted before dispatch
// through the pipeline and logged too: the queue is drained.
func (r *Registry) runCode(ctx context.Context, exec *Execution) (Output, error) {
	rt, err := r.CodeRuntime()
	if err != nil {
		return Output{}, &CodeRunFailedError{Kind: KindUnavailable, Message: err.Error(), Err: err}
	}
	b := &bridge{r: r, outer: exec}
	if exec.agent != "" {
		b.log, _ = host.Lookup[SessionLog](r.c, SessionLogService)
	}
	ends := r.EndCapabilities(exec.agent)
	bindings := make(map[string]coderuntime.Binding, len(ends))
	for _, t := range ends {
		bindings[t.name] = b.binding(t.name)
	}
	r.codeRuns.Store(exec.token, exec.agent)
	res, err := rt.Run(ctx, coderuntime.Program{
		Source:             exec.Arg("code").String(),
		Bindings:           bindings,
		MaxConcurrentCalls: 1,
	})
	r.codeRuns.Delete(exec.token)
	if err != nil {
		var f *coderuntime.Failure
		if errors.As(err, &f) {
			return Output{}, &CodeRunFailedError{Kind: f.Kind, Message: f.Message, Line: f.Line, Column: f.Column, Logs: f.Logs, Err: f}
		}
		return Output{}, &CodeRunFailedError{Kind: KindInternal, Message: err.Error(), Err: err}
	}
	return Output{Content: []Content{Text(programOutput(res))}}, nil
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
	return strings.Join(parts, "\n")
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

// bridge is the state of one run_code execution.
type bridge struct {
	r     *Registry
	outer *Execution
	log   SessionLog // nil: logging skipped
	seq   atomic.Int64
}

func (b *bridge) binding(name string) coderuntime.Binding {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		canon, err := schema.CanonicalizeObject(args, schema.CanonOptions{})
		if err != nil {
			return nil, &CodeCallError{Tool: name, Info: ErrorInfo{Name: "ToolArgsError", Code: CodeInvalidArgs},
				Message: "the argument is not lossless JSON, so the call was not made: " + err.Error()}
		}
		id := b.outer.callID + ":code:" + strconv.FormatInt(b.seq.Add(1), 10)
		res := b.r.Execute(ctx, Call{ID: id, Name: name, Arguments: canon, Agent: b.outer.agent, Parent: b.outer.token})
		// Inserting context inside a running parent call would break
		// tool-call/result adjacency: dropped.
		res.AdditionalContext = nil
		b.append(ctx, id, name, canon, res)
		if res.IsError {
			info := ErrorInfo{Name: "ToolError", Code: CodeToolError}
			if res.Error != nil {
				info = *res.Error
			}
			return nil, &CodeCallError{Tool: name, Info: info, Message: contentText(res.Content)}
		}
		return resultValue(res.Content)
	}
}

// resultValue is what a successful binding call resolves to: the text
// when every block is text (joined by newlines), else the content blocks.
func resultValue(cs []Content) (json.RawMessage, error) {
	for _, c := range cs {
		if c.Type != ContentText {
			return json.Marshal(cs)
		}
	}
	return json.Marshal(contentText(cs))
}

func contentText(cs []Content) string {
	if len(cs) == 1 {
		return cs[0].Text
	}
	texts := make([]string, 0, len(cs))
	for _, c := range cs {
		if c.Type == ContentText {
			texts = append(texts, c.Text)
		}
	}
	return strings.Join(texts, "\n")
}

// append logs one sub-call as a tool/code-dispatch event; a failure is
// logged, not returned (the call itself happened).
func (b *bridge) append(ctx context.Context, id, name string, args []byte, res Result) {
	if b.log == nil {
		return
	}
	data, err := encodeDispatch(name, args, res)
	if err == nil {
		err = b.log.Append(context.WithoutCancel(ctx), SessionEvent{
			Type: CodeDispatchEvent, ID: id, Agent: b.outer.agent, Parent: b.outer.callID, Data: data,
		})
	}
	if err != nil {
		b.r.c.Logger().Warn().Err(err).Str("event", CodeDispatchEvent).Str("id", id).Str("tool", name).
			Msg("appending a Code Mode sub-call to the session log failed")
	}
}

// encodeDispatch is json.Marshal(CodeDispatch{name, args, res}) with a
// reflection-free fast path for the common result (text blocks, no meta):
// it runs once per sub-call, inside the run.
func encodeDispatch(name string, args []byte, res Result) ([]byte, error) {
	size := 96 + len(name) + len(args) + len(res.CallID)
	for _, c := range res.Content {
		if c.Type != ContentText {
			return json.Marshal(CodeDispatch{Name: name, Arguments: args, Result: res})
		}
		size += 24 + len(c.Text)
	}
	if len(res.Meta) > 0 || len(res.AdditionalContext) > 0 {
		return json.Marshal(CodeDispatch{Name: name, Arguments: args, Result: res})
	}
	b := make([]byte, 0, size)
	b = append(b, `{"name":`...)
	b = schema.AppendString(b, name)
	b = append(b, `,"arguments":`...)
	b = append(b, args...)
	b = append(b, `,"result":{"callId":`...)
	b = schema.AppendString(b, res.CallID)
	b = append(b, `,"content":[`...)
	for i, c := range res.Content {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"type":"text","text":`...)
		b = schema.AppendString(b, c.Text)
		b = append(b, '}')
	}
	b = append(b, `],"isError":`...)
	b = strconv.AppendBool(b, res.IsError)
	if res.Error != nil {
		b = append(b, `,"error":{"name":`...)
		b = schema.AppendString(b, res.Error.Name)
		b = append(b, `,"code":`...)
		b = schema.AppendString(b, res.Error.Code)
		b = append(b, '}')
	}
	return append(b, "}}"...), nil
}
