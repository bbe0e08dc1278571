package toolotel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
	"go.uber.org/goleak"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	toolotel "github.com/dsh-go/dsh/plugins/otel"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// rig is a host with the tool registry and an Instrumentation recording
// into an in-memory span recorder and a manual metric reader, on a fake
// clock that tools may advance.
type rig struct {
	t      *testing.T
	h      *host.Host
	root   *host.Context
	reg    *tools.Registry
	sr     *tracetest.SpanRecorder
	tp     *sdktrace.TracerProvider
	reader *sdkmetric.ManualReader
	clock  *fakeClock
}

type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

type rigOpts struct {
	mode tools.Mode
	cfg  toolotel.Config
}

func newRig(t *testing.T, o rigOpts) *rig {
	t.Helper()
	if o.mode == "" {
		o.mode = tools.Native
	}
	r := &rig{t: t, h: host.New(), sr: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(),
		clock: &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	t.Cleanup(func() { _ = r.h.Close() })
	r.root = r.h.Root()
	load := func(p host.Plugin, cfg any) {
		t.Helper()
		f, err := r.root.Plugin(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
	}
	load(systemprompt.Plugin, nil)
	if o.mode != tools.Native {
		load(isolated.Plugin, coderuntime.Config{Timeout: time.Minute, CPUBudget: 30 * time.Second})
	}
	load(codemode.Plugin, tools.Config{Mode: o.mode})
	reg, err := tools.Service.Get(r.root)
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	r.tp = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(r.sr))
	t.Cleanup(func() { _ = r.tp.Shutdown(context.Background()) })
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r.reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o.cfg.TracerProvider, o.cfg.MeterProvider = r.tp, mp
	ins, err := toolotel.New(o.cfg)
	if err != nil {
		t.Fatal(err)
	}
	toolotel.SetClock(ins, r.clock.Now)
	if _, err := reg.Trace(r.root, ins); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) register(def tools.Definition) {
	r.t.Helper()
	if _, err := r.reg.Register(r.root, def); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) spans() []sdktrace.ReadOnlySpan { return r.sr.Ended() }

// callSpans returns the ended execute_tool spans.
func (r *rig) callSpans() []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range r.spans() {
		if strings.HasPrefix(s.Name(), "execute_tool ") {
			out = append(out, s)
		}
	}
	return out
}

// only returns the one execute_tool span.
func (r *rig) only() sdktrace.ReadOnlySpan {
	r.t.Helper()
	cs := r.callSpans()
	if len(cs) != 1 {
		r.t.Fatalf("want one execute_tool span, got %d: %v", len(cs), names(r.spans()))
	}
	return cs[0]
}

// children returns the names of parent's child spans, in start order.
func (r *rig) children(parent sdktrace.ReadOnlySpan) []string {
	var kids []sdktrace.ReadOnlySpan
	for _, s := range r.spans() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() {
			kids = append(kids, s)
		}
	}
	slices.SortStableFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	return names(kids)
}

func (r *rig) child(parent sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	r.t.Helper()
	for _, s := range r.spans() {
		if s.Parent().SpanID() == parent.SpanContext().SpanID() && s.Name() == name {
			return s
		}
	}
	r.t.Fatalf("no child span %q of %q: %v", name, parent.Name(), names(r.spans()))
	return nil
}

func names(ss []sdktrace.ReadOnlySpan) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.Name()
	}
	return out
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func wantAttr(t *testing.T, s sdktrace.ReadOnlySpan, key string, want any) {
	t.Helper()
	v, ok := attrs(s)[attribute.Key(key)]
	if !ok {
		t.Errorf("span %q: no attribute %s (have %v)", s.Name(), key, s.Attributes())
		return
	}
	if got := v.AsInterface(); got != want {
		t.Errorf("span %q: %s = %v (%T), want %v (%T)", s.Name(), key, got, got, want, want)
	}
}

func noAttr(t *testing.T, s sdktrace.ReadOnlySpan, key string) {
	t.Helper()
	if v, ok := attrs(s)[attribute.Key(key)]; ok {
		t.Errorf("span %q: unexpected attribute %s = %v", s.Name(), key, v.AsInterface())
	}
}

