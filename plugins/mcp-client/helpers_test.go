package mcpclient_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/npmpeer"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain ends with one line naming the tests skipped for want of npm
// peers.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(npmpeer.Exit)) }

// budget bounds every wait of these tests: far more than any passing case
// needs; reaching it is a failure, never a pass.
const budget = 60 * time.Second

// env is a host with a tool registry and a status recorder.
type env struct {
	t      *testing.T
	h      *host.Host
	root   *host.Context
	reg    *tools.Registry
	status chan mcpclient.Status
}

func newEnv(t *testing.T) *env {
	t.Helper()
	h := host.New()
	root := h.Root()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, h: h, root: root, reg: reg, status: make(chan mcpclient.Status, 1024)}
	if _, err := host.On(root, mcpclient.StatusChanged, func(_ context.Context, s mcpclient.Status) error {
		select {
		case e.status <- s:
		default:
			t.Errorf("status channel full")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = root.Fiber().Dispose() })
	return e
}

// mount loads the plugin and fails the test when it does not become
// active.
func (e *env) mount(cfg mcpclient.Config) *host.Fiber {
	e.t.Helper()
	f, err := e.root.Plugin(mcpclient.Plugin, cfg)
	if err != nil {
		e.t.Fatalf("mount %q: %v", cfg.Name, err)
	}
	return f
}

// waitStatus waits for a status event satisfying ok.
func (e *env) waitStatus(what string, ok func(mcpclient.Status) bool) mcpclient.Status {
	e.t.Helper()
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	for {
		select {
		case s := <-e.status:
			if ok(s) {
				return s
			}
		case <-deadline.C:
			e.t.Fatalf("no status event: %s", what)
		}
	}
}

// names returns the visible tool names of the global scope.
func (e *env) names() []string {
	var out []string
	for _, t := range e.reg.Visible("") {
		out = append(out, t.Name())
	}
	return out
}

func (e *env) call(ctx context.Context, name string, args any) tools.Result {
	e.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.reg.Execute(ctx, tools.Call{ID: "c-" + name, Name: name, Arguments: raw, Agent: "agent"})
}

// bodyStarts returns a channel that receives the name of each call whose
// tools/execute stage starts (its body runs right after).
func (e *env) bodyStarts() <-chan string {
	ch := make(chan string, 16)
	if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
		select {
		case ch <- x.Name():
		default:
		}
		return next(ctx)
	}); err != nil {
		e.t.Fatal(err)
	}
	return ch
}

func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(budget):
		t.Fatalf("timed out waiting for %s", what)
	}
	panic("unreachable")
}

func text(r tools.Result) string {
	var b strings.Builder
	for i, c := range r.Content {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

func code(r tools.Result) tools.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// memServer is an in-process go-sdk server the plugin dials through
// in-memory transports, one server session per connection.
type memServer struct {
	srv *mcp.Server

	mu       sync.Mutex
	sessions []*mcp.ServerSession
	dials    int
	failDial int // the next failDial dials fail
}

func newMemServer(opts *mcp.ServerOptions) *memServer {
	return &memServer{srv: mcp.NewServer(&mcp.Implementation{Name: "mem", Version: "1"}, opts)}
}

func (m *memServer) dial(ctx context.Context) (mcp.Transport, error) {
	m.mu.Lock()
	m.dials++
	if m.failDial > 0 {
		m.failDial--
		m.mu.Unlock()
		return nil, errors.New("dial refused")
	}
	m.mu.Unlock()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := m.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.sessions = append(m.sessions, ss)
	m.mu.Unlock()
	return ct, nil
}

// last returns the newest server session.
func (m *memServer) last() *mcp.ServerSession {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[len(m.sessions)-1]
}

// waitSessionsEnded fails unless every server session has ended.
func (m *memServer) waitSessionsEnded(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	ss := append([]*mcp.ServerSession(nil), m.sessions...)
	m.mu.Unlock()
	for _, s := range ss {
		done := make(chan struct{})
		go func() { _ = s.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(budget):
			t.Fatal("a server session did not end")
		}
	}
}

// echoTool is a raw tool echoing its "text" argument.
func echoTool(name string) (*mcp.Tool, mcp.ToolHandler) {
	return &mcp.Tool{Name: name, Description: "Echo " + name, InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a struct{ Text string }
			_ = json.Unmarshal(req.Params.Arguments, &a)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil
		}
}

func addEcho(s *mcp.Server, names ...string) {
	for _, n := range names {
		t, h := echoTool(n)
		s.AddTool(t, h)
	}
}
