package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

type ctxKey struct{}

func TestP1_PhaseOrder(t *testing.T) {
	e := newEnv(t)
	var order []string
	rec := func(s string) { order = append(order, s) }
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		rec("body")
		return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { rec("guard"); return nil }))
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		rec("pre")
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		rec("execute>")
		r, err := next(ctx)
		rec("<execute")
		return r, err
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		rec("post")
		return next(ctx)
	}))
	must2(t)(host.On(e.root, tools.ResultEvent, func(context.Context, tools.ResultNotice) error { rec("result"); return nil }))
	e.reg.Execute(context.Background(), call("t", `{}`))
	want := []string{"pre", "guard", "execute>", "body", "<execute", "post", "result"}
	if !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	var names []string
	for _, s := range tools.Stages {
		names = append(names, s.Name)
	}
	if !slices.Equal(names, []string{"snapshot", "validate-args", "pre-execute", "guards", "approval", "execute", "dispatch", "post-execute", "finalize", "result"}) {
		t.Errorf("Stages = %v", names)
	}
}

func TestP2_OneTokenOneSnapshotPerCall(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	seen := map[string][]any{}
	note := func(phase string, x *tools.Execution) {
		mu.Lock()
		seen[phase] = []any{x.Token(), x.ArgsString(), x.Parent()}
		mu.Unlock()
	}
	d := echo("t", "ok")
	d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		note("body", x)
		return tools.Output{}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	must2(t)(e.reg.Guard(e.root, func(x *tools.Execution) error { note("guard", x); return nil }))
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		note("pre", x)
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, p tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		note("post", p.Execution())
		return next(ctx)
	}))
	must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		note("result", n.Execution())
		return nil
	}))
	parent := e.reg.Execute(context.Background(), call("t", `{}`))
	_ = parent
	outer := seen["body"][0].(tools.Token)
	c := tools.Call{ID: "2", Name: "t", Arguments: json.RawMessage(` { "b" : 1.50, "a" : [ 1e2 ] } `), Parent: outer}
	e.reg.Execute(context.Background(), c)
	tok := seen["body"][0].(tools.Token)
	if tok.IsZero() || tok == outer {
		t.Errorf("token %v (outer %v)", tok, outer)
	}
	for phase, v := range seen {
		if v[0] != tok || v[1] != `{"b":1.5,"a":[100]}` || v[2] != outer {
			t.Errorf("%s saw %v", phase, v)
		}
	}
	if len(seen) != 5 {
		t.Errorf("phases %v", seen)
	}
}

// TestP2_TheSnapshotIsTheCallsOwn: arguments already canonical, short
// (kept inside the execution) or long, are copied: the caller writing
// its buffer, during the call or after it, changes nothing a stage or a
// kept execution sees.
func TestP2_TheSnapshotIsTheCallsOwn(t *testing.T) {
	for _, args := range []string{`{"x":1}`, `{"k":"` + strings.Repeat("a", 24) + `"}`, `{"k":"` + strings.Repeat("a", 25) + `"}`, `{"k":"` + strings.Repeat("a", 200) + `"}`} {
		e := newEnv(t)
		buf := []byte(args)
		var body string
		var kept *tools.Execution
		d := echo("t", "ok")
		d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			body = x.ArgsString()
			kept = x
			return tools.Output{}, nil
		}
		mustRegister(t, e.reg, e.root, d)
		off := must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			for i := range buf {
				buf[i] = ' '
			}
			return next(ctx)
		}))
		e.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "t", Arguments: buf})
		off()
		if body != args {
			t.Errorf("%d bytes: the body saw %q", len(args), body)
		}
		copy(buf, `{"k":"z"}`)
		var got, want map[string]any
		if err := kept.Decode(&got); err != nil || json.Unmarshal([]byte(args), &want) != nil || !reflect.DeepEqual(got, want) || kept.ArgsString() != args {
			t.Errorf("%d bytes: kept execution has %q, decodes to %v (%v)", len(args), kept.ArgsString(), got, err)
		}
	}
}

