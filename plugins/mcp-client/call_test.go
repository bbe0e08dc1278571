package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func rawTool(name string, h mcp.ToolHandler) (*mcp.Tool, mcp.ToolHandler) {
	return &mcp.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`)}, h
}

// blockingServer has a tool "block" that reports its start, then waits for
// its request's cancellation and reports that.
func blockingServer() (ms *memServer, started, cancelled chan struct{}) {
	ms = newMemServer(nil)
	started, cancelled = make(chan struct{}, 8), make(chan struct{}, 8)
	ms.srv.AddTool(rawTool("block", func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		started <- struct{}{}
		<-ctx.Done()
		cancelled <- struct{}{}
		return nil, ctx.Err()
	}))
	addEcho(ms.srv, "echo")
	return ms, started, cancelled
}

func TestCancellationSendsNotificationsCancelled(t *testing.T) {
	e := newEnv(t)
	ms, started, cancelled := blockingServer()
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result, 1)
	go func() { done <- e.call(ctx, "mcp__mem__block", nil) }()
	recv(t, "the server handler to start", started)
	cancel()
	if r := recv(t, "the cancelled call's result", done); code(r) != tools.CodeAborted {
		t.Fatalf("cancelled call = %+v", r)
	}
	// The server's handler saw its request cancelled: the client sent
	// notifications/cancelled.
	recv(t, "the server handler's cancellation", cancelled)
}

// In a bubble: the 20 ms run out only once the request reached the server
// and everything waits. On the real clock a loaded machine could spend them
// before the request was written (the go-sdk then never sends it), and the
// server's handler never started (4 runs in 150 under 12 busy loops).
func TestCallTimeoutCancelsTheRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ms, started, cancelled := blockingServer()
		e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial, CallTimeout: mcpclient.Duration(20 * time.Millisecond)})
		r := e.call(context.Background(), "mcp__mem__block", nil)
		if code(r) != tools.CodeToolTimeout || !strings.Contains(text(r), "timeout") {
			t.Fatalf("timed-out call = %+v", r)
		}
		recv(t, "start", started)
		recv(t, "the server handler's cancellation", cancelled)
	})
}

func TestServerDyingMidCallFailsTheCallWithServerUnavailable(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	ms.srv.AddTool(rawTool("die", func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		go func() { _ = req.Session.Close() }() // the server goes away during the call
		<-ctx.Done()
		return nil, ctx.Err()
	}))
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial, Reconnect: mcpclient.Reconnect{MaxAttempts: -1}})
	done := make(chan tools.Result, 1)
	go func() { done <- e.call(context.Background(), "mcp__mem__die", nil) }()
	r := recv(t, "the call's result", done)
	if code(r) != mcpclient.CodeServerUnavailable {
		t.Fatalf("call to a dying server = %+v", r)
	}
	// Without reconnection the plugin gives up: its tools go.
	e.waitStatus("failed", func(s mcpclient.Status) bool { return s.State == mcpclient.StateFailed })
	if got := e.names(); len(got) != 0 {
		t.Fatalf("tools after giving up: %v", got)
	}
	r = e.call(context.Background(), "mcp__mem__die", nil)
	if code(r) != tools.CodeUnknownTool {
		t.Fatalf("call after giving up = %+v", r)
	}
}

func TestToolErrorsAndServerErrors(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	ms.srv.AddTool(rawTool("fails", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "disk on fire"}, &mcp.TextContent{Text: "twice"}}}, nil
	}))
	ms.srv.AddTool(rawTool("rpcerr", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return nil, errors.New("handler exploded")
	}))
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	r := e.call(context.Background(), "mcp__mem__fails", nil)
	if code(r) != mcpclient.CodeToolError || text(r) != "disk on fire\ntwice" {
		t.Fatalf("isError result = %+v", r)
	}
	r = e.call(context.Background(), "mcp__mem__rpcerr", nil)
	if !r.IsError || !strings.Contains(text(r), "handler exploded") {
		t.Fatalf("handler error = %+v", r)
	}
}

func TestStructuredOutputIsValidatedWhenTheSchemaFits(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	fits := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"],"additionalProperties":false}`)
	exotic := json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer","multipleOf":10}}}`)
	add := func(name string, out json.RawMessage, sc any) {
		ms.srv.AddTool(&mcp.Tool{Name: name, Description: name, InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: out},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{StructuredContent: sc}, nil
			})
	}
	add("good", fits, map[string]any{"n": 3})
	add("bad", fits, map[string]any{"n": "three", "extra": true})
	add("missing", fits, nil)
	add("exotic", exotic, map[string]any{"n": 3}) // multipleOf is outside the subset: passed through
	add("none", nil, []any{1, 2})
	dialect := json.RawMessage(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)
	add("dialect", dialect, map[string]any{"n": "three"}) // a root $schema still validates
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})

	r := e.call(context.Background(), "mcp__mem__good", nil)
	if r.IsError || string(r.Value) != `{"n":3}` || r.Meta != nil || text(r) != `{"n":3}` {
		t.Fatalf("good = %+v meta %s", r, r.Meta)
	}
	if tl, _ := e.reg.Get("mcp__mem__good", ""); !strings.Contains(string(tl.OutputSchema()), `"required":["n"]`) {
		t.Fatalf("declared output %s", tl.OutputSchema())
	}
	r = e.call(context.Background(), "mcp__mem__bad", nil)
	if code(r) != mcpclient.CodeInvalidOutput || !strings.Contains(text(r), "/n") || !strings.Contains(text(r), "/extra") || !strings.Contains(text(r), `MCP server "mem" violated its own output schema`) {
		t.Fatalf("bad = %+v", r)
	}
	r = e.call(context.Background(), "mcp__mem__missing", nil)
	if code(r) != mcpclient.CodeInvalidOutput {
		t.Fatalf("missing = %+v", r)
	}
	r = e.call(context.Background(), "mcp__mem__exotic", nil)
	if r.IsError || r.Value != nil || string(r.Meta) != `{"structuredContent":{"n":3}}` {
		t.Fatalf("exotic = %+v", r)
	}
	r = e.call(context.Background(), "mcp__mem__dialect", nil)
	if code(r) != mcpclient.CodeInvalidOutput {
		t.Fatalf("dialect = %+v", r)
	}
	r = e.call(context.Background(), "mcp__mem__none", nil)
	if r.IsError || string(r.Meta) != `{"structuredContent":[1,2]}` {
		t.Fatalf("none = %+v meta %s", r, r.Meta)
	}
}

