package audit_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/audit"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A recorder without a store tells Live of each call, with its decisions
// and redacted arguments, and keeps nothing itself; without either it is
// refused.
func TestRecorder_WithoutAStoreFeedsLiveOnly(t *testing.T) {
	if _, err := audit.NewRecorder(audit.Config{}); err == nil {
		t.Fatal("a recorder without a store or Live was made")
	}
	h := host.New()
	t.Cleanup(func() { h.Close() })
	root := h.Root()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"echo", "nope"} {
		if _, err := reg.Register(root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{Name: name, Description: "Echo.",
			Execute: func(_ context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
				return tools.TextOutput(a.Text), nil
			}})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := host.OnWaterfall(root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		if e.Name() == "nope" {
			return tools.Denied("not this one"), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ends []audit.Call
	rec, err := audit.NewRecorder(audit.Config{MaxArgBytes: 64,
		Explain: func(e *tools.Execution) audit.Explanation {
			if e.Name() == "nope" {
				return audit.Explanation{Verdict: "deny", Rule: "nope"}
			}
			return audit.Explanation{Verdict: "allow"}
		},
		Live: func(e audit.Event) {
			if e.Kind == "end" {
				mu.Lock()
				ends = append(ends, e.Call)
				mu.Unlock()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Close() })
	if err := rec.Install(root, reg); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if res := reg.Execute(ctx, tools.Call{ID: "1", Name: "echo", Arguments: json.RawMessage(`{"text":"hi","api_token":"s3cret"}`)}); res.IsError {
		t.Fatalf("echo: %+v", res)
	}
	if res := reg.Execute(ctx, tools.Call{ID: "2", Name: "nope", Arguments: json.RawMessage(`{"text":"x"}`)}); !res.IsError {
		t.Fatalf("nope ran: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ends) != 2 {
		t.Fatalf("end events: %+v", ends)
	}
	e, n := ends[0], ends[1]
	if e.Tool != "echo" || e.Args != `{"api_token":"***","text":"hi"}` || len(e.Decisions) != 1 || e.Decisions[0].By != "default" || e.Decisions[0].Outcome != "allow" {
		t.Errorf("echo: %+v", e)
	}
	if n.Tool != "nope" || n.Code != "DENIED" || len(n.Decisions) != 1 || n.Decisions[0].By != "rule" || n.Decisions[0].Rule != "nope" {
		t.Errorf("nope: %+v", n)
	}
	if w, f := rec.Stats(); w != 0 || f != 0 {
		t.Errorf("stats %d %d", w, f)
	}
}