func TestP3_NonLosslessArgsFailBeforePolicy(t *testing.T) {
	e := newEnv(t)
	ran, policy := 0, 0
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) { ran++; return tools.Output{}, nil }
	mustRegister(t, e.reg, e.root, d)
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		policy++
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		policy++
		return next(ctx)
	}))
	var rc recorder
	rc.listen(t, e.root)
	bad := map[string]string{
		"duplicate keys":   `{"a":1,"a":2}`,
		"escaped dup keys": `{"a":1,"\u0061":2}`,
		"lone surrogate":   `{"a":"\udc00"}`,
		"invalid utf8":     "{\"a\":\"\xff\"}",
		"big integer":      `{"a":9007199254740993}`,
		"overflow":         `{"a":1e400}`,
		"not an object":    `[1]`,
		"string":           `"x"`,
		"syntax":           `{"a":}`,
		"trailing":         `{} {}`,
	}
	for name, args := range bad {
		res := e.reg.Execute(context.Background(), call("t", args))
		if code(res) != tools.CodeInvalidArgs || !res.IsError {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if ran != 0 || policy != 0 {
		t.Errorf("ran=%d policy=%d", ran, policy)
	}
	if rc.count() != len(bad) {
		t.Errorf("tools/result count %d, want %d", rc.count(), len(bad))
	}
	for _, n := range rc.notices {
		if n.Execution().Args() != nil {
			t.Errorf("rejected args exposed: %s", n.Execution().Args())
		}
	}
	// Empty and null mean {}.
	for _, args := range []string{``, `null`, ` `} {
		if res := e.reg.Execute(context.Background(), call("t", args)); res.IsError {
			t.Errorf("%q: %+v", args, res)
		}
	}
}

func TestP4_DenyAskAndApproval(t *testing.T) {
	e := newEnv(t)
	ran := 0
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		ran++
		return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
	}
	d.PresentCall = func(args json.RawMessage) tools.CallView { return tools.GenericCall{Title: "call t"} }
	mustRegister(t, e.reg, e.root, d)
	var decision tools.PreDecision
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		return decision, nil
	}))
	var postSaw []tools.ErrorCode
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, p tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		postSaw = append(postSaw, code(p.Result()))
		return next(ctx)
	}))
	exec := func(agent host.ScopeKey) tools.Result {
		c := call("t", `{}`)
		c.Agent = agent
		return e.reg.Execute(context.Background(), c)
	}

	decision = tools.Denied("not today")
	if res := exec("a"); code(res) != tools.CodeDenied || !strings.Contains(text(res), "not today") || ran != 0 {
		t.Errorf("deny: %+v", res)
	}
	if !slices.Equal(postSaw, []tools.ErrorCode{tools.CodeDenied}) {
		t.Errorf("post-execute saw %v", postSaw)
	}
	decision = tools.Asked("dangerous")
	if res := exec("a"); code(res) != tools.CodeApprovalUnavailable || !strings.Contains(text(res), "no approval service") {
		t.Errorf("ask without service: %+v", res)
	}
	var outcome tools.ApprovalOutcome
	var aerr error
	var req tools.ApprovalRequest
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		req = r
		if outcome == "panic" {
			panic("approver exploded")
		}
		return outcome, aerr
	})))
	if res := exec(""); code(res) != tools.CodeApprovalUnavailable || !strings.Contains(text(res), "no agent") {
		t.Errorf("ask without agent: %+v", res)
	}
	for _, tc := range []struct {
		outcome tools.ApprovalOutcome
		err     error
		code    tools.ErrorCode
	}{
		{tools.Rejected, nil, tools.CodeApprovalRejected},
		{tools.Cancelled, nil, tools.CodeApprovalCancelled},
		{tools.Unavailable, nil, tools.CodeApprovalUnavailable},
		{"maybe", nil, tools.CodeApprovalFailed},
		{tools.AllowedOnce, errors.New("ui crashed"), tools.CodeApprovalFailed},
		{"panic", nil, tools.CodeApprovalFailed},
	} {
		outcome, aerr = tc.outcome, tc.err
		if res := exec("a"); code(res) != tc.code || ran != 0 {
			t.Errorf("%s/%v: %+v ran=%d", tc.outcome, tc.err, res, ran)
		}
	}
	outcome, aerr = tools.AllowedOnce, nil
	if res := exec("a"); res.IsError || ran != 1 {
		t.Errorf("allowed-once: %+v", res)
	}
	if req.Reason != "dangerous" || req.Agent != "a" || req.Tool != "t" || req.Call == nil || req.Execution == nil {
		t.Errorf("request %+v", req)
	}
}

