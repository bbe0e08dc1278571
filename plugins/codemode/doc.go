// Package codemode is Code Mode: the tool registry (package plugins/tools)
// presenting its tools to the model as a programming API. The model writes
// one TypeScript program that calls the tools (`await tools.name({...})`)
// and passes it to the reserved run_code tool; only what the program prints
// and returns re-enters the model's context. Load [Plugin] in place of
// tools.Plugin, with tools.Config{Mode: tools.Code} (or tools.Both).
//
// The package links no JavaScript engine: programs run in the
// coderuntime.Runtime a code-runtime plugin provides through
// coderuntime.Service, and [Runtime] looks it up at each prompt assembly
// and each run. The program that assembles the host picks it: dsh loads
// isolated.Plugin (package codeRuntime/isolated: isolated goja by default),
// and so should an embedder, unless it provides a runtime of its own.
//
// # The contract
//
// Under tools.Config{Mode: tools.Code} (or Both) the registry presents its
// tools as a programming API (codemode.go). Its prompt contribution is the reserved
// wire transport run_code (params: code, the TypeScript body of an async
// function; description, a one-line summary for UIs) plus the lazy
// tools:sdk section (order 150), which [SDK] renders at each
// assembly for the calling scope: fixed usage instructions and a
// `declare const tools: {...}` declaration of tools.Registry.EndCapabilities
// (arguments and, through ToolOutputMap, output types)
// (sorted, exotic names quoted, unsupported schema
// constructs as unknown, byte-identical for an unchanged set). Both adds
// the visible native definitions. run_code and tools:sdk are Protected /
// ProtectedSections and run_code is Reserved, so systemprompt restores
// them after the assembly waterfall, refuses a scoped section shadowing
// tools:sdk, accepts run_code in toolOrder, and rejects a toolOrder naming
// a tool the mode no longer contributes.
//
// run_code lives outside the layers: every scope presented in Code or
// Both resolves it (Get, Visible, Schemas, Execute) whatever its
// restrictions; it is not in KnownNames; registering or shadowing it, or
// naming it in a restriction, fails with ErrReserved, in every registry
// mode (native included: Plugin attaches Code Mode in every mode). Under
// Code a direct call to any other tool is UNKNOWN_TOOL, with a message
// saying to call it from run_code; only calls whose Parent is a run_code
// execution in progress for the same agent reach end capabilities.
//
// # Per-agent presentation
//
// The mode is per agent: tools.Registry.PresentAs, through an agent's
// scoped context, presents that agent in Native, Code or Both whatever
// tools.Config.Mode is (tools.Registry.ModeOf reads it). Everything above
// then holds per agent: its contribution (run_code and tools:sdk, or the
// native definitions, or all three), whether it resolves run_code, and
// whether its direct calls are refused. Its end capabilities, and the
// tools:sdk declaration of them, are the same in every mode.
//
// Both modes need a code runtime, read with coderuntime.Service.Lookup
// (non-reactive) at every assembly and every
// run_code execution, with language "typescript". Missing or mismatched,
// every assembly fails with an actionable error (load isolated.Plugin),
// and run_code fails with CODE_RUN_FAILED, kind "unavailable".
//
// The bridge (run_code's body) gives the program one binding per end
// capability of the call's agent. The sub-calls of one run are one batch
// (scheduled as tools.Registry.ExecuteBatch schedules a model turn, through
// tools.SubCalls), in submission order: calls the program makes
// together (Promise.all) overlap when their tools declare them parallel,
// at most tools.Config.MaxParallelSubCalls at once (default 10); every other
// sub-call is a barrier. A binding call's JSON argument is canonicalized
// first (a value that is not lossless JSON rejects that call only, before
// dispatch; BigInt and circular values are already rejected by the
// runtime), then dispatched through the full pipeline as Call{ID: "<outer
// id>:code:<n>", Agent: outer agent, Parent: outer token}, n counting from
// 1 per run in submission order. Its additional context is deferred to
// run_code's result (in submission order, before run_code's own), and a
// successful sub-call's ConcludeTurn makes a successful run_code conclude
// the turn. It is appended to the tools.SessionLog (when
// one is provided and the call has an agent; an Append error is logged,
// not fatal) as a tool/code-dispatch-start tools.SessionEvent
// (tools.CodeDispatchStart) when it enters the pipeline, in call-number
// order (a slow log holds up the next call's start), and once settled as a
// tool/code-dispatch event carrying tools.CodeDispatch{name, arguments,
// result, timing}. An isError result rejects the binding's promise with a
// [*ToolCallError]: err.message is "tools.<name>: <text>", err.code and
// err.name the result's error class, err.tool the tool. A success resolves
// to the result's canonical value after policy
// (tools.Result.CanonicalValue): a tool with a declared output's value as
// a JS value, a text-only tool's text as a string. Image blocks of a
// sub-call's final content are deferred onto run_code's result, after the
// program's output. The tools:sdk declaration types each call's value
// (ToolOutputMap) and declares ToolCallError. Before its tool/code-dispatch
// event is appended, the [CodeDispatchLog] waterfall
// (tools/code-dispatch-log) runs over a copy of the settled sub-call and
// may replace the durable payload only (package spill is its first
// listener).
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
package codemode
