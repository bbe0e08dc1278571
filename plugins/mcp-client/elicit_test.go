package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// elicitServer has tools that ask the client during the call (as
// multi-round-trip input requests, the current protocol's way) and return
// the answer as "<action> <content JSON>": "confirm" (no required field)
// and "form" (a required name). The stdio test with the everything server
// covers the older protocol's elicitation/create requests.
func elicitServer() *memServer {
	ms := newMemServer(nil)
	add := func(name string, schema json.RawMessage) {
		ms.srv.AddTool(rawTool(name, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			res, ok := req.Params.InputResponses["q"].(*mcp.ElicitResult)
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "proceed?", RequestedSchema: schema}}}, nil
			}
			c, _ := json.Marshal(res.Content)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Action + " " + string(c)}}}, nil
		}))
	}
	add("confirm", json.RawMessage(`{"type":"object","properties":{}}`))
	add("form", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`))
	return ms
}

func TestElicitationIsDeclinedWithoutAnAnswerer(t *testing.T) {
	e := newEnv(t)
	e.mount(mcpclient.Config{Name: "s", Dial: elicitServer().dial})
	for _, tool := range []string{"mcp__s__confirm", "mcp__s__form"} {
		if r := e.call(context.Background(), tool, nil); r.IsError || text(r) != "decline null" {
			t.Fatalf("%s = %+v", tool, r)
		}
	}
}

func TestElicitationGoesToTheApprovalService(t *testing.T) {
	for _, tc := range []struct {
		outcome tools.ApprovalOutcome
		tool    string
		want    string
	}{
		{tools.AllowedOnce, "mcp__s__confirm", "accept null"}, // accepted, no content
		{tools.AllowedOnce, "mcp__s__form", "decline null"},   // an approver cannot fill a form
		{tools.Rejected, "mcp__s__confirm", "decline null"},
		{tools.Cancelled, "mcp__s__confirm", "cancel null"},
		{tools.Unavailable, "mcp__s__confirm", "decline null"},
		{"bogus", "mcp__s__confirm", "decline null"},
	} {
		t.Run(fmt.Sprintf("%s/%s", tc.outcome, tc.tool), func(t *testing.T) {
			e := newEnv(t)
			var got tools.ApprovalRequest
			if _, err := tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				got = req
				return tc.outcome, nil
			})); err != nil {
				t.Fatal(err)
			}
			e.mount(mcpclient.Config{Name: "s", Dial: elicitServer().dial})
			r := e.call(context.Background(), tc.tool, nil)
			if r.IsError || text(r) != tc.want {
				t.Fatalf("result = %+v, want %q", r, tc.want)
			}
			if got.Agent != "agent" || got.Tool != tc.tool || got.CallID != "c-"+tc.tool || got.Execution == nil {
				t.Fatalf("approval request = %+v", got)
			}
		})
	}
}

func TestElicitorAnswersAndIsContained(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   mcpclient.ElicitorFunc
		want string
	}{
		{"accept", func(ctx context.Context, req mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			if req.Execution == nil || req.Execution.Name() != "mcp__s__form" || req.Agent != "agent" || req.Params.Message != "proceed?" {
				return nil, fmt.Errorf("bad request %+v", req)
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		}, `accept {"name":"Ada"}`},
		{"error", func(context.Context, mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			return nil, fmt.Errorf("no user")
		}, "decline null"},
		{"panic", func(context.Context, mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			panic("boom")
		}, "decline null"},
		{"nil", func(context.Context, mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			return nil, nil
		}, "decline null"},
		{"unknown action", func(context.Context, mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "yes please"}, nil
		}, "decline null"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.mount(mcpclient.Config{Name: "s", Dial: elicitServer().dial, Elicitor: tc.fn})
			if r := e.call(context.Background(), "mcp__s__form", nil); r.IsError || text(r) != tc.want {
				t.Fatalf("result = %+v, want %q", r, tc.want)
			}
		})
	}
}

// An answerer that waits for a user is released when the call is
// cancelled, and the call ends.
func TestElicitationEndsWithTheCall(t *testing.T) {
	e := newEnv(t)
	asked := make(chan struct{}, 1)
	released := make(chan struct{}, 1)
	e.mount(mcpclient.Config{Name: "s", Dial: elicitServer().dial, Elicitor: mcpclient.ElicitorFunc(
		func(ctx context.Context, _ mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			<-ctx.Done()
			released <- struct{}{}
			return nil, ctx.Err()
		})})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() { done <- e.call(ctx, "mcp__s__form", nil) }()
	recv(t, "the elicitation", asked)
	cancel()
	if r := recv(t, "the call", done); code(r) != tools.CodeAborted {
		t.Fatalf("call = %+v", r)
	}
	recv(t, "the elicitor's release", released)
}