func TestP5_MalformedDecisionsFailClosed(t *testing.T) {
	e := newEnv(t)
	ran := 0
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) { ran++; return tools.Output{}, nil }
	mustRegister(t, e.reg, e.root, d)
	var rc recorder
	rc.listen(t, e.root)
	var pre tools.PreDecision
	var post *tools.PostDecision
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		return pre, nil
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		if post != nil {
			return *post, nil
		}
		return next(ctx)
	}))
	n := 0
	for _, bad := range []tools.PreDecision{{}, {Kind: "permit"}, {Kind: tools.Deny}, {Kind: tools.Allow, Reason: "extra"}} {
		pre = bad
		n++
		if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != tools.CodeInvalidDecision || ran != 0 {
			t.Errorf("pre %+v: %+v", bad, res)
		}
	}
	pre = tools.Allowed()
	for _, bad := range []tools.PostDecision{{}, {Kind: "maybe"}, {Kind: tools.Block}, {Kind: tools.Accept, Feedback: "x"}, {Kind: tools.Block, Feedback: "f", Content: []tools.Content{}}, {Kind: tools.Accept, Content: []tools.Content{{Type: "video"}}}} {
		post = &bad
		n++
		if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != tools.CodeInvalidDecision {
			t.Errorf("post %+v: %+v", bad, res)
		}
	}
	if rc.count() != n {
		t.Errorf("%d results for %d calls", rc.count(), n)
	}
}

func TestP6_ExecuteWrapper(t *testing.T) {
	e := newEnv(t)
	var bodyCtx context.Context
	release, started := make(chan struct{}), make(chan struct{})
	d := echo("t", "ok")
	d.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		bodyCtx = ctx
		switch x.Arg("mode").String() {
		case "panic":
			panic("tool exploded")
		case "wait":
			close(started)
			<-ctx.Done()
			<-release
		}
		return tools.Output{Content: []tools.Content{tools.Text("body")}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	var nextSaw tools.Result
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		if x.Arg("mode").String() == "short" {
			return tools.Result{Content: []tools.Content{tools.Text("short-circuit")}}, nil
		}
		// Replace the cancellation entirely (detached from the caller).
		r, err := next(context.WithValue(context.WithoutCancel(ctx), ctxKey{}, "wrapper"))
		nextSaw = r
		return r, err
	}))
	if res := e.reg.Execute(context.Background(), call("t", `{"mode":"short"}`)); text(res) != "short-circuit" || bodyCtx != nil {
		t.Errorf("short-circuit: %+v", res)
	}
	if res := e.reg.Execute(context.Background(), call("t", `{}`)); text(res) != "body" || bodyCtx.Value(ctxKey{}) != "wrapper" {
		t.Errorf("derived ctx: %+v", res)
	}
	res := e.reg.Execute(context.Background(), call("t", `{"mode":"panic"}`))
	if !nextSaw.IsError || code(nextSaw) != tools.CodeToolError || !strings.Contains(text(nextSaw), "tool exploded") {
		t.Errorf("next returned %+v for a panicking tool", nextSaw)
	}
	if code(res) != tools.CodeToolError {
		t.Errorf("panic: %+v", res)
	}
	// The caller's cancellation reaches the body although the wrapper
	// detached its context.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- e.reg.Execute(ctx, call("t", `{"mode":"wait"}`)) }()
	<-started
	cancel()
	close(release)
	if res := <-done; code(res) != tools.CodeAborted {
		t.Errorf("caller cancel: %+v", res)
	}
}

