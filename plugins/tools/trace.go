package tools

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// This file is the tracing seam: a [Tracer] registered with
// [Registry.Trace] follows every call through the pipeline, stage by stage
// (package otel turns that into OpenTelemetry spans and metrics). With no
// tracer registered the pipeline pays one atomic load per call and a nil
// check per stage.

// EffectTracer is the effect kind [Registry.Trace] records on the
// registering fiber.
const EffectTracer host.EffectKind = "tracer"

// The names of the stages a [CallTrace] is told about: the [Stages] names
// of the stages that run user code (policy, wrappers, the body).
const (
	TracePreExecute  = "pre-execute"
	TraceApproval    = "approval"
	TraceGuards      = "guards"
	TraceExecute     = "execute"
	TraceDispatch    = "dispatch"
	TracePostExecute = "post-execute"
)

// Tracer follows the calls of a registry (see [Registry.Trace]). Its
// methods are called on the goroutines running the calls, concurrently for
// different calls; they must not block, and should be cheap: they run
// inside every call. A panic is contained (logged; the call goes on
// untraced).
type Tracer interface {
	// StartCall is called once per call, when it enters the pipeline
	// (before stage 1, on the goroutine running the call), with the call
	// as given. It returns the call's trace, or nil to leave the call
	// untraced. It has no context: the call's first BeginStage (always
	// pre-execute for a call that passes its input checks) or its End
	// brings the context it runs under, with the caller's span, if any.
	StartCall(call Call) CallTrace
}

// CallTrace follows one call. For a call that passes its input checks
// (stages 1–2) the pipeline calls BeginStage for pre-execute, guards,
// approval (only on an ask the guards let through), execute (the tools/execute stage: wrappers
// and dispatch), dispatch (each run of the tool body) and post-execute,
// each stage that runs; stages skipped by a denial or failure are not
// reported. End is called once for every call, rejected ones included.
type CallTrace interface {
	// BeginStage is called as stage (one of the Trace* names) begins, on
	// the goroutine that runs it, with the call's execution (complete by
	// then) and the context the stage would run under (the tool body's own
	// context for dispatch). It returns the
	// context to run the stage under instead, which must be ctx or a
	// context derived from it with values only (context.WithValue: the
	// same cancellation; one with another Done channel is ignored), and a
	// function the pipeline calls once when the stage ends, or nil.
	//
	// dispatch may begin several times for one call, concurrently and on
	// other goroutines (a tools/execute wrapper calling next more than
	// once, or elsewhere), always within execute. A stage interrupted by a
	// panic of the pipeline itself or by runtime.Goexit is not ended: End
	// follows anyway.
	BeginStage(ctx context.Context, exec *Execution, stage string) (context.Context, func(StageEnd))
	// End is called once, with the call's execution and final result,
	// just before tools/result is emitted, on the goroutine running the
	// call, under the context tools/result is emitted with. res is the
	// trace's own copy. A runtime.Goexit in End ends that goroutine (and
	// the End of the tracers registered after this one is not called); the
	// call's tools/result is still emitted, with res.
	End(ctx context.Context, exec *Execution, res Result)
}

// StageEnd says how a traced stage ended.
type StageEnd struct {
	// Outcome is the stage's decision: the pre-execute decision kind
	// (allow, deny, ask), the approval outcome ("allowed-once" when it let
	// the call go on; on a denial Error says which), the post-execute
	// decision kind (accept, block); "" for the other stages and for a
	// stage that failed.
	Outcome string
	// Error is the error info of the result the stage produced when it
	// stopped the call or failed it (a listener failure, a denial, a
	// rejected approval, a guard's denial, the body's or the tools/execute
	// stage's isError result); nil when it let the call go on.
	Error *ErrorInfo
	// Guards is the number of guards that ran (the guards stage only).
	Guards int
}

// tracers is a registry's registered tracers, read once per call.
type tracers struct {
	list atomic.Pointer[[]*tracerEntry]
	mu   sync.Mutex // serializes writers
}

type tracerEntry struct{ t Tracer }

