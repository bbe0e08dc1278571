// Package tools is the tool registry and execution pipeline of dsh (the
// spec's dsh-tools; import path github.com/dsh-go/dsh/plugins/tools,
// package name tools).
//
// # Mapping to the spec
//
//	spec                          package tools
//	ctx.tools (ToolRegistry)      *Registry, provided by Plugin under ServiceName ("tools")
//	config mode                   Config{Mode}; only Native is built (Code Mode is a later issue)
//	register / restrict / guard   Registry.Register / Restrict / Guard (layer = c.ScopeKey())
//	get / visible / knownNames    Registry.Get / Visible / KnownNames
//	schemas                       Registry.Schemas ([]Schema: name, description, parameters)
//	execute                       Registry.Execute(ctx, Call) Result
//	ToolDefinition                Definition (frozen into *Tool at registration)
//	timeoutMs                     Definition.Timeout (time.Duration; 0 = none)
//	defineTool / SchemaSpec       Define[A](TypedTool[A]) with schema.Spec, or derived from struct A
//	ToolExecutionInput            Call; its signal is the ctx passed to Execute
//	ToolExecutionToken            Token (comparable, zero = none, assigned by the registry)
//	ToolExecution                 *Execution (immutable; Args / Arg (gjson) / Decode)
//	ToolExecutionResult           Result (a value; error info in ErrorInfo)
//	HarnessError                  any error with Code() string (Coder), optionally Name() (Namer); *Error
//	PreToolDecision               PreDecision{Kind: Allow|Deny|Ask, Reason}
//	PostToolDecision              PostDecision{Kind: Accept|Block, Content, Feedback, AdditionalContext}
//	ToolGuard                     Guard func(*Execution) string
//	ToolCallView / ToolResultView CallView / ResultView (GenericCall, TerminalCall, DiffCall, ...)
//	ctx.approval                  Approver, looked up per ask under ApprovalService ("approval")
//	tools/pre-execute ...         PreExecute, ExecuteEvent, PostExecute, ResultEvent, Change
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
// The spec's "a wrapper may change only the signal" is a tools/execute
// listener passing a derived context.Context to next; the body still
// observes the caller's cancellation.
//
// # Lossless arguments
//
// A call's arguments are canonicalized once (schema.CanonicalizeObject) and
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
// # Later: batches and Code Mode
//
// A batch API fits without changing this one: a Definition field (say
// Concurrency, zero = exclusive) carried into *Tool, and
// Registry.ExecuteBatch(ctx, []Call) []Result that runs stages 1–5 in
// submission order and overlaps stages 6–10 of concurrency-safe calls up to
// a cap. Execute already holds no lock while user code runs and is safe for
// concurrent use. Code Mode plugs into the unexported modeSupport seam
// (reserved transport names, enforced by Register and Restrict, and the
// prompt contribution per scope); Config.Validate will then accept code and
// both.
package tools
