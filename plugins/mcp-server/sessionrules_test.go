package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Config.SessionRules gives one session its own Hidden and Access (per
// identity rules), in place of the server-wide ones: the restricted
// session does not list the resource it hides and cannot read it or get
// the prompt its Access denies, while another session of the same server
// lists, reads and gets all of them.
func TestSessionRulesReplaceHiddenAndAccessForOneSession(t *testing.T) {
	var n atomic.Int32
	restricted := mcpserver.SessionRules{
		Hidden: func(name string) bool { return name == "mcp__up__secret" },
		Access: func(name string, _ json.RawMessage) mcpserver.AccessDecision {
			if name == "mcp__up__greet" {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "profile rule"}
			}
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
		},
	}
	e := boot(t, tools.Native, mcpserver.Config{
		Upstream: mountUp(t),
		Hidden:   func(string) bool { return false },
		Access: func(string, json.RawMessage) mcpserver.AccessDecision {
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
		},
		SessionRules: func(mcpserver.SessionInfo) mcpserver.SessionRules {
			if n.Add(1) == 1 {
				return restricted
			}
			return mcpserver.SessionRules{}
		},
	})
	first := connect(t, e, nil)
	second := connect(t, e, nil)
	ctx := context.Background()
	names := func(cs *mcp.ClientSession) []string {
		r, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range r.Resources {
			out = append(out, x.Name)
		}
		return out
	}
	if got := names(first); slices.Contains(got, "mcp__up__secret") {
		t.Errorf("restricted session lists %v", got)
	}
	if got := names(second); !slices.Contains(got, "mcp__up__secret") {
		t.Errorf("other session lists %v", got)
	}
	if _, err := first.ReadResource(ctx, &mcp.ReadResourceParams{URI: "dsh://up/test://secret"}); err == nil {
		t.Error("restricted session read the hidden resource")
	}
	if r, err := second.ReadResource(ctx, &mcp.ReadResourceParams{URI: "dsh://up/test://secret"}); err != nil || r.Contents[0].Text != "the secret" {
		t.Errorf("other session's read: %v", err)
	}
	get := &mcp.GetPromptParams{Name: "mcp__up__greet", Arguments: map[string]string{"who": "x"}}
	if _, err := first.GetPrompt(ctx, get); err == nil || !strings.Contains(err.Error(), "profile rule") {
		t.Errorf("restricted session's get: %v", err)
	}
	if _, err := second.GetPrompt(ctx, get); err != nil {
		t.Errorf("other session's get: %v", err)
	}
}
