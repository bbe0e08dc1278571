package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestC3_ToolOrderNamingARestrictedAwayToolIsANormalAbsence: a
// restriction is per-scope runtime state, so a configured toolOrder naming
// a tool restricted away for one agent must not fail that agent's
// assemblies (only a name outside the pre-restriction universe, or one the
// mode no longer contributes, is dead configuration).
func TestC3_ToolOrderNamingARestrictedAwayToolIsANormalAbsence(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []tools.Mode{tools.Native, tools.Both} {
		t.Run(string(mode), func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: mode, prompt: systemprompt.Config{ToolOrder: []string{"read", "bash"}}})
			mustRegister(t, e.reg, e.root, echo("bash", "b"))
			mustRegister(t, e.reg, e.root, echo("read", "r"))
			a := e.scope(t, "a")
			must2(t)(e.reg.Restrict(a, tools.Restriction{Deny: []string{"read"}}))
			p, err := e.sp.Assemble(ctx, "a")
			if err != nil {
				t.Fatalf("assembly for the restricted agent: %v", err)
			}
			if slices.Contains(p.ToolNames(), "read") {
				t.Errorf("tools = %v, still contain the restricted-away tool", p.ToolNames())
			}
			// A typo still fails loud.
			e2 := newCodeEnv(t, codeOpts{mode: mode, prompt: systemprompt.Config{ToolOrder: []string{"nope"}}})
			mustRegister(t, e2.reg, e2.root, echo("bash", "b"))
			if _, err := e2.sp.Assemble(ctx, ""); !errors.Is(err, systemprompt.ErrToolOrder) {
				t.Errorf("typo: err = %v, want ErrToolOrder", err)
			}
		})
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
		} `json:"opt"`
	}
	e := newEnv(t)
	var got []string
	def := tools.MustDefine(tools.TypedTool[args]{
		Name: "read", Description: "Read.",
		Execute: func(_ context.Context, a args, _ *tools.Execution) (tools.Output, error) {
			got = append(got, a.Path+"|"+a.Opt.Mode)
			return tools.Output{Content: []tools.Content{tools.Text(a.Path)}}, nil
		},
	})
	mustRegister(t, e.reg, e.root, def)
	var seen []string
	must2(t)(e.reg.Guard(e.root, func(x *tools.Execution) string {
		seen = append(seen, x.Arg("path").String()+"|"+x.Arg("opt.mode").String())
		if x.Arg("path").String() != "/safe" {
			return "only /safe"
		}
		return ""
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
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) string { return "no more removals" }))
	res, err := kept(context.Background())
	if runs != 1 {
		t.Errorf("the body ran again after the call settled (res %+v, err %v)", res, err)
	}
	if err == nil && !res.IsError {
		t.Errorf("late next = %+v, want an isError result", res)
	}
}

// TestR7_ChangeNoticeNamesAreNotSharedWithTheLiftNotice: a tools/change
// listener editing the Names of a restrict notice must not change what a
// later unrestrict notice reports.
func TestR7_ChangeNoticeNamesAreNotSharedWithTheLiftNotice(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("bash", "b"))
	var lifted []string
	must2(t)(host.On(e.root, tools.Change, func(_ context.Context, n tools.ChangeNotice) error {
		switch n.Kind {
		case tools.ChangeRestrict:
			n.Names[0] = "tampered"
		case tools.ChangeUnrestrict:
			lifted = slices.Clone(n.Names)
		}
		return nil
	}))
	a := e.scope(t, "a")
	off := must2(t)(e.reg.Restrict(a, tools.Restriction{Deny: []string{"bash"}}))
	_ = off()
	if !slices.Equal(lifted, []string{"bash"}) {
		t.Errorf("unrestrict names = %v, want [bash]", lifted)
	}
}

// TestC1_SubCallCannotBorrowAnotherAgentsRun: under code, a call naming a
// running run_code as its parent goes through only for that run's agent.
func TestC1_SubCallCannotBorrowAnotherAgentsRun(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	var (
		mu     sync.Mutex
		outer  tools.Token
		direct tools.Result
	)
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "peek", Description: "x", Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			// While agent-a's run is in progress, a call for agent-b
			// borrows its token.
			mu.Lock()
			tok := outer
			mu.Unlock()
			direct = e.reg.Execute(ctx, tools.Call{ID: "b1", Name: "peek2", Arguments: json.RawMessage(`{}`), Agent: "agent-b", Parent: tok})
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	})
	mustRegister(t, e.reg, e.root, echo("peek2", "secret"))
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if x.Name() == tools.RunCodeName {
			mu.Lock()
			outer = x.Token()
			mu.Unlock()
		}
		return next(ctx)
	}))
	res := e.reg.Execute(context.Background(), runCode("c1", "return await tools.peek({})", "agent-a"))
	if res.IsError {
		t.Fatalf("run = %+v", res)
	}
	if direct.Error == nil || direct.Error.Code != tools.CodeUnknownTool {
		t.Fatalf("borrowed-token call = %+v, want UNKNOWN_TOOL", direct)
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
