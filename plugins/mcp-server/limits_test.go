package mcpserver_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// With NoClientApproval an ask never reaches the calling client, even one
// that takes elicitations: it goes to the Approver.
func TestNoClientApprovalKeepsAsksFromTheCallingClient(t *testing.T) {
	asked := make(chan string, 1)
	approver := tools.ApproverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		asked <- req.Tool
		return tools.Rejected, nil
	})
	e := boot(t, tools.Native, mcpserver.Config{NoClientApproval: true, Approver: approver})
	askAll(t, e, "echo")
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("the calling client was asked")
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	r := call(t, cs, "echo", map[string]any{"text": "hi"})
	if !r.IsError || errCode(r) != string(tools.CodeApprovalRejected) || <-asked != "echo" {
		t.Errorf("isError=%v code=%q", r.IsError, errCode(r))
	}
}

// blockingTool returns only when its call is cancelled, after signalling
// started.
func blockingTool(started chan<- struct{}) tools.Definition {
	return tools.MustDefine(tools.TypedTool[struct{}, tools.Output]{
		Name: "block", Description: "Blocks.",
		Execute: func(ctx context.Context, _ struct{}, _ *tools.Execution) (tools.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			return tools.Output{}, ctx.Err()
		},
	})
}

// MaxCalls bounds the calls in flight of all sessions together, and
// MaxCallsPerSession those of one session: a call past either is a
// JSON-RPC error with CodeLimit; a session past MaxSessions is refused.
func TestCallAndSessionLimits(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{MaxCalls: 2, MaxCallsPerSession: 1, MaxSessions: 3})
	started := make(chan struct{}, 4)
	register(t, e.root, e.reg, blockingTool(started))
	a, b, c := connect(t, e, nil), connect(t, e, nil), connect(t, e, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	for _, cs := range []*mcp.ClientSession{a, b} {
		go func() {
			_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "block", Arguments: map[string]any{}})
			done <- struct{}{}
		}()
		<-started
	}
	limit := func(cs *mcp.ClientSession, want string) {
		t.Helper()
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != mcpserver.CodeLimit || !strings.Contains(werr.Message, want) {
			t.Errorf("call past the limit: %v, want %q", err, want)
		}
	}
	limit(a, "on this session (limit 1)")
	limit(c, "on this gateway (limit 2)")
	ct, st := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(context.Background(), st); !errors.Is(err, mcpserver.ErrTooManySessions) {
		t.Errorf("fourth session: %v", err)
	}
	_ = ct
	cancel()
	<-done
	<-done
	// The server ends the cancelled calls after the client gave up on
	// them: calls are admitted again once it has.
	deadline := time.Now().Add(budget)
	for {
		r, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "after"}})
		if err == nil {
			if r.IsError || text(r) != "after" {
				t.Errorf("after the calls returned: %+v", r)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls still refused after the blocked ones ended: %v", err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ForwardElicitation declines, never accepts, unless the session's client
// takes form elicitations and asks may go to clients.
func TestForwardElicitationDeclinesWhenItCannotAsk(t *testing.T) {
	params := &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "string"}}}}
	e := boot(t, tools.Native, mcpserver.Config{})
	plain, plainSess := connect2(t, e, nil)
	_ = plain
	got := make(chan string, 1)
	_, eliSess := connect2(t, e, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		got <- req.Params.Message
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"n": "x"}}, nil
	}})
	ctx := context.Background()
	for name, tc := range map[string]struct {
		agent string
		p     *mcp.ElicitParams
	}{
		"no session":    {"mcp-none", params},
		"no agent":      {"", params},
		"client cannot": {string(plainSess.Scope()), params},
		"url mode":      {string(eliSess.Scope()), &mcp.ElicitParams{Mode: "url", URL: "https://x", Message: "go", ElicitationID: "1"}},
		"nil params":    {string(eliSess.Scope()), nil},
	} {
		r, err := e.srv.ForwardElicitation(ctx, host.ScopeKey(tc.agent), "srv", tc.p)
		if err != nil || r.Action != "decline" {
			t.Errorf("%s: %+v %v", name, r, err)
		}
	}
	r, err := e.srv.ForwardElicitation(ctx, eliSess.Scope(), "srv", params)
	if err != nil || r.Action != "accept" || r.Content["n"] != "x" || <-got != "The MCP server \"srv\" asks:\n\nname?" {
		t.Errorf("forwarded: %+v %v", r, err)
	}
	off := boot(t, tools.Native, mcpserver.Config{NoClientApproval: true})
	_, s := connect2(t, off, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		t.Error("asked with NoClientApproval")
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	if r, err := off.srv.ForwardElicitation(ctx, s.Scope(), "srv", params); err != nil || r.Action != "decline" {
		t.Errorf("NoClientApproval: %+v %v", r, err)
	}
}
