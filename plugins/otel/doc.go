// Package toolotel records OpenTelemetry traces and metrics for the calls
// of a tool registry (import path github.com/dsh-go/dsh/plugins/otel,
// package name toolotel, so that it does not clash with
// go.opentelemetry.io/otel).
//
// Load [Plugin] next to the tool registry, or register an
// [Instrumentation] made with [New] through tools.Registry.Trace:
//
//	fiber, err := root.Plugin(toolotel.Plugin, toolotel.Config{
//		TracerProvider: tp, // nil: otel.GetTracerProvider()
//		MeterProvider:  mp, // nil: otel.GetMeterProvider()
//	})
//
// Every call the registry runs (Execute, each call of ExecuteBatch, each
// Code Mode sub-call) gets one span, following the OpenTelemetry GenAI
// semantic conventions for tool execution: named "execute_tool <tool>",
// kind INTERNAL, with gen_ai.operation.name "execute_tool",
// gen_ai.tool.name, gen_ai.tool.call.id (when the call has an id) and
// gen_ai.tool.type (for a tool the call resolved to: [DefaultToolType]
// or [Config].ToolType), plus dsh.tool.agent for a call made for an
// agent. A failed call (an isError result) has status Error, described
// by its error code, error.type set to the code and dsh.tool.error.name
// to the error's name; a successful one leaves the status unset. The
// span starts when the call enters the pipeline and ends with its final
// result, just before tools/result is emitted. Its parent is the span of
// the context the call was made under.
//
// Each pipeline stage that ran user code is a child span named after the
// stage: pre-execute, guards (with dsh.tool.guards, how many ran),
// approval (the wait for the approval service; only for a call a policy
// asked about and no guard refused), dispatch (one run of the tool body; none for an unknown
// tool, several under a retrying tools/execute wrapper) and
// post-execute. A stage's decision is its
// dsh.tool.stage.outcome (allow, deny, ask; allowed-once; accept,
// block); a stage that stopped or failed the call has status Error with
// the code, and error.type. Stages a call never reached have no span. A
// stage cut short by runtime.Goexit or a pipeline panic is ended, with
// status Error, when the call ends.
//
// Listeners, the approval service, tools/execute wrappers and the tool
// body run under a context whose current span is the call's span (a
// wrapper may pass its own child span on to the body). So the spans a
// tool body makes are children of its call's span, and the span of a
// Code Mode sub-call is a child of the span of its run_code call. Each
// call of a parallel batch has its own span, a sibling of the others.
//
// The call's span also carries its final policy decision,
// dsh.tool.decision (the last of pre-execute's allow/deny/ask, the
// approval's allowed-once/rejected/cancelled/unavailable/failed, a
// guard's deny, post-execute's block), and who took it,
// dsh.tool.decision.by: policy, rule or default (when [Config].Explain
// names the permission rule, then dsh.tool.decision.rule), approver,
// guard or post-execute. [Config].Attributes adds the host's own
// attributes to each call's span, such as the caller's dsh.identity and
// dsh.session (`dsh mcp serve` does), cleaned and bounded.
//
// Metrics ([MetricCalls], [MetricDuration], [MetricApprovalWait]) carry
// gen_ai.operation.name, gen_ai.tool.name and, for a failed call,
// error.type with its code. Their cardinality is bounded: a call that
// resolved to no registered tool counts as tool "_OTHER", and at most 64
// error codes besides the pipeline's own are recorded as themselves,
// later ones as "_OTHER".
//
// Arguments and results are not recorded unless [Config].RecordArguments
// or RecordResults says so (they may hold secrets); then each is cut to
// [Config].MaxRecordBytes. Every string taken from a call (tool names,
// ids, agents, error codes and names) is made valid UTF-8, stripped of
// control characters and bounded.
//
// Cost: with a trace/noop TracerProvider and a MeterProvider whose
// instruments are all disabled (metric/noop), the plugin follows no call
// (its StartCall returns nil): Execute then costs what it costs without
// the plugin, within measurement noise, and allocates nothing more. With
// the SDK recording every span, a call costs about six spans (the call
// and its stages) more.
//
// Disposing the plugin's fiber unregisters the tracer: later calls are
// not followed; calls already in progress still end their spans.
package toolotel
