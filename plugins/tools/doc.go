// Package tools is the tool registry and execution pipeline for LLM agent
// runtimes (import path github.com/dsh-go/dsh/plugins/tools, package name
// tools). Load [Plugin] on a host; it provides a [*Registry] through
// [Service].
//
// Tool plugins register tools; the agent runtime executes the model's tool
// calls through the registry; policy plugins decide, around each call,
// whether and how it runs. A tool is a [Definition] (name, description,
// JSON Schema parameters, body, optional declared output, presentation
// cards and timeout); [Define] builds one from a Go argument type, whose
// fields give the schema (as the MCP go-sdk's mcp.AddTool derives it) and
// against which the arguments are validated and decoded before any policy
// runs, and from a Go output type. [DefinePlugin] is the usual way to write a plugin that
// registers tools or policy:
//
//	var Echo = tools.DefinePlugin("echo", func(c *host.Context, reg *tools.Registry) error {
//		def, err := tools.Define(tools.TypedTool[EchoArgs, tools.Output]{
//			Name: "echo", Description: "Echo a text.",
//			Execute: func(ctx context.Context, a EchoArgs, _ *tools.Execution) (tools.Output, error) {
//				return tools.TextOutput(a.Text), nil
//			},
//		})
//		if err != nil {
//			return err
//		}
//		_, err = reg.Register(c, def) // unregistered when the plugin is disposed
//		return err
//	})
//
//	res := reg.Execute(ctx, tools.Call{ID: "c1", Name: "echo", Arguments: args, Agent: "agent-1"})
//
// Registration is layered: through a plain plugin context a tool is
// global; through an agent's scoped context (host.Context.Scope) it exists
// for that agent only and shadows a global tool of the same name there.
// [Registry.Restrict] masks the global tools for one agent, and
// [Registry.Guard] adds a monotonic deny rule. [Registry.Get],
// [Registry.Visible], [Registry.KnownNames] and [Registry.Schemas] answer
// what one agent sees, and always agree with what Execute dispatches.
//
// # The pipeline
//
// pipeline.go holds the whole pipeline, top to bottom in the order the
// stages run, and [Stages] lists them as data for the generated diagram:
// snapshot → validate-args → tools/pre-execute → approval → guards →
// tools/execute → dispatch → tools/post-execute → finalize → tools/result.
// Every [Registry.Execute] returns exactly one [Result] and emits exactly
// one tools/result, whatever fails; failures carry a stable code (the
// Code* constants).
//
// The pipeline's guarantees hold against any listener, guard, wrapper,
// approver or tool body: policy reads exactly the arguments the body gets;
// a body never starts unless every policy stage allowed it and the caller
// had not cancelled (a tools/execute wrapper may only derive the
// cancellation context it passes to next, and the caller's cancellation
// still reaches the body); no body runs after its call's result was given;
// every error, result and decision handed back is read under containment,
// and even runtime.Goexit in user code leaves the call exactly one result.
//
// # Lossless arguments
//
// A call's arguments are canonicalized once (canonjson.CanonicalizeObject) and
// frozen as a string inside the *Execution, so every phase and the tool body
// read the same bytes. Rejected as INVALID_ARGS before any policy runs:
// anything that is not exactly one JSON object (null and empty input mean
// {}), invalid UTF-8, escaped lone surrogates, duplicate member names after
// unescaping, integers beyond ±(2^53-1), numbers overflowing float64, and
// input deeper than 64 levels or larger than 4 MiB. These are the inputs on
// which JSON readers disagree (first- vs last-wins keys, U+FFFD
// substitution, float64 vs exact integers), so a policy listener reading
// with one reader and the tool with another could otherwise see different
// values.
//
// # Results are values
//
// Content is a struct of strings and Result.Clone is a deep copy. The
// caller, every post-execute listener and every tools/result observer get
// their own copy (PostInput.Result and ResultNotice.Result copy on each
// call), so nobody can change what another sees.
//
// # Declared outputs
//
// A tool may declare its output ([Definition].OutputSchema: a JSON Schema
// in the structured-output subset of package schema) and a render from
// its value to model-facing content ([Definition].RenderOutput; JSON text
// by default, a string as itself). A [TypedTool] with Out other than
// [Output] declares the schema derived from Out, as the MCP go-sdk does. A
// success then carries the canonical value ([Result].Value: validated, a
// mismatch is INVALID_OUTPUT naming each violation's path) beside its
// content; post-execute may replace the value (validated and rendered
// again) or the content; tools/result, mounted MCP tools
// (structuredContent) and served ones carry both. A text-only tool's value
// is its text ([Result.CanonicalValue]). [Definition].FinalizeContent has
// the tool's last word on the content of every result of a call, once,
// failures included.
//
// # Code Mode
//
// Under Config{Mode: Code} (or Both) the registry presents its tools as a
// programming API (codemode.go). Its prompt contribution is the reserved
// wire transport run_code (params: code, the TypeScript body of an async
// function; description, a one-line summary for UIs) plus the lazy
// tools:sdk section (order 150), which [Registry.SDK] renders at each
// assembly for the calling scope: fixed usage instructions and a
// `declare const tools: {...}` declaration of [Registry.EndCapabilities]
// (sorted, exotic names quoted, unsupported schema
// constructs as unknown, byte-identical for an unchanged set). Both adds
// the visible native definitions. run_code and tools:sdk are Protected /
// ProtectedSections and run_code is Reserved, so systemprompt restores
// them after the assembly waterfall, refuses a scoped section shadowing
// tools:sdk, accepts run_code in toolOrder, and rejects a toolOrder naming
// a tool the mode no longer contributes.
//
// run_code lives outside the layers: every scope resolves it (Get,
// Visible, Schemas, Execute) whatever its restrictions; it is not in
// KnownNames; registering or shadowing it, or naming it in a restriction,
// fails with ErrReserved. Under Code a direct call to any other tool is
// UNKNOWN_TOOL, with a message saying to call it from run_code; only calls
// whose Parent is a run_code execution in progress reach end capabilities.
//
// Both modes need a code runtime, read with coderuntime.Service.Lookup
// (non-reactive) at every assembly and every
// run_code execution, with language "typescript". Missing or mismatched,
// every assembly fails with an actionable error (load coderuntime.Plugin),
// and run_code fails with CODE_RUN_FAILED, kind "unavailable".
//
// The bridge (run_code's body) gives the program one binding per end
// capability of the call's agent. The sub-calls of one run are one batch
// (see Batches below), in submission order: calls the program makes
// together (Promise.all) overlap when their tools declare them parallel,
// at most Config.MaxParallelSubCalls at once (default 10); every other
// sub-call is a barrier. A binding call's JSON argument is canonicalized
// first (a value that is not lossless JSON rejects that call only, before
// dispatch; BigInt and circular values are already rejected by the
// runtime), then dispatched through the full pipeline as Call{ID: "<outer
// id>:code:<n>", Agent: outer agent, Parent: outer token}, n counting from
// 1 per run in submission order. Its additional context is deferred to
// run_code's result (in submission order, before run_code's own), and a
// successful sub-call's ConcludeTurn makes a successful run_code conclude
// the turn. It is appended to the [SessionLog] (when
// one is provided and the call has an agent; an Append error is logged,
// not fatal) as a tool/code-dispatch [SessionEvent] carrying
// [CodeDispatch]{name, arguments, result}. An isError result rejects the
// binding's promise with a [*CodeCallError]: err.message is
// "tools.<name>: <text>", err.code and err.name the result's error class,
// err.tool the tool.
// A success resolves to the text when every block is text (joined by
// newlines), else to the content blocks.
//
// Settlement is the bridge's, whatever the runtime does (any
// coderuntime.Runtime, the shipped one or not): the bridge itself orders
// binding calls (by coderuntime.CallSeq when the runtime gives it, else by
// arrival), and when the run settles (Run returns a result or an error,
// panics, or calls runtime.Goexit: the last two are CODE_RUN_FAILED, kind
// "internal") it cancels the context of the sub-calls in flight and waits
// for them, so each still gets exactly one result and its
// tool/code-dispatch event is appended before run_code returns. Calls
// still waiting for their turn at that moment are dispatched in order with
// the cancelled context (the queue is drained): each is aborted before its
// body runs (ABORTED_BEFORE_DISPATCH), gets exactly one result and is
// logged too. A binding called after that is refused without dispatch
// (code RUN_SETTLED, wrapping coderuntime.ErrRunSettled). The caller's
// cancellation cancels every sub-call at once, but run_code still waits
// for Run to return, as for any tool body.
//
// Only what the program prints (console lines, "[warn] " / "[error] "
// prefixed) and returns (a string as itself, anything else as JSON) is
// run_code's content, one text block. A failed run is a
// [*CodeRunFailedError] (CODE_RUN_FAILED): the failure kind, message,
// position in the model's program, and the captured console output.
// Cancellation by the caller while the program runs is ABORTED, as for
// every tool.
//
// # Batches
//
// [Registry.ExecuteBatch] runs the tool calls of one model turn and returns
// their results in model order. A tool declares which of its calls may run
// alongside others ([Definition].Concurrency: [Parallel], a
// [ConcurrencyFunc] of the call, or nothing); [Registry.Concurrency]
// answers per call and agent, and the generated tool catalog shows each
// declaration. Only an explicit Parallel opts in; every other call is
// exclusive, a barrier. Policy stays in model order (pre-execute, approval
// asks one at a time, guards, post-execute, tools/result); only the
// tools/execute stage and the body of parallel calls overlap, at most
// [BatchOptions].MaxParallel at once. Cancelling the batch gives calls not
// yet dispatched ABORTED_BEFORE_DISPATCH and running ones ABORTED; one
// call's failure cancels no other unless [BatchOptions].CancelWhen says so.
// Each result carries its own deferred context ([BatchContext] joins them)
// and may ask to conclude the turn ([ConcludesTurn]).
package tools