func TestP7_PostExecuteAndAdditionalContextOrder(t *testing.T) {
	e := newEnv(t)
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("raw")}, Meta: json.RawMessage(`{"k": 1}`), AdditionalContext: []string{"tool"}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		r, err := next(ctx)
		r.AdditionalContext = append(r.AdditionalContext, "wrapper")
		return r, err
	}))
	var mode string
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, p tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		switch mode {
		case "replace":
			return tools.PostDecision{Kind: tools.Accept, Content: []tools.Content{tools.Text("replaced")}, AdditionalContext: "post"}, nil
		case "block":
			return tools.PostDecision{Kind: tools.Block, Feedback: "use the other tool", AdditionalContext: "post"}, nil
		}
		return next(ctx)
	}))
	res := e.reg.Execute(context.Background(), call("t", `{}`))
	if text(res) != "raw" || string(res.Meta) != `{"k":1}` || !slices.Equal(res.AdditionalContext, []string{"tool", "wrapper"}) {
		t.Errorf("pass: %+v", res)
	}
	mode = "replace"
	res = e.reg.Execute(context.Background(), call("t", `{}`))
	if text(res) != "replaced" || res.IsError || !slices.Equal(res.AdditionalContext, []string{"tool", "wrapper", "post"}) {
		t.Errorf("replace: %+v", res)
	}
	mode = "block"
	res = e.reg.Execute(context.Background(), call("t", `{}`))
	if text(res) != "use the other tool" || code(res) != tools.CodeBlocked || res.Meta != nil || !slices.Equal(res.AdditionalContext, []string{"tool", "wrapper", "post"}) {
		t.Errorf("block: %+v", res)
	}
}

// TestP7_AbortedReplacementKeepsAdditionalContext: when the caller
// cancels while a tools/execute wrapper holds a successful result (the
// body's, or its own short-circuit), the call ends ABORTED (a body ran) or
// ABORTED_BEFORE_DISPATCH (none did), and keeps the additional context
// gathered so far, as every other failure does; post-execute appends its
// own after it.
func TestP7_AbortedReplacementKeepsAdditionalContext(t *testing.T) {
	for _, tc := range []struct {
		shortCircuit bool
		want         tools.ErrorCode
		context      []string
	}{{false, tools.CodeAborted, []string{"tool", "wrapper", "post"}}, {true, tools.CodeAbortedBeforeDispatch, []string{"wrapper", "post"}}} {
		t.Run(string(tc.want), func(t *testing.T) {
			e := newEnv(t)
			d := echo("t", "ok")
			d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
				return tools.Output{Content: []tools.Content{tools.Text("raw")}, AdditionalContext: []string{"tool"}}, nil
			}
			mustRegister(t, e.reg, e.root, d)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				r := tools.Result{Content: []tools.Content{tools.Text("cached")}}
				if !tc.shortCircuit {
					var err error
					if r, err = next(ctx); err != nil || r.IsError {
						t.Errorf("next = %+v, %v", r, err)
					}
				}
				r.AdditionalContext = append(r.AdditionalContext, "wrapper")
				cancel() // the caller gives up while the wrapper holds the result
				return r, nil
			}))
			must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
				return tools.PostDecision{Kind: tools.Accept, AdditionalContext: "post"}, nil
			}))
			res := e.reg.Execute(ctx, call("t", `{}`))
			if code(res) != tc.want || !slices.Equal(res.AdditionalContext, tc.context) {
				t.Errorf("result %s %q, context %q; want %s with %q", code(res), text(res), res.AdditionalContext, tc.want, tc.context)
			}
		})
	}
}

