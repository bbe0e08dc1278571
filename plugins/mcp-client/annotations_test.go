package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func annotatedServer() *memServer {
	ms := newMemServer(nil)
	f := false
	for _, t := range []*mcp.Tool{
		{Name: "look", Title: "Look around", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &f}},
		{Name: "wipe", Annotations: &mcp.ToolAnnotations{IdempotentHint: true}}, // destructive and open-world by default
		{Name: "plain"},
	} {
		t.Description = t.Name
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
		ms.srv.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	return ms
}

func TestM2_AnnotationsInformConcurrencyOnlyWhenTrusted(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		t.Run(map[bool]string{false: "untrusted", true: "trusted"}[trusted], func(t *testing.T) {
			e := newEnv(t)
			e.mount(mcpclient.Config{Name: "srv", Dial: annotatedServer().dial, Trusted: trusted})

			look, ok := e.reg.Get("mcp__srv__look", "")
			if !ok {
				t.Fatalf("tools: %v", e.names())
			}
			// The hints are always carried, marked trusted or not.
			a := look.Annotations()
			if a == nil || !a.ReadOnly || a.OpenWorld || a.Title != "Look around" || a.Trusted != trusted {
				t.Fatalf("look annotations = %+v", a)
			}
			w, _ := e.reg.Get("mcp__srv__wipe", "")
			if a := w.Annotations(); a == nil || a.ReadOnly || !a.Destructive || !a.Idempotent || !a.OpenWorld {
				t.Fatalf("wipe annotations (MCP defaults) = %+v", a)
			}
			p, _ := e.reg.Get("mcp__srv__plain", "")
			if p.Annotations() != nil {
				t.Fatalf("plain has annotations %+v", p.Annotations())
			}

			// Concurrency: a read-only tool runs in parallel only when its
			// server is trusted.
			want := tools.Exclusive
			if trusted {
				want = tools.Parallel
			}
			call := tools.Call{ID: "1", Name: "mcp__srv__look", Agent: "a"}
			if got := e.reg.Concurrency(call); got != want {
				t.Fatalf("look concurrency = %v, want %v", got, want)
			}
			if got := e.reg.Concurrency(tools.Call{ID: "2", Name: "mcp__srv__wipe", Agent: "a"}); got != tools.Exclusive {
				t.Fatalf("wipe concurrency = %v", got)
			}

			// The card shows the hints, and whether they are trusted.
			v, ok := look.PresentCall(json.RawMessage(`{}`)).(tools.GenericCall)
			if !ok {
				t.Fatalf("card = %#v", look.PresentCall(nil))
			}
			wantKind, wantMark := "other", "(untrusted hints)"
			if trusted {
				wantKind, wantMark = "read", "(trusted)"
			}
			if v.Kind != wantKind || v.Title != "srv: Look around" || len(v.Content) != 1 ||
				!strings.Contains(v.Content[0].Text, "read-only") || !strings.Contains(v.Content[0].Text, wantMark) {
				t.Fatalf("card = %+v", v)
			}
		})
	}
}

// A policy that reads the hints, as a permissions plugin would: it lets a
// read-only tool run without asking only when the hint is trusted.
func TestM2_PolicyActsOnHintsOnlyWhenTrusted(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		e := newEnv(t)
		if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			if a := x.Tool().Annotations(); a != nil && a.Trusted && a.ReadOnly {
				return next(ctx)
			}
			return tools.Asked("may change things"), nil
		}); err != nil {
			t.Fatal(err)
		}
		e.mount(mcpclient.Config{Name: "srv", Dial: annotatedServer().dial, Trusted: trusted})
		r := e.call(context.Background(), "mcp__srv__look", nil)
		if trusted && r.IsError || !trusted && code(r) != tools.CodeApprovalUnavailable {
			t.Fatalf("trusted=%v: look = %+v", trusted, r)
		}
	}
}
