package toolotel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// ScopeName is the instrumentation scope (tracer and meter name) of the
// spans and metrics this package records.
const ScopeName = "github.com/dsh-go/dsh/plugins/otel"

// DefaultMaxRecordBytes is the default bound on a recorded argument or
// result attribute ([Config].MaxRecordBytes).
const DefaultMaxRecordBytes = 4096

// maxMaxRecordBytes is the largest accepted Config.MaxRecordBytes.
const maxMaxRecordBytes = 1 << 20

// Tool types reported as gen_ai.tool.type.
const (
	// TypeFunction is a tool whose body is Go code of the host process.
	TypeFunction = "function"
	// TypeExtension is a tool that calls out to another system, such as a
	// tool mounted from an MCP server.
	TypeExtension = "extension"
	// TypeDatastore is a tool that retrieves from a data store.
	TypeDatastore = "datastore"
)

// Config configures [Plugin] and [New]. The zero value records spans and
// metrics through the global providers and never records arguments or
// results.
type Config struct {
	// TracerProvider makes the spans; nil means the global one
	// (otel.GetTracerProvider, which also follows a later
	// otel.SetTracerProvider). A trace/noop provider makes none, and the
	// plugin then starts none.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; nil means the global one
	// (otel.GetMeterProvider, likewise).
	MeterProvider metric.MeterProvider
	// RecordArguments records each call's canonical JSON arguments as
	// gen_ai.tool.call.arguments on its span, cut to MaxRecordBytes. Off
	// by default: arguments may hold secrets.
	RecordArguments bool
	// RecordResults records a successful call's content blocks, as JSON,
	// as gen_ai.tool.call.result on its span, cut to MaxRecordBytes. Off
	// by default: results may hold secrets.
	RecordResults bool
	// MaxRecordBytes bounds each recorded argument or result attribute;
	// zero means DefaultMaxRecordBytes. A longer value is cut on a UTF-8
	// boundary and ends with "…[truncated]". At most 1 MiB.
	MaxRecordBytes int
	// ToolType returns a resolved tool's gen_ai.tool.type (TypeFunction,
	// TypeExtension, TypeDatastore); nil means [DefaultToolType]. It must
	// be pure and cheap; its answer is cleaned and cut to 64 bytes, and a
	// panic counts as TypeFunction.
	ToolType func(t *tools.Tool) string
	// Attributes, when set, returns more attributes for a call's span,
	// such as the identity and session of the client that made it (see
	// [AttrIdentity], [AttrSession]). It is called once per call, when
	// its span starts, and only while spans are recorded. It must be
	// cheap and must not block; a string value is cleaned and cut to 256
	// bytes, at most 16 attributes are kept, and a panic adds none.
	Attributes func(call tools.Call) []attribute.KeyValue
	// Explain, when set, names the permission rule behind a call's
	// pre-execute decision: when its verdict is the decision taken, the
	// call span's [AttrDecisionBy] is "rule" (and [AttrDecisionRule] the
	// rule) or, for an empty rule, "default" (the policy's default
	// mode), rather than "policy". Called only while spans are recorded;
	// a panic counts as no explanation.
	Explain func(e *tools.Execution) (verdict, rule string)
}

// Validate reports a MaxRecordBytes out of range.
func (c Config) Validate() error {
	if c.MaxRecordBytes < 0 || c.MaxRecordBytes > maxMaxRecordBytes {
		return fmt.Errorf("otel: config MaxRecordBytes is %d; it must be between 0 (the default %d) and %d", c.MaxRecordBytes, DefaultMaxRecordBytes, maxMaxRecordBytes)
	}
	return nil
}

// DefaultToolType reports an MCP-mounted tool (the plugins/mcp-client
// naming, "mcp__<server>__<tool>") as TypeExtension and every other tool
// as TypeFunction.
func DefaultToolType(t *tools.Tool) string {
	if strings.HasPrefix(t.Name(), "mcp__") {
		return TypeExtension
	}
	return TypeFunction
}

// The metric names. Every measurement carries gen_ai.operation.name
// (execute_tool) and gen_ai.tool.name (a tool the call did not resolve to
// is recorded as "_OTHER", so an unknown name cannot add a series); a
// failed call also error.type, its error code.
const (
	// MetricCalls counts calls ({call}).
	MetricCalls = "dsh.tool.calls"
	// MetricDuration is each call's duration in seconds, from entering
	// the pipeline to its final result (everything but tools/result).
	MetricDuration = "dsh.tool.duration"
	// MetricApprovalWait is the time a call waited for the approval
	// service, in seconds, with dsh.tool.approval.outcome: allowed-once,
	// or the code of the denial (APPROVAL_REJECTED, ...).
	MetricApprovalWait = "dsh.tool.approval.wait"
)