// Trace registers t to follow every call the registry runs, whatever its
// agent, from the next call on, until the returned disposer is called or
// c's fiber is disposed (the registration is recorded on it as an
// [EffectTracer] effect). Several tracers may be registered; each gets
// its own CallTrace per call, in registration order.
func (r *Registry) Trace(c *host.Context, t Tracer) (host.Disposer, error) {
	if t == nil {
		return nil, fmt.Errorf("tools: registering a nil tracer")
	}
	entry := &tracerEntry{t: t}
	ts := &r.tracers
	gone := false
	d, err := c.Track(EffectTracer, "tracer", func() error {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		gone = true
		if p := ts.list.Load(); p != nil {
			if i := slices.Index(*p, entry); i >= 0 {
				next := slices.Delete(slices.Clone(*p), i, i+1)
				if len(next) == 0 {
					ts.list.Store(nil)
				} else {
					ts.list.Store(&next)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if gone {
		return nil, fmt.Errorf("tools: registering a tracer: %w", host.ErrFiberClosed)
	}
	var next []*tracerEntry
	if p := ts.list.Load(); p != nil {
		next = slices.Clone(*p)
	}
	next = append(next, entry)
	ts.list.Store(&next)
	return d, nil
}

// startTrace is the start of stage 1: it gives exec the call's trace
// when a tracer is registered.
func (r *Registry) startTrace(exec *Execution, call Call) {
	p := r.tracers.list.Load()
	if p == nil {
		return
	}
	r.startTraceSlow(exec, call, *p)
}

func (r *Registry) startTraceSlow(exec *Execution, call Call, list []*tracerEntry) {
	var traces []CallTrace
	for _, e := range list {
		if ct := r.safeStartCall(e.t, call); ct != nil {
			traces = append(traces, ct)
		}
	}
	switch len(traces) {
	case 0:
	case 1:
		exec.trace = &callTraceBox{r: r, exec: exec, ct: traces[0]}
	default:
		exec.trace = &callTraceBox{r: r, exec: exec, ct: multiTrace(traces)}
	}
}

func (r *Registry) safeStartCall(t Tracer, call Call) (ct CallTrace) {
	defer func() {
		if v := recover(); v != nil {
			r.tracePanic("StartCall", call.Name, v)
			ct = nil
		}
	}()
	return t.StartCall(call)
}

func (r *Registry) tracePanic(method, tool string, v any) {
	if r.c != nil {
		r.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Str("tool", tool).Msg("a tracer's " + method + " panicked")
	}
}

// callTraceBox is an execution's trace: the tracer's CallTrace, with the
// registry to log a tracer's panic through.
type callTraceBox struct {
	r    *Registry
	exec *Execution
	ct   CallTrace
}

// stageTrace is one traced stage in progress; the zero value (an untraced
// call) does nothing.
type stageTrace struct {
	box  *callTraceBox
	name string
	end  func(StageEnd)
}

// beginStage begins stage name of exec's trace, returning the context to
// run it under.
// Untraced, it is inlined to a nil check.
func (exec *Execution) beginStage(ctx context.Context, name string) (context.Context, stageTrace) {
	if exec.trace == nil {
		return ctx, stageTrace{}
	}
	return exec.trace.begin(ctx, name)
}

func (b *callTraceBox) begin(ctx context.Context, name string) (out context.Context, st stageTrace) {
	exec := b.exec
	defer func() {
		if v := recover(); v != nil {
			b.r.tracePanic("BeginStage", exec.name, v)
			out, st = ctx, stageTrace{}
		}
	}()
	c, end := b.ct.BeginStage(ctx, exec, name)
	if c == nil || c.Done() != ctx.Done() {
		c = ctx
	}
	return c, stageTrace{box: b, name: name, end: end}
}

// done ends the stage with e. It, fail and result are inlined to a nil
// check for an untraced stage.
func (s stageTrace) done(e StageEnd) {
	if s.end != nil {
		s.callEnd(e)
	}
}

// callEnd calls the stage's end with e, containing a panic.
func (s stageTrace) callEnd(e StageEnd) {
	defer func() {
		if v := recover(); v != nil {
			s.box.r.tracePanic("stage end ("+s.name+")", "", v)
		}
	}()
	s.end(e)
}

// fail ends the stage with res's error info and returns res.
func (s stageTrace) fail(res Result) Result {
	if s.end != nil {
		s.failWith(&res)
	}
	return res
}

// failWith ends the stage with *res's error info.
//
//go:noinline
func (s stageTrace) failWith(res *Result) {
	s.callEnd(StageEnd{Error: res.Error.clone()})
}

// result ends the stage with res: its error info when it is an isError.
func (s stageTrace) result(res Result) Result {
	if s.end != nil {
		s.endWith(&res)
	}
	return res
}

// endWith ends the stage with *res: its error info when it is an isError.
func (s stageTrace) endWith(res *Result) {
	if res.IsError {
		s.failWith(res)
		return
	}
	s.callEnd(StageEnd{})
}

// endTrace ends exec's trace with its final result.
func (exec *Execution) endTrace(ctx context.Context, res *Result) {
	if exec.trace == nil {
		return
	}
	b := exec.trace
	defer func() {
		if v := recover(); v != nil {
			b.r.tracePanic("End", exec.name, v)
		}
	}()
	b.ct.End(ctx, exec, res.Clone())
}

func (e *ErrorInfo) clone() *ErrorInfo {
	if e == nil {
		return nil
	}
	c := *e
	return &c
}

// multiTrace fans one call's stages out to several tracers' traces.
type multiTrace []CallTrace

func (m multiTrace) BeginStage(ctx context.Context, exec *Execution, stage string) (context.Context, func(StageEnd)) {
	ends := make([]func(StageEnd), 0, len(m))
	for _, ct := range m {
		c, end := ct.BeginStage(ctx, exec, stage)
		if c != nil && c.Done() == ctx.Done() {
			ctx = c
		}
		if end != nil {
			ends = append(ends, end)
		}
	}
	return ctx, func(e StageEnd) {
		for i := len(ends) - 1; i >= 0; i-- {
			ends[i](e)
		}
	}
}

func (m multiTrace) End(ctx context.Context, exec *Execution, res Result) {
	for _, ct := range m {
		ct.End(ctx, exec, res.Clone())
	}
}