func TestP8_Cancellation(t *testing.T) {
	e := newEnv(t)
	ran := 0
	d := echo("t", "ok")
	var started, release chan struct{}
	d.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		ran++
		switch x.Arg("mode").String() {
		case "uncooperative":
			close(started)
			<-release // ignores ctx
			return tools.Output{Content: []tools.Content{tools.Text("finished anyway")}}, nil
		case "fail":
			close(started)
			<-ctx.Done()
			return tools.Output{}, tools.NewError("E_DISK", "DiskError", "disk on fire")
		}
		return tools.Output{}, nil
	}
	mustRegister(t, e.reg, e.root, d)

	t.Run("before dispatch", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		var rc recorder
		rc.listen(t, e.root)
		res := e.reg.Execute(ctx, call("t", `{}`))
		if code(res) != tools.CodeAbortedBeforeDispatch || ran != 0 || rc.count() != 1 {
			t.Errorf("%+v ran=%d results=%d", res, ran, rc.count())
		}
	})
	t.Run("cancelled in pre-execute", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		off := must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(c context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			cancel()
			return next(c)
		}))
		defer off()
		if res := e.reg.Execute(ctx, call("t", `{}`)); code(res) != tools.CodeAbortedBeforeDispatch || ran != 0 {
			t.Errorf("%+v", res)
		}
	})
	t.Run("denial kept", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		off := must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(c context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			cancel()
			return tools.Denied("no"), nil
		}))
		defer off()
		if res := e.reg.Execute(ctx, call("t", `{}`)); code(res) != tools.CodeDenied {
			t.Errorf("%+v", res)
		}
	})
	t.Run("during body: waited for, then ABORTED", func(t *testing.T) {
		started, release = make(chan struct{}), make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan tools.Result, 1)
		go func() { done <- e.reg.Execute(ctx, call("t", `{"mode":"uncooperative"}`)) }()
		<-started
		cancel()
		select {
		case r := <-done:
			t.Fatalf("returned before the body: %+v", r)
		default:
		}
		close(release)
		if res := <-done; code(res) != tools.CodeAborted {
			t.Errorf("%+v", res)
		}
	})
	// Without a tools/execute wrapper the stage calls the body itself;
	// the caller's cancellation is still read between the stage's start
	// and the body (here: in the tracer's BeginStage of execute), and once
	// more when the stage ends (here: in the dispatch stage's end).
	t.Run("cancelled as execute begins, no wrapper", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		off := must2(t)(e.reg.Trace(e.root, stageHook{stage: tools.TraceExecute, begin: cancel}))
		defer off()
		before := ran
		if res := e.reg.Execute(ctx, call("t", `{}`)); code(res) != tools.CodeAbortedBeforeDispatch || ran != before {
			t.Errorf("%+v ran=%d", res, ran-before)
		}
	})
	t.Run("cancelled as dispatch ends, no wrapper", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		off := must2(t)(e.reg.Trace(e.root, stageHook{stage: tools.TraceDispatch, end: cancel}))
		defer off()
		before := ran
		if res := e.reg.Execute(ctx, call("t", `{}`)); code(res) != tools.CodeAborted || ran != before+1 {
			t.Errorf("%+v ran=%d", res, ran-before)
		}
	})
	t.Run("tool error kept", func(t *testing.T) {
		started = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan tools.Result, 1)
		go func() { done <- e.reg.Execute(ctx, call("t", `{"mode":"fail"}`)) }()
		<-started
		cancel()
		if res := <-done; code(res) != "E_DISK" || res.Error.Name != "DiskError" {
			t.Errorf("%+v", res)
		}
	})
}

// stageHook is a tracer that calls begin as stage begins and end as it
// ends (either may be nil).
type stageHook struct {
	stage      string
	begin, end func()
}

func (h stageHook) StartCall(tools.Call) tools.CallTrace { return h }

func (h stageHook) BeginStage(ctx context.Context, _ *tools.Execution, stage string) (context.Context, func(tools.StageEnd)) {
	if stage != h.stage {
		return ctx, nil
	}
	if h.begin != nil {
		h.begin()
	}
	if h.end == nil {
		return ctx, nil
	}
	return ctx, func(tools.StageEnd) { h.end() }
}

func (stageHook) End(context.Context, *tools.Execution, tools.Result) {}

type quotaErr struct{}

func (quotaErr) Error() string { return "quota exceeded" }
func (quotaErr) Code() string  { return "QUOTA" }

func TestP9_FailuresBecomeCodedErrors(t *testing.T) {
	e := newEnv(t)
	d := echo("t", "ok")
	d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		switch x.Arg("mode").String() {
		case "plain":
			return tools.Output{}, errors.New("plain failure")
		case "typed":
			return tools.Output{}, &tools.Error{Info: tools.ErrorInfo{Name: "NotFound", Code: "ENOENT"}, Message: "no such file"}
		case "wrapped":
			return tools.Output{}, errors.Join(errors.New("context"), quotaErr{})
		}
		return tools.Output{}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	if res := e.reg.Execute(context.Background(), call("nope", `{}`)); code(res) != tools.CodeUnknownTool || !strings.Contains(text(res), `"nope"`) {
		t.Errorf("unknown: %+v", res)
	}
	for mode, want := range map[string]tools.ErrorInfo{
		"plain":   {Name: "ToolError", Code: tools.CodeToolError},
		"typed":   {Name: "NotFound", Code: "ENOENT"},
		"wrapped": {Name: "quotaErr", Code: "QUOTA"},
	} {
		res := e.reg.Execute(context.Background(), call("t", `{"mode":"`+mode+`"}`))
		if !res.IsError || res.Error == nil || *res.Error != want || text(res) == "" {
			t.Errorf("%s: %+v", mode, res)
		}
	}
	// Listener failures.
	var fail error
	var boom bool
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if boom {
			panic("listener exploded")
		}
		if fail != nil {
			return tools.PreDecision{}, fail
		}
		return next(ctx)
	}))
	fail = errors.New("policy store down")
	if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != tools.CodeListenerError || !strings.Contains(text(res), "policy store down") {
		t.Errorf("listener error: %+v", res)
	}
	fail = quotaErr{}
	if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != "QUOTA" {
		t.Errorf("typed listener error: %+v", res)
	}
	fail, boom = nil, true
	if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != tools.CodeListenerError || !strings.Contains(text(res), "listener exploded") {
		t.Errorf("listener panic: %+v", res)
	}
}

