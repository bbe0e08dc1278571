package tools_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// P1: guards run before the approval prompt. A person is never asked to
// approve a call that a guard refuses: pre-execute asks, a guard denies,
// and the approver is not consulted; when the guards pass, the approver is
// asked and its grant dispatches the call.
func TestP1_GuardsRunBeforeTheApprovalPrompt(t *testing.T) {
	e := newEnv(t)
	ran := 0
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		ran++
		return tools.TextOutput("ok"), nil
	}
	mustRegister(t, e.reg, e.root, d)
	var order []string
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		order = append(order, "pre-execute")
		return tools.Asked("dangerous"), nil
	}))
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		order = append(order, "approval")
		return tools.AllowedOnce, nil
	})))
	block := true
	must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error {
		order = append(order, "guard")
		if block {
			return errors.New("never, whoever approves")
		}
		return nil
	}))
	c := tools.Call{ID: "1", Name: "t", Agent: "a"}
	res := e.reg.Execute(context.Background(), c)
	if code(res) != tools.CodeDenied || !strings.Contains(text(res), "never, whoever approves") || ran != 0 {
		t.Errorf("guard denial after an ask: %+v ran=%d", res, ran)
	}
	if want := []string{"pre-execute", "guard"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v (the approver must not be asked)", order, want)
	}

	order, block = nil, false
	if res := e.reg.Execute(context.Background(), c); res.IsError || ran != 1 {
		t.Errorf("approved call: %+v ran=%d", res, ran)
	}
	if want := []string{"pre-execute", "guard", "approval"}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
}

// SafeApprove is the approval stage's own containment, for code that asks
// the approval service outside the pipeline: a panicking approver is an
// error, never a grant.
func TestSafeApproveContainsAPanic(t *testing.T) {
	o, err := tools.SafeApprove(context.Background(), tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		panic("approver exploded")
	}), tools.ApprovalRequest{})
	if err == nil || o == tools.AllowedOnce || !strings.Contains(err.Error(), "approver exploded") {
		t.Errorf("outcome %q, err %v", o, err)
	}
}
