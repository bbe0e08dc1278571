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
// snapshot → validate-args → tools/pre-execute → guards → approval (an
// ask only; nobody is asked about a call a guard refuses) → tools/execute
// → dispatch → tools/post-execute → finalize → tools/result.
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
// programming API: Code Mode, package plugins/codemode, whose Plugin is
// this registry plugin with Code Mode attached ([PluginWith]). The
// registry keeps only the mechanics every such mode needs: the reserved
// transport (run_code) lives outside the layers (every scope presented in
// Code or Both resolves it; it is not in KnownNames; registering,
// shadowing or restricting it fails with ErrReserved, in every registry
// mode once Code Mode is attached), for an agent presented in Code a
// direct call to any other tool is UNKNOWN_TOOL unless its Parent is a
// transport execution in progress for the same agent, and a transport's
// sub-calls run as one batch ([SubCalls]). The registry links no
// JavaScript engine; plain [Plugin] refuses Code and Both, naming
// codemode.Plugin. Code Mode's contract is written once, in package
// codemode's documentation.
//
// # Per-agent presentation
//
// An agent scope may choose its own mode: [Registry.PresentAs] (through
// the agent's scoped context, as Restrict and Guard) declares Native, Code
// or Both for that agent only, shadowing Config.Mode until its disposer
// runs or its fiber is disposed; [Registry.ModeOf] reads the mode a scope
// is presented in. The agent's prompt contribution (its wire definitions
// and the tools:sdk section), the transport's visibility, the refusal of
// direct calls under Code and the MCP gateway's session view follow it;
// what the agent can call does not ([Registry.EndCapabilities],
// restrictions, and policy per call). One declaration per scope
// ([ErrPresentedTwice]); a plain context cannot declare one
// ([ErrNotScoped]); Code and Both need Code Mode attached
// ([ErrNoCodeMode]).
//
// # Batches
//
// [Registry.ExecuteBatch] runs the tool calls of one model turn and returns
// their results in model order. A tool declares which of its calls may run
// alongside others ([Definition].Concurrency: [Parallel], a
// [ConcurrencyFunc] of the call, or nothing); [Registry.Concurrency]
// answers per call and agent, and the generated tool catalog shows each
// declaration. Only an explicit Parallel opts in; every other call is
// exclusive, a barrier. Policy stays in model order (pre-execute, guards,
// approval asks one at a time, post-execute, tools/result); only the
// tools/execute stage and the body of parallel calls overlap, at most
// [BatchOptions].MaxParallel at once. Cancelling the batch gives calls not
// yet dispatched ABORTED_BEFORE_DISPATCH and running ones ABORTED; one
// call's failure cancels no other unless [BatchOptions].CancelWhen says so.
// Each result carries its own deferred context ([BatchContext] joins them)
// and may ask to conclude the turn ([ConcludesTurn]).
package tools
