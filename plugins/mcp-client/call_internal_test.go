package mcpclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that took its session just before closeConn's sweep of the calls
// in flight (so the sweep missed it) still ends with the session's close:
// it sees the session's context done and fails as ServerUnavailable,
// "closed during the call", instead of running on a session being closed
// (whose Close would wait for it).
func TestACallRacingItsSessionsCloseIsCancelled(t *testing.T) {
	ctx := context.Background()
	srv := mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran"}}}, nil
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close(); _ = ss.Wait() }()

	s := &server{cfg: Config{Name: "mem"}, inflight: map[*inflight]struct{}{}}
	cur := &conn{cs: cs, ended: make(chan struct{})}
	cur.ctx, cur.cancel = context.WithCancelCause(ctx)
	s.conn.Store(cur)
	cur.cancel(errSessionClosed) // closeConn began: its sweep found no call

	exec, err := tools.NewExecution(tools.Call{ID: "c1", Name: "mcp__mem__echo", Arguments: json.RawMessage(`{}`)}, tools.Definition{Name: "mcp__mem__echo", Description: "echo",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil }})
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.call(ctx, exec, &remote{name: "echo"})
	if err == nil || !strings.Contains(err.Error(), "the session was closed during the call") {
		t.Fatalf("call on a closing session = %+v, %v", out, err)
	}
	if len(s.inflight) != 0 {
		t.Fatalf("calls left in flight: %d", len(s.inflight))
	}
}