func TestContentBlocksPassThrough(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	ms.srv.AddTool(rawTool("mixed", func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: "t"},
			&mcp.ImageContent{Data: []byte("png"), MIMEType: "image/png"},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///a", MIMEType: "text/plain", Text: "body"}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "file:///b", Blob: []byte{1, 2}}},
			&mcp.ResourceLink{URI: "file:///c", Name: "c"},
		}}, nil
	}))
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	r := e.call(context.Background(), "mcp__mem__mixed", nil)
	want := []tools.Content{
		tools.Text("t"), tools.Image("cG5n", "image/png"),
		tools.EmbeddedText("file:///a", "text/plain", "body"), tools.EmbeddedBlob("file:///b", "", "AQI="),
		tools.Link("file:///c", "c", "", ""),
	}
	if r.IsError || len(r.Content) != len(want) {
		t.Fatalf("mixed = %+v", r)
	}
	for i := range want {
		if r.Content[i] != want[i] {
			t.Errorf("block %d = %+v, want %+v", i, r.Content[i], want[i])
		}
	}
}

// Whether the caller's context can be cancelled (the call then has a
// context of its own) or not (the call's context is the session's), the
// session's close ends the call.
func TestDisposeDuringACallEndsTheCallAndReturns(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func(t *testing.T) context.Context
	}{
		{"caller context never cancelled", func(*testing.T) context.Context { return context.Background() }},
		{"cancellable caller context", func(t *testing.T) context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			return ctx
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ms, started, cancelled := blockingServer()
			f := e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
			ctx := tc.ctx(t)
			done := make(chan tools.Result, 1)
			go func() { done <- e.call(ctx, "mcp__mem__block", nil) }()
			recv(t, "the server handler to start", started)
			disposed := make(chan error, 1)
			go func() { disposed <- f.Dispose() }()
			if err := recv(t, "dispose", disposed); err != nil {
				t.Fatal(err)
			}
			if r := recv(t, "the call's result", done); code(r) != mcpclient.CodeServerUnavailable || !strings.Contains(text(r), "the session was closed during the call") {
				t.Fatalf("call cut by dispose = %+v", r)
			}
			recv(t, "the server handler's cancellation", cancelled)
			ms.waitSessionsEnded(t)
		})
	}
}

// The arguments reach the server whole whether or not they fit in the
// call's own buffer (argBufLen), and the results of calls in a row are
// each their own.
func TestArgumentsOfEveryLengthReachTheServer(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	var results []tools.Result
	var want []string
	// {"text":"…"} is n+11 bytes: 92..95 and 116..119 straddle 104 and
	// 128 bytes (the buffer's length before, and argBufLen).
	for _, n := range []int{0, 1, 92, 93, 94, 95, 116, 117, 118, 119, 200, 70000} {
		s := strings.Repeat("é", n/2) + strings.Repeat("x", n%2)
		r := e.call(context.Background(), "mcp__mem__echo", map[string]string{"text": s})
		if r.IsError || text(r) != s {
			t.Fatalf("echo of %d bytes = %.200v", len(s), r)
		}
		results, want = append(results, r), append(want, s)
	}
	for i, r := range results {
		if text(r) != want[i] {
			t.Fatalf("result %d changed after later calls: %.200q", i, text(r))
		}
	}
}
