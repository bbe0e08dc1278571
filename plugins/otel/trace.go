package toolotel

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/tools"
)

// callTrace follows one call: its execute_tool span, made at the first
// hook that brings a context, and the stage spans still open.
type callTrace struct {
	ins   *Instrumentation
	start time.Time

	once sync.Once
	span trace.Span // nil: spans off
	// under: the stages run under the call's span (its span context is
	// valid, so children and samplers find it).
	under bool

	// extra: the attributes of Config.Attributes, for the call's span.
	extra []attribute.KeyValue

	mu   sync.Mutex
	open []trace.Span // stage spans begun and not ended
	// decision, by, rule: the last policy decision taken on the call
	// (spans on only).
	decision, by, rule string
}

// ensure makes the call's span, once, as a child of ctx's span. exec has
// been through stage 1: its call id is checked (or repaired).
func (ct *callTrace) ensure(ctx context.Context, exec *tools.Execution) {
	ct.once.Do(func() {
		if ct.ins.tracer == nil {
			return
		}
		name := clean(exec.Name(), tools.MaxNameLen)
		attrs := make([]attribute.KeyValue, 0, 3+len(ct.extra))
		attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name))
		if id := exec.CallID(); id != "" {
			attrs = append(attrs, semconv.GenAIToolCallID(id))
		}
		attrs = append(attrs, ct.extra...)
		_, ct.span = ct.ins.tracer.Start(ctx, "execute_tool "+name,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(ct.start),
			trace.WithAttributes(attrs...))
		ct.under = ct.span.SpanContext().IsValid()
	})
}

// BeginStage implements [tools.CallTrace]: the stage runs under the
// call's span (dispatch under what the tools/execute stage passed on,
// itself under the call's span), and a stage other than execute gets a
// child span of the call's.
func (ct *callTrace) BeginStage(ctx context.Context, exec *tools.Execution, stage string) (context.Context, func(tools.StageEnd)) {
	ct.ensure(ctx, exec)
	ins := ct.ins
	out := ctx
	if ct.under && stage != tools.TraceDispatch {
		out = trace.ContextWithSpan(ctx, ct.span)
	}
	if stage == tools.TraceExecute {
		return out, nil
	}
	timed := stage == tools.TraceApproval && ins.wait.Enabled(ctx)
	var s trace.Span
	if ct.span != nil && ct.span.IsRecording() {
		_, s = ins.tracer.Start(trace.ContextWithSpan(ctx, ct.span), stage,
			trace.WithSpanKind(trace.SpanKindInternal),
			trace.WithTimestamp(ins.now()))
		ct.mu.Lock()
		ct.open = append(ct.open, s)
		ct.mu.Unlock()
	}
	if s == nil && !timed {
		return out, nil
	}
	began := ins.now()
	return out, func(e tools.StageEnd) {
		end := ins.now()
		if timed {
			outcome := e.Outcome
			if e.Error != nil {
				outcome = ins.codes.bound(clean(string(e.Error.Code), maxCodeLen))
			}
			ins.wait.Record(ctx, end.Sub(began).Seconds(), metric.WithAttributes(
				semconv.GenAIOperationNameExecuteTool,
				semconv.GenAIToolName(metricName(exec)),
				attribute.String(AttrApprovalOutcome, outcome)))
		}
		if s == nil {
			return
		}
		ct.decided(exec, stage, e)
		if e.Outcome != "" {
			s.SetAttributes(attribute.String(AttrStageOutcome, e.Outcome))
		}
		if stage == tools.TraceGuards {
			s.SetAttributes(attribute.Int(AttrGuards, e.Guards))
		}
		if e.Error != nil {
			code := clean(string(e.Error.Code), maxCodeLen)
			s.SetAttributes(semconv.ErrorTypeKey.String(code))
			s.SetStatus(codes.Error, code)
		}
		s.End(trace.WithTimestamp(end))
		ct.close(s)
	}
}

// decided notes the policy decision a stage that ended with e took, if
// any, as the call's latest.
func (ct *callTrace) decided(exec *tools.Execution, stage string, e tools.StageEnd) {
	var decision, by, rule string
	switch stage {
	case tools.TracePreExecute:
		if e.Outcome == "" {
			return // the listeners failed: no decision was taken
		}
		decision, by = e.Outcome, "policy"
		if ct.ins.explain != nil {
			if verdict, r, ok := ct.ins.explainOf(exec); ok && verdict == e.Outcome {
				by, rule = "default", clean(r, maxExtraValue)
				if r != "" {
					by = "rule"
				}
			}
		}
	case tools.TraceApproval:
		decision, by = e.Outcome, "approver"
		if e.Error != nil {
			decision = string(tools.ApprovalOutcomeOf(e.Error.Code))
		}
	case tools.TraceGuards:
		if e.Error == nil {
			return
		}
		decision, by = "deny", "guard"
	case tools.TracePostExecute:
		if e.Outcome != string(tools.Block) {
			return
		}
		decision, by = "block", "post-execute"
	default:
		return
	}
	ct.mu.Lock()
	ct.decision, ct.by, ct.rule = clean(decision, maxCodeLen), by, rule
	ct.mu.Unlock()
}

func (ins *Instrumentation) explainOf(exec *tools.Execution) (verdict, rule string, ok bool) {
	defer func() {
		if recover() != nil {
			verdict, rule, ok = "", "", false
		}
	}()
	verdict, rule = ins.explain(exec)
	return verdict, rule, true
}

