package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

type upstreams map[string]*mcp.ClientSession

func (u upstreams) Servers() []string {
	out := make([]string, 0, len(u))
	for k := range u {
		out = append(out, k)
	}
	return out
}
func (u upstreams) Session(s string) *mcp.ClientSession { return u[s] }

// mountUp connects an in-memory upstream server "up" with the resource
// "secret" (test://secret), the template "files" (test://files/{name})
// and the prompt "greet".
func mountUp(t *testing.T) upstreams {
	t.Helper()
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
	srv.AddResource(&mcp.Resource{Name: "secret", URI: "test://secret"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://secret", Text: "the secret"}}}, nil
		})
	srv.AddResourceTemplate(&mcp.ResourceTemplate{Name: "files", URITemplate: "test://files/{name}"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "a file"}}}, nil
		})
	srv.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who"}}},
		func(_ context.Context, r *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + r.Params.Arguments["who"]}}}}, nil
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return upstreams{"up": cs}
}

// An ask rule naming a mounted server's resource or prompt asks before
// the read or get, as a tool call's ask does: the client's accept lets it
// through, a decline refuses it, and with no one to answer it is refused
// (fail closed). A deny with an argument condition refuses; a read made
// from a template is decided under the template's name.
func TestAskRulesApplyToResourcesAndPrompts(t *testing.T) {
	type seen struct {
		name string
		args string
	}
	decided := make(chan seen, 16)
	access := func(name string, args json.RawMessage) mcpserver.AccessDecision {
		decided <- seen{name, string(args)}
		switch {
		case name == "mcp__up__secret", name == "mcp__up__greet" && strings.Contains(string(args), "boss"):
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessAsk, Reason: "ask rule"}
		case name == "mcp__up__files" && strings.Contains(string(args), "test://files/etc"):
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: "deny rule"}
		}
		return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
	}
	fallback := make(chan tools.ApprovalRequest, 1)
	approver := tools.ApproverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		fallback <- req
		return tools.Unavailable, nil
	})
	e := boot(t, tools.Native, mcpserver.Config{Upstream: mountUp(t), Access: access, Approver: approver})
	answer := "accept"
	asked := make(chan string, 4)
	asking := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.Message
		return &mcp.ElicitResult{Action: answer}, nil
	}})
	mute := connect(t, e, nil) // takes no elicitations: its asks go to the Approver, which cannot answer
	ctx := context.Background()
	read := func(cs *mcp.ClientSession, uri string) (string, error) {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return "", err
		}
		return r.Contents[0].Text, nil
	}

	if got, err := read(asking, "dsh://up/test://secret"); err != nil || got != "the secret" {
		t.Errorf("accepted read: %q %v", got, err)
	}
	if msg := <-asked; !strings.Contains(msg, "mcp__up__secret") || !strings.Contains(msg, "read the resource dsh://up/test://secret") {
		t.Errorf("the ask's message:\n%s", msg)
	}
	if d := <-decided; d.name != "mcp__up__secret" || d.args != `{"uri":"test://secret"}` {
		t.Errorf("decided %+v", d)
	}
	answer = "decline"
	if got, err := read(asking, "dsh://up/test://secret"); err == nil || !strings.Contains(err.Error(), "rejected") {
		t.Errorf("declined read: %q %v", got, err)
	}
	<-asked
	if got, err := read(mute, "dsh://up/test://secret"); err == nil || !strings.Contains(err.Error(), "approval is required") {
		t.Errorf("read no one can approve: %q %v", got, err)
	}
	if req := <-fallback; req.Tool != "mcp__up__secret" || !strings.Contains(req.Reason, "read the resource dsh://up/test://secret") {
		t.Errorf("the Approver was asked %+v", req)
	}
	if got, err := read(mute, "dsh://up/test://files/etc"); err == nil || !strings.Contains(err.Error(), "denied by a permission rule (deny rule)") {
		t.Errorf("read denied by a condition: %q %v", got, err)
	}
	if got, err := read(mute, "dsh://up/test://files/readme"); err != nil || got != "a file" {
		t.Errorf("read no rule names: %q %v", got, err)
	}

	get := func(cs *mcp.ClientSession, who string) (string, error) {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "mcp__up__greet", Arguments: map[string]string{"who": who}})
		if err != nil {
			return "", err
		}
		return r.Messages[0].Content.(*mcp.TextContent).Text, nil
	}
	if got, err := get(mute, "you"); err != nil || got != "hello you" {
		t.Errorf("get no rule names: %q %v", got, err)
	}
	if got, err := get(mute, "boss"); err == nil || !strings.Contains(err.Error(), "approval is required") {
		t.Errorf("get no one can approve: %q %v", got, err)
	}
	<-fallback
	answer = "accept"
	if got, err := get(asking, "boss"); err != nil || got != "hello boss" {
		t.Errorf("accepted get: %q %v", got, err)
	}
	if msg := <-asked; !strings.Contains(msg, `get the prompt mcp__up__greet with the arguments {"who":"boss"}`) {
		t.Errorf("the ask's message:\n%s", msg)
	}
}
