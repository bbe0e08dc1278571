package tools_test

// Agent-scope boundaries: what one agent's restriction, change notice or
// run_code token means for another agent.

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
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
		if x.Name() == codemode.RunCodeName {
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