// close forgets an ended stage span.
func (ct *callTrace) close(s trace.Span) {
	ct.mu.Lock()
	if i := slices.Index(ct.open, s); i >= 0 {
		ct.open = slices.Delete(ct.open, i, i+1)
	}
	ct.mu.Unlock()
}

// End implements [tools.CallTrace]: it ends the stage spans a panic or
// runtime.Goexit left open, completes and ends the call's span, and
// records the call's metrics.
func (ct *callTrace) End(ctx context.Context, exec *tools.Execution, res tools.Result) {
	ins := ct.ins
	ct.ensure(ctx, exec)
	end := ins.now()
	var code string
	if res.IsError && res.Error != nil {
		code = clean(string(res.Error.Code), maxCodeLen)
	}
	if s := ct.span; s != nil {
		ct.mu.Lock()
		open := ct.open
		ct.open = nil
		ct.mu.Unlock()
		for _, o := range open {
			o.SetStatus(codes.Error, "the stage did not end (the call's goroutine exited or the pipeline panicked)")
			o.End(trace.WithTimestamp(end))
		}
		if s.IsRecording() {
			ct.describe(s, exec, res, code)
		}
		s.End(trace.WithTimestamp(end))
	}
	countOn, durOn := ins.calls.Enabled(ctx), ins.duration.Enabled(ctx)
	if !countOn && !durOn {
		return
	}
	if ct.under {
		ctx = trace.ContextWithSpan(ctx, ct.span) // exemplars
	}
	attrs := make([]attribute.KeyValue, 0, 3)
	attrs = append(attrs, semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(metricName(exec)))
	if res.IsError {
		attrs = append(attrs, semconv.ErrorTypeKey.String(ins.codes.bound(code)))
	}
	opt := metric.WithAttributeSet(attribute.NewSet(attrs...))
	if countOn {
		ins.calls.Add(ctx, 1, opt)
	}
	if durOn {
		ins.duration.Record(ctx, end.Sub(ct.start).Seconds(), opt)
	}
}

// describe sets the call span's attributes and status from its final
// execution and result.
func (ct *callTrace) describe(s trace.Span, exec *tools.Execution, res tools.Result, code string) {
	ins := ct.ins
	if t := exec.Tool(); t != nil {
		s.SetAttributes(semconv.GenAIToolType(clean(ins.toolTypeOf(t), maxCodeLen)))
	}
	if a := exec.Agent(); a != "" {
		s.SetAttributes(attribute.String(AttrAgent, clean(string(a), tools.MaxNameLen)))
	}
	ct.mu.Lock()
	decision, by, rule := ct.decision, ct.by, ct.rule
	ct.mu.Unlock()
	if decision != "" {
		s.SetAttributes(attribute.String(AttrDecision, decision), attribute.String(AttrDecisionBy, by))
		if rule != "" {
			s.SetAttributes(attribute.String(AttrDecisionRule, rule))
		}
	}
	if ins.recordArgs && exec.ArgsString() != "" {
		// A copy: the span must not keep all of a large argument alive.
		s.SetAttributes(semconv.GenAIToolCallArgumentsKey.String(strings.Clone(truncate(exec.ArgsString(), ins.maxRecord))))
	}
	if ins.recordResults && !res.IsError {
		if v, ok := contentJSON(res.Content, ins.maxRecord); ok {
			s.SetAttributes(semconv.GenAIToolCallResultKey.String(v))
		}
	}
	if res.IsError {
		if code == "" {
			code = string(tools.CodeToolError)
		}
		s.SetAttributes(semconv.ErrorTypeKey.String(code))
		if res.Error != nil && res.Error.Name != "" {
			s.SetAttributes(attribute.String(AttrErrorName, clean(res.Error.Name, maxCodeLen)))
		}
		s.SetStatus(codes.Error, code)
	}
}

// metricName is the gen_ai.tool.name of a call's measurements: the
// registered tool's name, or "_OTHER" for a call that resolved to no tool
// (any string can be called; only registered names become series).
func metricName(exec *tools.Execution) string {
	if exec.Tool() != nil {
		return exec.Name()
	}
	return otherValue
}

func (ins *Instrumentation) toolTypeOf(t *tools.Tool) (typ string) {
	defer func() {
		if recover() != nil {
			typ = TypeFunction
		}
	}()
	return ins.toolType(t)
}

// contentJSON returns the JSON of content cut to max bytes (see
// truncate), without encoding more of it than that needs: each string of
// a block but its type is cut to max bytes before the block is encoded,
// and the blocks after the first max bytes of JSON are left out, which
// only ever drops what truncate would. false: a block cannot be encoded.
func contentJSON(content []tools.Content, max int) (string, bool) {
	buf := []byte{'['}
	for i, c := range content {
		if len(buf) > max {
			break
		}
		for _, f := range []*string{&c.Text, &c.Data, &c.MIMEType, &c.URI, &c.Name, &c.Title, &c.Description} {
			*f = textcut.Prefix(*f, max)
		}
		b, err := json.Marshal(c)
		if err != nil {
			return "", false
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, b...)
	}
	buf = append(buf, ']')
	return strings.Clone(truncate(string(buf), max)), true
}