// Attribute keys of this package (the GenAI ones come from semconv).
const (
	// AttrAgent is the call's agent scope (a call without one has none).
	AttrAgent = "dsh.tool.agent"
	// AttrStageOutcome is a stage span's decision (allow, deny, ask,
	// allowed-once, accept, block).
	AttrStageOutcome = "dsh.tool.stage.outcome"
	// AttrGuards is the guards span's number of guards that ran.
	AttrGuards = "dsh.tool.guards"
	// AttrApprovalOutcome is MetricApprovalWait's outcome attribute.
	AttrApprovalOutcome = "dsh.tool.approval.outcome"
	// AttrErrorName is a failed call's error name (error.type is its
	// code).
	AttrErrorName = "dsh.tool.error.name"
	// AttrDecision is the call span's final policy decision: the last
	// one taken on the call, of pre-execute (allow, deny, ask), approval
	// (allowed-once, rejected, cancelled, unavailable, failed), guards
	// (deny) and post-execute (block). A call stopped before pre-execute
	// (invalid input) has none.
	AttrDecision = "dsh.tool.decision"
	// AttrDecisionBy says who took AttrDecision: "policy" (a pre-execute
	// listener), "rule" or "default" (see [Config].Explain), "approver",
	// "guard" or "post-execute".
	AttrDecisionBy = "dsh.tool.decision.by"
	// AttrDecisionRule is the permission rule that decided, when
	// [Config].Explain names one.
	AttrDecisionRule = "dsh.tool.decision.rule"
	// AttrIdentity and AttrSession are the conventional keys for the
	// authenticated identity and the session of a call, for
	// [Config].Attributes to return.
	AttrIdentity = "dsh.identity"
	AttrSession  = "dsh.session"
)

// otherValue stands for a value outside the recorded set (an unknown
// tool, an error code beyond the cardinality bound), as semconv's
// error.type does.
const otherValue = "_OTHER"

// durationBuckets are the histogram bucket bounds, in seconds: from half
// a millisecond (a policy-only denial) to five minutes (a long command).
var durationBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// Instrumentation records spans and metrics for the calls of the
// registries it traces; it implements [tools.Tracer]. Make one with
// [New] and register it with tools.Registry.Trace, or load [Plugin],
// which does both. It is safe for concurrent use.
type Instrumentation struct {
	tracer   trace.Tracer // nil: spans off (a no-op provider)
	calls    metric.Int64Counter
	duration metric.Float64Histogram
	wait     metric.Float64Histogram

	recordArgs, recordResults bool
	maxRecord                 int
	toolType                  func(*tools.Tool) string
	attributes                func(tools.Call) []attribute.KeyValue
	explain                   func(*tools.Execution) (string, string)
	codes                     *boundedSet
	now                       func() time.Time
}

var _ tools.Tracer = (*Instrumentation)(nil)

// New returns an Instrumentation for cfg. It fails when cfg is invalid or
// a provider fails to make an instrument.
func New(cfg Config) (*Instrumentation, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tp, mp := cfg.TracerProvider, cfg.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	ins := &Instrumentation{
		recordArgs: cfg.RecordArguments, recordResults: cfg.RecordResults,
		maxRecord: cfg.MaxRecordBytes, toolType: cfg.ToolType,
		attributes: cfg.Attributes, explain: cfg.Explain,
		codes: newBoundedSet(maxCodes), now: time.Now,
	}
	if ins.maxRecord == 0 {
		ins.maxRecord = DefaultMaxRecordBytes
	}
	if ins.toolType == nil {
		ins.toolType = DefaultToolType
	}
	if _, off := tp.(tracenoop.TracerProvider); !off {
		ins.tracer = tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	m := mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var err1, err2, err3 error
	ins.calls, err1 = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
		metric.WithDescription("Tool calls run through the pipeline."))
	ins.duration, err2 = m.Float64Histogram(MetricDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of tool calls, from entering the pipeline to the final result."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	ins.wait, err3 = m.Float64Histogram(MetricApprovalWait, metric.WithUnit("s"),
		metric.WithDescription("Time tool calls waited for the approval service."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(err1, err2, err3); err != nil {
		return nil, fmt.Errorf("otel: making the instruments: %w", err)
	}
	return ins, nil
}

// StartCall implements [tools.Tracer]. It returns nil (the call is not
// followed at all) when spans are off and no instrument is enabled.
func (ins *Instrumentation) StartCall(call tools.Call) tools.CallTrace {
	if ins.tracer == nil {
		bg := context.Background()
		if !ins.calls.Enabled(bg) && !ins.duration.Enabled(bg) && !ins.wait.Enabled(bg) {
			return nil
		}
		return &callTrace{ins: ins, start: ins.now()}
	}
	ct := &callTrace{ins: ins, start: ins.now()}
	if ins.attributes != nil {
		call.Arguments = nil // not kept for the call's life
		ct.extra = ins.extraAttributes(call)
	}
	return ct
}

// maxExtraAttrs bounds the attributes [Config].Attributes adds to a span;
// maxExtraValue a string value of one.
const (
	maxExtraAttrs = 16
	maxExtraValue = 256
)

// extraAttributes returns the attributes of [Config].Attributes for
// call, bounded and cleaned; none when it panics.
func (ins *Instrumentation) extraAttributes(call tools.Call) (out []attribute.KeyValue) {
	defer func() {
		if recover() != nil {
			out = nil
		}
	}()
	kvs := ins.attributes(call)
	if len(kvs) > maxExtraAttrs {
		kvs = kvs[:maxExtraAttrs]
	}
	out = make([]attribute.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		if !kv.Valid() {
			continue
		}
		if kv.Value.Type() == attribute.STRING {
			kv.Value = attribute.StringValue(clean(kv.Value.AsString(), maxExtraValue))
		}
		out = append(out, kv)
	}
	return out
}

// Plugin is the OpenTelemetry plugin, named "otel": it requires the tool
// registry and registers an [Instrumentation] for its config ([Config],
// given as a Config or *Config value; nil is the zero Config) with
// tools.Registry.Trace. Disposing the plugin's fiber unregisters it: later
// calls are not traced.
var Plugin = tools.DefinePlugin("otel", func(c *host.Context, reg *tools.Registry) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	ins, err := New(cfg)
	if err != nil {
		return err
	}
	_, err = reg.Trace(c, ins)
	return err
})