func TestP10_FinalResultIsValidatedAndFrozen(t *testing.T) {
	e := newEnv(t)
	held := []tools.Content{tools.Text("original")}
	d := echo("t", "ok")
	d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		switch x.Arg("mode").String() {
		case "badutf8":
			return tools.Output{Content: []tools.Content{tools.Text("\xff")}}, nil
		case "badmeta":
			return tools.Output{Content: held, Meta: json.RawMessage(`{"a":1,"a":2}`)}, nil
		case "badtype":
			return tools.Output{Content: []tools.Content{{Type: "video"}}}, nil
		}
		return tools.Output{Content: held, Meta: json.RawMessage(`{"m":[1]}`)}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	var seen []string
	for i := 0; i < 3; i++ {
		must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
			r := n.Result()
			seen = append(seen, text(r)+"|"+string(r.Meta))
			// Try to corrupt everything reachable.
			r.Content[0].Text = "corrupted"
			r.Meta[0] = 'X'
			r.AdditionalContext = append(r.AdditionalContext, "x")
			if i == 1 {
				panic("observer exploded")
			}
			return errors.New("observer failed")
		}))
	}
	res := e.reg.Execute(context.Background(), call("t", `{}`))
	held[0].Text = "tool mutated later"
	for _, s := range seen {
		if s != `original|{"m":[1]}` {
			t.Errorf("an observer saw %q", s)
		}
	}
	if text(res) != "original" || string(res.Meta) != `{"m":[1]}` || res.CallID != "c-t" {
		t.Errorf("caller got %+v", res)
	}
	for _, mode := range []string{"badutf8", "badmeta", "badtype"} {
		if res := e.reg.Execute(context.Background(), call("t", `{"mode":"`+mode+`"}`)); code(res) != tools.CodeInvalidResult {
			t.Errorf("%s: %+v", mode, res)
		}
	}
	// A wrapper putting error info on a success is invalid too.
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		return tools.Result{Error: &tools.ErrorInfo{Code: "X"}}, nil
	}))
	if res := e.reg.Execute(context.Background(), call("t", `{}`)); code(res) != tools.CodeInvalidResult {
		t.Errorf("error info on success: %+v", res)
	}
}

func TestP10_ExecutionArgsCannotBeCorrupted(t *testing.T) {
	e := newEnv(t)
	var bodySaw string
	d := echo("t", "ok")
	d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		bodySaw = string(x.Args())
		return tools.Output{}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		a := x.Args()
		copy(a, `{"p":"XXXXX"}`)
		return next(ctx)
	}))
	raw := json.RawMessage(`{"p":"value"}`)
	c := call("t", "")
	c.Arguments = raw
	e.reg.Execute(context.Background(), c)
	if bodySaw != `{"p":"value"}` {
		t.Errorf("body saw %s", bodySaw)
	}
}