func wantStatus(t *testing.T, s sdktrace.ReadOnlySpan, code codes.Code, desc string) {
	t.Helper()
	if st := s.Status(); st.Code != code || st.Description != desc {
		t.Errorf("span %q: status %v %q, want %v %q", s.Name(), st.Code, st.Description, code, desc)
	}
}

func echo(name string) tools.Definition {
	return tools.Definition{
		Name: name, Description: "Echo.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(x.Arg("text").String()), nil
		},
	}
}

func body(name string, f tools.ExecuteFunc) tools.Definition {
	d := echo(name)
	d.Execute = f
	return d
}

func TestO1_SpanPerCallFollowsGenAIConventions(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	ctx, outer := r.tp.Tracer("test").Start(context.Background(), "turn")
	res := r.reg.Execute(ctx, tools.Call{ID: "call_1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi"}`), Agent: "agent-1"})
	outer.End()
	if res.IsError {
		t.Fatalf("result: %+v", res)
	}
	s := r.only()
	if s.Name() != "execute_tool echo" || s.SpanKind() != trace.SpanKindInternal {
		t.Errorf("span %q kind %v", s.Name(), s.SpanKind())
	}
	if s.Parent().SpanID() != outer.SpanContext().SpanID() {
		t.Errorf("the call's span is not a child of the caller's span")
	}
	wantAttr(t, s, "gen_ai.operation.name", "execute_tool")
	wantAttr(t, s, "gen_ai.tool.name", "echo")
	wantAttr(t, s, "gen_ai.tool.call.id", "call_1")
	wantAttr(t, s, "gen_ai.tool.type", "function")
	wantAttr(t, s, toolotel.AttrAgent, "agent-1")
	noAttr(t, s, "error.type")
	noAttr(t, s, "gen_ai.tool.call.arguments")
	noAttr(t, s, "gen_ai.tool.call.result")
	wantStatus(t, s, codes.Unset, "")
	if got, want := r.children(s), []string{"pre-execute", "guards", "dispatch", "post-execute"}; !slices.Equal(got, want) {
		t.Errorf("stage spans %v, want %v", got, want)
	}
	wantAttr(t, r.child(s, "pre-execute"), toolotel.AttrStageOutcome, "allow")
	wantAttr(t, r.child(s, "guards"), toolotel.AttrGuards, int64(0))
	wantAttr(t, r.child(s, "post-execute"), toolotel.AttrStageOutcome, "accept")
	for _, c := range []string{"pre-execute", "guards", "dispatch", "post-execute"} {
		wantStatus(t, r.child(s, c), codes.Unset, "")
	}
}

func TestO1_ErrorCodeIsTheStatus(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(body("boom", func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{}, tools.NewError("QUOTA_EXCEEDED", "QuotaError", "out of quota")
	}))
	res := r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "boom"})
	if !res.IsError || res.Error.Code != "QUOTA_EXCEEDED" {
		t.Fatalf("result %+v", res)
	}
	s := r.only()
	wantStatus(t, s, codes.Error, "QUOTA_EXCEEDED")
	wantAttr(t, s, "error.type", "QUOTA_EXCEEDED")
	d := r.child(s, "dispatch")
	wantStatus(t, d, codes.Error, "QUOTA_EXCEEDED")
	wantAttr(t, d, "error.type", "QUOTA_EXCEEDED")
}

func TestO1_DeniedCallHasNoBodySpan(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
		return tools.Denied("no"), nil
	}); err != nil {
		t.Fatal(err)
	}
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo"})
	s := r.only()
	wantStatus(t, s, codes.Error, "DENIED")
	if got, want := r.children(s), []string{"pre-execute", "post-execute"}; !slices.Equal(got, want) {
		t.Errorf("stage spans %v, want %v", got, want)
	}
	wantAttr(t, r.child(s, "pre-execute"), toolotel.AttrStageOutcome, "deny")
}

func TestO1_ListenerFailureFailsItsStage(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	if _, err := host.OnWaterfall(r.root, tools.PostExecute, func(context.Context, tools.PostInput, tools.PostNext) (tools.PostDecision, error) {
		return tools.PostDecision{}, errors.New("listener broke")
	}); err != nil {
		t.Fatal(err)
	}
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo"})
	s := r.only()
	wantStatus(t, s, codes.Error, "LISTENER_ERROR")
	wantStatus(t, r.child(s, "post-execute"), codes.Error, "LISTENER_ERROR")
	wantStatus(t, r.child(s, "dispatch"), codes.Unset, "")
}

func TestO1_GuardsSpanCountsAndDenies(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	for _, deny := range []bool{false, false, true, false} {
		if _, err := r.reg.Guard(r.root, func(*tools.Execution) error {
			if deny {
				return errors.New("not today")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo"})
	s := r.only()
	g := r.child(s, "guards")
	wantAttr(t, g, toolotel.AttrGuards, int64(3))
	wantStatus(t, g, codes.Error, "DENIED")
	if got, want := r.children(s), []string{"pre-execute", "guards", "post-execute"}; !slices.Equal(got, want) {
		t.Errorf("stage spans %v, want %v", got, want)
	}
}

func TestO2_ApprovalWaitIsASpanAndAMetric(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
		return tools.Asked("writes"), nil
	}); err != nil {
		t.Fatal(err)
	}
	var outcome tools.ApprovalOutcome = tools.AllowedOnce
	wait := 5 * time.Second
	if _, err := tools.ApprovalService.Provide(r.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		r.clock.Advance(wait)
		return outcome, nil
	})); err != nil {
		t.Fatal(err)
	}
	r.reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "echo", Agent: "a"})
	outcome, wait = tools.Rejected, 2*time.Second
	r.reg.Execute(context.Background(), tools.Call{ID: "c2", Name: "echo", Agent: "a"})

	cs := r.callSpans()
	if len(cs) != 2 {
		t.Fatalf("spans: %v", names(r.spans()))
	}
	ok, rejected := cs[0], cs[1]
	if got, want := r.children(ok), []string{"pre-execute", "guards", "approval", "dispatch", "post-execute"}; !slices.Equal(got, want) {
		t.Errorf("allowed call: stage spans %v, want %v", got, want)
	}
	a := r.child(ok, "approval")
	wantAttr(t, a, toolotel.AttrStageOutcome, "allowed-once")
	if d := a.EndTime().Sub(a.StartTime()); d != 5*time.Second {
		t.Errorf("approval span lasted %v, want 5s", d)
	}
	wantAttr(t, r.child(ok, "pre-execute"), toolotel.AttrStageOutcome, "ask")
	ra := r.child(rejected, "approval")
	wantStatus(t, ra, codes.Error, "APPROVAL_REJECTED")
	wantStatus(t, rejected, codes.Error, "APPROVAL_REJECTED")

	h := histogram(t, r.collect(), toolotel.MetricApprovalWait)
	got := map[string]float64{}
	for _, dp := range h.DataPoints {
		o, _ := dp.Attributes.Value(toolotel.AttrApprovalOutcome)
		tool, _ := dp.Attributes.Value("gen_ai.tool.name")
		if tool.AsString() != "echo" || dp.Count != 1 {
			t.Errorf("approval wait point %v: count %d", dp.Attributes.ToSlice(), dp.Count)
		}
		got[o.AsString()] = dp.Sum
	}
	if want := map[string]float64{"allowed-once": 5, "APPROVAL_REJECTED": 2}; !mapsEqual(got, want) {
		t.Errorf("approval wait sums %v, want %v", got, want)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func (r *rig) collect() metricdata.ResourceMetrics {
	r.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.reader.Collect(context.Background(), &rm); err != nil {
		r.t.Fatal(err)
	}
	return rm
}

func find(rm metricdata.ResourceMetrics, name string) (metricdata.Metrics, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == name {
				return m, true
			}
		}
	}
	return metricdata.Metrics{}, false
}

func histogram(t *testing.T, rm metricdata.ResourceMetrics, name string) metricdata.Histogram[float64] {
	t.Helper()
	m, ok := find(rm, name)
	if !ok {
		t.Fatalf("no metric %s", name)
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("metric %s is a %T", name, m.Data)
	}
	return h
}

// key is a data point's tool and error.type ("" when none).
func key(set attribute.Set) string {
	tool, _ := set.Value("gen_ai.tool.name")
	code, _ := set.Value("error.type")
	op, _ := set.Value("gen_ai.operation.name")
	if op.AsString() != "execute_tool" {
		return "missing gen_ai.operation.name"
	}
	return tool.AsString() + "/" + code.AsString()
}

func TestO2_CallCountAndDurationByToolAndCode(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(body("slow", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		d := time.Duration(x.Arg("ms").Int()) * time.Millisecond
		r.clock.Advance(d)
		if x.Arg("fail").Bool() {
			return tools.Output{}, errors.New("failed")
		}
		return tools.TextOutput("ok"), nil
	}))
	ctx := context.Background()
	r.reg.Execute(ctx, tools.Call{Name: "slow", Arguments: json.RawMessage(`{"ms":100}`)})
	r.reg.Execute(ctx, tools.Call{Name: "slow", Arguments: json.RawMessage(`{"ms":300}`)})
	r.reg.Execute(ctx, tools.Call{Name: "slow", Arguments: json.RawMessage(`{"ms":2000,"fail":true}`)})
	r.reg.Execute(ctx, tools.Call{Name: "nope"})
	r.reg.Execute(ctx, tools.Call{Name: "nope\x00 \xff other"})

	rm := r.collect()
	m, ok := find(rm, toolotel.MetricCalls)
	if !ok {
		t.Fatal("no call counter")
	}
	sum := m.Data.(metricdata.Sum[int64])
	counts := map[string]int64{}
	for _, dp := range sum.DataPoints {
		counts[key(dp.Attributes)] = dp.Value
	}
	if want := map[string]int64{"slow/": 2, "slow/TOOL_ERROR": 1, "_OTHER/UNKNOWN_TOOL": 2}; !mapsEqual(counts, want) {
		t.Errorf("call counts %v, want %v", counts, want)
	}
	h := histogram(t, rm, toolotel.MetricDuration)
	sums := map[string]float64{}
	for _, dp := range h.DataPoints {
		sums[key(dp.Attributes)] = dp.Sum
	}
	if want := map[string]float64{"slow/": 0.4, "slow/TOOL_ERROR": 2, "_OTHER/UNKNOWN_TOOL": 0}; !mapsEqual(sums, want) {
		t.Errorf("duration sums %v, want %v", sums, want)
	}
}

func TestO2_ErrorCodesInMetricsAreBounded(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(body("coder", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		return tools.Output{}, tools.NewError(tools.ErrorCode(fmt.Sprintf("CODE_%d", x.Arg("n").Int())), "CodeError", "x")
	}))
	for i := range 200 {
		r.reg.Execute(context.Background(), tools.Call{Name: "coder", Arguments: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
	}
	m, _ := find(r.collect(), toolotel.MetricCalls)
	sum := m.Data.(metricdata.Sum[int64])
	var other int64
	for _, dp := range sum.DataPoints {
		if k := key(dp.Attributes); k == "coder/_OTHER" {
			other = dp.Value
		}
	}
	if len(sum.DataPoints) != 65 || other != 200-64 {
		t.Errorf("%d series, %d calls as _OTHER; want 65 series (64 codes and _OTHER), %d as _OTHER", len(sum.DataPoints), other, 200-64)
	}
	// Spans keep every code.
	if s := r.callSpans()[199]; attrs(s)["error.type"].AsString() != "CODE_199" {
		t.Errorf("span error.type %v", attrs(s)["error.type"].AsString())
	}
}

func TestO1_RejectedInputStillGetsASpan(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(echo("echo"))
	r.reg.Execute(context.Background(), tools.Call{ID: "bad\x00id", Name: "echo"})
	r.reg.Execute(context.Background(), tools.Call{ID: "c2", Name: "echo", Arguments: json.RawMessage(`{"a":1,"a":2}`)})
	cs := r.callSpans()
	if len(cs) != 2 {
		t.Fatalf("spans %v", names(r.spans()))
	}
	wantStatus(t, cs[0], codes.Error, "INVALID_CALL")
	wantAttr(t, cs[0], "gen_ai.tool.call.id", "bad\uFFFDid") // the repaired id
	wantStatus(t, cs[1], codes.Error, "INVALID_ARGS")
	for _, s := range cs {
		if kids := r.children(s); len(kids) != 0 {
			t.Errorf("%s: stage spans %v for a call rejected at its input", s.Name(), kids)
		}
	}
}

func TestO1_UntrustedNamesAreCleanedAndBounded(t *testing.T) {
	r := newRig(t, rigOpts{})
	name := "evil\x1b[31m\xff" + strings.Repeat("é", 500)
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: name})
	s := r.only()
	n := attrs(s)["gen_ai.tool.name"].AsString()
	if len(n) > tools.MaxNameLen || strings.ContainsAny(n, "\x1b\x00") || !strings.HasPrefix(n, "evil[31m\uFFFDé") || !strings.HasSuffix(n, "…[truncated]") {
		t.Errorf("tool name attribute %q (%d bytes)", n, len(n))
	}
	if s.Name() != "execute_tool "+n {
		t.Errorf("span name %q", s.Name())
	}
	noAttr(t, s, "gen_ai.tool.type") // resolved to no tool
}

func TestO3_ArgumentsAndResultsOnlyWhenAskedAndBounded(t *testing.T) {
	r := newRig(t, rigOpts{cfg: toolotel.Config{RecordArguments: true, RecordResults: true, MaxRecordBytes: 40}})
	r.register(echo("echo"))
	r.reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "echo", Arguments: json.RawMessage(`{"text":"short"}`)})
	r.reg.Execute(context.Background(), tools.Call{ID: "c2", Name: "echo", Arguments: json.RawMessage(`{"text":"` + strings.Repeat("ü", 100) + `"}`)})
	cs := r.callSpans()
	wantAttr(t, cs[0], "gen_ai.tool.call.arguments", `{"text":"short"}`)
	wantAttr(t, cs[0], "gen_ai.tool.call.result", `[{"type":"text","text":"short"}]`)
	for _, k := range []string{"gen_ai.tool.call.arguments", "gen_ai.tool.call.result"} {
		v := attrs(cs[1])[attribute.Key(k)].AsString()
		if len(v) > 40 || !strings.HasSuffix(v, "…[truncated]") || !strings.Contains(v, "ü") {
			t.Errorf("%s = %q (%d bytes)", k, v, len(v))
		}
	}
	r.register(body("boom", func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.TextOutput("partial"), errors.New("failed")
	}))
	r.reg.Execute(context.Background(), tools.Call{ID: "c3", Name: "boom", Arguments: json.RawMessage(`{"text":"x"}`)})
	failed := r.callSpans()[2]
	wantAttr(t, failed, "gen_ai.tool.call.arguments", `{"text":"x"}`)
	noAttr(t, failed, "gen_ai.tool.call.result") // only a successful call's result
	if _, err := toolotel.New(toolotel.Config{MaxRecordBytes: -1}); err == nil || !strings.Contains(err.Error(), "MaxRecordBytes is -1") {
		t.Errorf("New with MaxRecordBytes -1: %v", err)
	}
}

func TestO4_BodyRunsUnderTheCallSpanAndRetriesAreSeparateDispatches(t *testing.T) {
	r := newRig(t, rigOpts{})
	var seen []trace.SpanContext
	r.register(body("flaky", func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		seen = append(seen, trace.SpanContextFromContext(ctx))
		return tools.Output{}, errors.New("try again")
	}))
	if _, err := host.OnWaterfall(r.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		if _, err := next(ctx); err != nil {
			return tools.Result{}, err
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "flaky"})
	s := r.only()
	if got, want := r.children(s), []string{"pre-execute", "guards", "dispatch", "dispatch", "post-execute"}; !slices.Equal(got, want) {
		t.Errorf("stage spans %v, want %v", got, want)
	}
	if len(seen) != 2 || seen[0].SpanID() != s.SpanContext().SpanID() || seen[1].SpanID() != s.SpanContext().SpanID() {
		t.Errorf("the body ran under %v, want the call's span %v", seen, s.SpanContext().SpanID())
	}
}

func TestO4_CodeModeSubCallsAreChildrenOfRunCode(t *testing.T) {
	r := newRig(t, rigOpts{mode: tools.Code})
	r.register(echo("echo"))
	args, _ := json.Marshal(map[string]string{
		"code":        `const a = await tools.echo({text: "one"}); const b = await tools.echo({text: "two"}); return a + b;`,
		"description": "two echoes",
	})
	res := r.reg.Execute(context.Background(), tools.Call{ID: "run", Name: codemode.RunCodeName, Arguments: args, Agent: "a"})
	if res.IsError {
		t.Fatalf("run_code: %+v", res)
	}
	var run sdktrace.ReadOnlySpan
	var subs []sdktrace.ReadOnlySpan
	for _, s := range r.callSpans() {
		if s.Name() == "execute_tool "+codemode.RunCodeName {
			run = s
		} else {
			subs = append(subs, s)
		}
	}
	if run == nil || len(subs) != 2 {
		t.Fatalf("spans %v", names(r.spans()))
	}
	for i, s := range subs {
		if s.Parent().SpanID() != run.SpanContext().SpanID() || s.SpanContext().TraceID() != run.SpanContext().TraceID() {
			t.Errorf("sub-call %d (%s) is not a child of run_code's span", i, s.Name())
		}
		wantAttr(t, s, "gen_ai.tool.call.id", fmt.Sprintf("run:code:%d", i+1))
	}
}

func TestO4_EachBatchCallHasItsOwnSpan(t *testing.T) {
	r := newRig(t, rigOpts{})
	d := echo("par")
	d.Concurrency = tools.Parallel
	r.register(d)
	ctx, outer := r.tp.Tracer("test").Start(context.Background(), "turn")
	calls := []tools.Call{{ID: "a", Name: "par"}, {ID: "b", Name: "par"}, {ID: "c", Name: "par"}, {ID: "d", Name: "nope"}}
	r.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})
	outer.End()
	cs := r.callSpans()
	if len(cs) != 4 {
		t.Fatalf("spans %v", names(r.spans()))
	}
	ids := map[trace.SpanID]bool{}
	got := map[string]bool{}
	for _, s := range cs {
		ids[s.SpanContext().SpanID()] = true
		got[attrs(s)["gen_ai.tool.call.id"].AsString()] = true
		if s.Parent().SpanID() != outer.SpanContext().SpanID() {
			t.Errorf("%s is not a child of the batch's span", s.Name())
		}
		if s.Name() == "execute_tool par" {
			if kids := r.children(s); !slices.Equal(kids, []string{"pre-execute", "guards", "dispatch", "post-execute"}) {
				t.Errorf("stage spans %v", kids)
			}
		}
	}
	if len(ids) != 4 || len(got) != 4 {
		t.Errorf("span ids %v, call ids %v", ids, got)
	}
}

func TestO4_GoexitInABodyEndsItsStageSpan(t *testing.T) {
	r := newRig(t, rigOpts{})
	r.register(body("quit", func(context.Context, *tools.Execution) (tools.Output, error) {
		runtime.Goexit()
		return tools.Output{}, nil
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "quit"})
	}()
	<-done
	s := r.only()
	wantStatus(t, s, codes.Error, "TOOL_ERROR")
	d := r.child(s, "dispatch")
	if d.Status().Code != codes.Error || !d.EndTime().Equal(s.EndTime()) {
		t.Errorf("dispatch span: status %v, ended %v (call ended %v)", d.Status(), d.EndTime(), s.EndTime())
	}
}

func TestO5_DisposingThePluginStopsTracing(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	for _, p := range []host.Plugin{systemprompt.Plugin, tools.Plugin} {
		if _, err := root.Plugin(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	reg, _ := tools.Service.Get(root)
	if _, err := reg.Register(root, echo("echo")); err != nil {
		t.Fatal(err)
	}
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	defer tp.Shutdown(context.Background())
	f, err := root.Plugin(toolotel.Plugin, toolotel.Config{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	kinds := func() []host.EffectKind {
		var out []host.EffectKind
		for _, e := range f.Effects() {
			out = append(out, e.Kind)
		}
		return out
	}
	if !slices.Contains(kinds(), tools.EffectTracer) {
		t.Fatalf("the plugin's effects %v lack its tracer", kinds())
	}
	reg.Execute(context.Background(), tools.Call{ID: "1", Name: "echo"})
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), tools.Call{ID: "2", Name: "echo"})
	var calls []string
	for _, s := range sr.Ended() {
		if strings.HasPrefix(s.Name(), "execute_tool") {
			calls = append(calls, attrs(s)["gen_ai.tool.call.id"].AsString())
		}
	}
	if !slices.Equal(calls, []string{"1"}) {
		t.Errorf("traced calls %v, want only the one before disposal", calls)
	}
	if len(f.Effects()) != 0 {
		t.Errorf("effects left after disposal: %v", f.Effects())
	}
}

func TestO5_BadConfigFailsTheLoad(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	for _, p := range []host.Plugin{systemprompt.Plugin, tools.Plugin} {
		if _, err := root.Plugin(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := root.Plugin(toolotel.Plugin, toolotel.Config{MaxRecordBytes: 1 << 30})
	if err == nil {
		err = f.Err()
	}
	if err == nil || !strings.Contains(err.Error(), "MaxRecordBytes") {
		t.Errorf("loading with MaxRecordBytes 1 GiB: %v", err)
	}
}

func TestO1_ToolTypeFunctionExtensionOrConfigured(t *testing.T) {
	typeOf := func(cfg toolotel.Config, name string) string {
		r := newRig(t, rigOpts{cfg: cfg})
		r.register(echo(name))
		r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: name})
		return attrs(r.only())["gen_ai.tool.type"].AsString()
	}
	if got := typeOf(toolotel.Config{}, "read_file"); got != toolotel.TypeFunction {
		t.Errorf("a Go tool: %q", got)
	}
	if got := typeOf(toolotel.Config{}, "mcp__fs__read"); got != toolotel.TypeExtension {
		t.Errorf("an MCP-mounted tool: %q", got)
	}
	store := toolotel.Config{ToolType: func(t *tools.Tool) string {
		if t.Name() == "search" {
			return toolotel.TypeDatastore
		}
		panic("no type")
	}}
	if got := typeOf(store, "search"); got != toolotel.TypeDatastore {
		t.Errorf("configured: %q", got)
	}
	if got := typeOf(store, "other"); got != toolotel.TypeFunction {
		t.Errorf("a panicking ToolType: %q", got)
	}
}

func TestO2_MetricsWithoutSpans(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	for _, p := range []host.Plugin{systemprompt.Plugin, tools.Plugin} {
		if _, err := root.Plugin(p, nil); err != nil {
			t.Fatal(err)
		}
	}
	reg, _ := tools.Service.Get(root)
	if _, err := reg.Register(root, echo("echo")); err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	if _, err := root.Plugin(toolotel.Plugin, toolotel.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: mp}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
		return tools.Asked("check"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.ApprovalService.Provide(root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		return tools.AllowedOnce, nil
	})); err != nil {
		t.Fatal(err)
	}
	reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo", Agent: "a"})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{toolotel.MetricCalls, toolotel.MetricDuration, toolotel.MetricApprovalWait} {
		if _, ok := find(rm, name); !ok {
			t.Errorf("no %s with spans off", name)
		}
	}
}

func TestO6_NoopProvidersFollowNoCall(t *testing.T) {
	ins, err := toolotel.New(toolotel.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	if err != nil {
		t.Fatal(err)
	}
	if ct := ins.StartCall(tools.Call{Name: "x"}); ct != nil {
		t.Errorf("StartCall with no-op providers = %T, want nil", ct)
	}
	ins, err = toolotel.New(toolotel.Config{MeterProvider: metricnoop.NewMeterProvider()}) // the global tracer provider
	if err != nil {
		t.Fatal(err)
	}
	if ct := ins.StartCall(tools.Call{Name: "x"}); ct == nil {
		t.Error("StartCall with the global tracer provider = nil")
	}
}
