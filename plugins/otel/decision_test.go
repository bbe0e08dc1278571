package toolotel_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/dsh-go/dsh/host"
	toolotel "github.com/dsh-go/dsh/plugins/otel"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A call's span carries the final policy decision and who took it, and
// the attributes Config.Attributes gives for the call, cleaned and
// bounded.
func TestO8_CallSpanCarriesDecisionWhoTookItAndCallerAttributes(t *testing.T) {
	verdict := map[string]string{"echo": "allow", "asked": "ask", "guarded": "allow", "listener": "allow"}
	rules := map[string]string{"echo": "echo", "asked": "", "listener": "other"}
	r := newRig(t, rigOpts{cfg: toolotel.Config{
		Attributes: func(c tools.Call) []attribute.KeyValue {
			if c.Agent == "panics" {
				panic("no")
			}
			return []attribute.KeyValue{
				attribute.String(toolotel.AttrIdentity, "alice\x00"+strings.Repeat("x", 1000)),
				attribute.String(toolotel.AttrSession, "s-"+string(c.Agent)),
			}
		},
		Explain: func(e *tools.Execution) (string, string) {
			if e.Name() == "guarded" {
				panic("explain failed")
			}
			return verdict[e.Name()], rules[e.Name()]
		},
	}})
	for _, n := range []string{"echo", "asked", "guarded", "listener"} {
		r.register(echo(n))
	}
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		switch e.Name() {
		case "asked":
			return tools.Asked("writes"), nil
		case "listener":
			return tools.Denied("by a listener"), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.reg.Guard(r.root, func(e *tools.Execution) error {
		if e.Name() == "guarded" {
			return errors.New("not today")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := tools.ApprovalService.Provide(r.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		return tools.Rejected, nil
	})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []tools.Call{{Name: "echo", Agent: "a1"}, {Name: "asked", Agent: "a2"}, {Name: "guarded", Agent: "a3"}, {Name: "listener", Agent: "panics"}} {
		r.reg.Execute(context.Background(), c)
	}
	spans := map[string]int{}
	for i, s := range r.callSpans() {
		spans[strings.TrimPrefix(s.Name(), "execute_tool ")] = i
	}
	cs := r.callSpans()
	get := func(n string) int {
		i, ok := spans[n]
		if !ok {
			t.Fatalf("no span for %s: %v", n, names(r.spans()))
		}
		return i
	}
	echoS := cs[get("echo")]
	wantAttr(t, echoS, toolotel.AttrDecision, "allow")
	wantAttr(t, echoS, toolotel.AttrDecisionBy, "rule")
	wantAttr(t, echoS, toolotel.AttrDecisionRule, "echo")
	wantAttr(t, echoS, toolotel.AttrSession, "s-a1")
	id := attrs(echoS)[toolotel.AttrIdentity].AsString()
	if !strings.HasPrefix(id, "alice") || strings.ContainsRune(id, 0) || len(id) > 256 {
		t.Errorf("identity attribute not cleaned and bounded: %q (%d bytes)", id[:min(len(id), 40)], len(id))
	}

	asked := cs[get("asked")]
	wantAttr(t, asked, toolotel.AttrDecision, "rejected")
	wantAttr(t, asked, toolotel.AttrDecisionBy, "approver")
	noAttr(t, asked, toolotel.AttrDecisionRule)

	guarded := cs[get("guarded")]
	wantAttr(t, guarded, toolotel.AttrDecision, "deny")
	wantAttr(t, guarded, toolotel.AttrDecisionBy, "guard")

	l := cs[get("listener")]
	wantAttr(t, l, toolotel.AttrDecision, "deny")
	wantAttr(t, l, toolotel.AttrDecisionBy, "policy") // the rules said allow: a listener denied
	noAttr(t, l, toolotel.AttrSession)                // Attributes panicked: none added
}