// TestP3_TypedToolCaseVariantKeyCannotSmuggleAValuePastPolicy: encoding/json
// matches struct fields case-insensitively, so {"path":"/safe",
// "PATH":"/secret"} passes schema validation (extra keys are allowed) and a
// guard reading "path" sees "/safe", while a struct-typed body would decode
// "/secret". Such ambiguous arguments must be INVALID_ARGS before policy.
func TestP3_TypedToolCaseVariantKeyCannotSmuggleAValuePastPolicy(t *testing.T) {
	type args struct {
		Path string `json:"path" dsh:"required"`
		Opt  struct {
			Mode string `json:"mode"`
		} `json:"opt,omitzero"`
	}
	e := newEnv(t)
	var got []string
	def := tools.MustDefine(tools.TypedTool[args, tools.Output]{
		Name: "read", Description: "Read.",
		Execute: func(_ context.Context, a args, _ *tools.Execution) (tools.Output, error) {
			got = append(got, a.Path+"|"+a.Opt.Mode)
			return tools.Output{Content: []tools.Content{tools.Text(a.Path)}}, nil
		},
	})
	mustRegister(t, e.reg, e.root, def)
	var seen []string
	must2(t)(e.reg.Guard(e.root, func(x *tools.Execution) error {
		seen = append(seen, x.Arg("path").String()+"|"+x.Arg("opt", "mode").String())
		if x.Arg("path").String() != "/safe" {
			return errors.New("only /safe")
		}
		return nil
	}))
	for _, a := range []string{
		`{"path":"/safe","PATH":"/secret"}`,
		`{"path":"/safe","Path":"/secret"}`,
		"{\"path\":\"/safe\",\"opt\":{\"mode\":\"r\",\"MODE\":\"w\"}}",
		"{\"\u212aey\":1,\"path\":\"/safe\",\"pat\u0127\":\"x\"}", // no fold of a field: accepted
	} {
		e.reg.Execute(context.Background(), call("read", a))
		if len(got) > 0 && got[len(got)-1] != seen[len(seen)-1] {
			t.Errorf("%s: policy saw %q, the body decoded %q", a, seen[len(seen)-1], got[len(got)-1])
		}
	}
	// The folded variants are rejected as INVALID_ARGS.
	n := len(got)
	res := e.reg.Execute(context.Background(), call("read", `{"path":"/safe","PATH":"/secret"}`))
	if code(res) != tools.CodeInvalidArgs || len(got) != n {
		t.Errorf("case-variant key: code %q (body ran: %v), want INVALID_ARGS before the body", code(res), len(got) != n)
	}
	// The plain call still works.
	if res := e.reg.Execute(context.Background(), call("read", `{"path":"/safe"}`)); res.IsError {
		t.Errorf("plain call: %+v", res)
	}
}

// TestP6_RetainedExecuteNextCannotRunTheBodyAfterTheCallSettled: a
// tools/execute wrapper that keeps next and calls it after the call
// returned would run the tool body outside the pipeline (no post-execute,
// no tools/result, after policy that may since deny it).
func TestP6_RetainedExecuteNextCannotRunTheBodyAfterTheCallSettled(t *testing.T) {
	e := newEnv(t)
	runs := 0
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "rm", Description: "Remove.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			runs++
			return tools.Output{Content: []tools.Content{tools.Text("removed")}}, nil
		},
	})
	var kept tools.ExecuteNext
	off := must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		kept = next
		return next(ctx)
	}))
	if res := e.reg.Execute(context.Background(), call("rm", `{}`)); res.IsError || runs != 1 {
		t.Fatalf("first call: %+v, runs %d", res, runs)
	}
	_ = off()
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { return errors.New("no more removals") }))
	res, err := kept(context.Background())
	if runs != 1 {
		t.Errorf("the body ran again after the call settled (res %+v, err %v)", res, err)
	}
	if err == nil && !res.IsError {
		t.Errorf("late next = %+v, want an isError result", res)
	}
}

// TestP9_EveryIsErrorResultCarriesErrorInfo: a wrapper that short-circuits
// with an isError result of its own, naming no class, still yields a
// result whose error info is set (TOOL_ERROR).
func TestP9_EveryIsErrorResultCarriesErrorInfo(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "x"))
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		return tools.Result{Content: []tools.Content{tools.Text("refused by the wrapper")}, IsError: true}, nil
	}))
	res := e.reg.Execute(context.Background(), call("t", `{}`))
	if !res.IsError || res.Error == nil || res.Error.Code != tools.CodeToolError || res.Content[0].Text != "refused by the wrapper" {
		t.Fatalf("result = %+v", res)
	}
}
