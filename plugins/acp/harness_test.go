package acp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/acp"
	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a host with the registry, the example agent's file and shell
// tools on a temporary workspace, a policy asking before every bash call,
// and the ACP bridge as the approval service.
type rig struct {
	h      *host.Host
	root   *host.Context
	reg    *tools.Registry
	bridge *acp.Bridge
	fiber  *host.Fiber // the acp plugin's
	ws     string
}

func newRig(t *testing.T, cfg acp.Config) *rig {
	t.Helper()
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	load := func(p host.Plugin, c any) *host.Fiber {
		t.Helper()
		f, err := root.Plugin(p, c)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	load(tools.Plugin, tools.Config{Mode: tools.Native})
	load(toolfs.Plugin, toolfs.Config{Root: ws})
	load(toolbash.Plugin, toolbash.Config{Dir: ws})
	load(host.Define("ask-before-bash", nil, func(c *host.Context) error {
		_, err := host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			if e.Name() == "bash" {
				return tools.Asked("shell commands need approval"), nil
			}
			return next(ctx)
		})
		return err
	}), nil)
	fiber := load(acp.Plugin, cfg)
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	b, err := acp.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{h: h, root: root, reg: reg, bridge: b, fiber: fiber, ws: ws}
}

// scriptedCall is one call of a prompt's script.
type scriptedCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// testAgent is an ACP agent whose "model" is the prompt itself: the
// prompt text is a JSON list of tool calls, run as one batch.
type testAgent struct {
	r    *rig
	conn *acpsdk.AgentSideConnection

	mu       sync.Mutex
	sessions map[acpsdk.SessionId]*acp.Session
	results  [][]tools.Result
}

var _ acpsdk.Agent = (*testAgent)(nil)

func (a *testAgent) Authenticate(context.Context, acpsdk.AuthenticateRequest) (acpsdk.AuthenticateResponse, error) {
	return acpsdk.AuthenticateResponse{}, nil
}

func (a *testAgent) Initialize(context.Context, acpsdk.InitializeRequest) (acpsdk.InitializeResponse, error) {
	return acpsdk.InitializeResponse{ProtocolVersion: acpsdk.ProtocolVersionNumber}, nil
}

func (a *testAgent) Cancel(_ context.Context, p acpsdk.CancelNotification) error {
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	a.mu.Unlock()
	if s != nil {
		s.Cancel()
	}
	return nil
}

func (a *testAgent) CloseSession(context.Context, acpsdk.CloseSessionRequest) (acpsdk.CloseSessionResponse, error) {
	return acpsdk.CloseSessionResponse{}, nil
}

func (a *testAgent) ListSessions(context.Context, acpsdk.ListSessionsRequest) (acpsdk.ListSessionsResponse, error) {
	return acpsdk.ListSessionsResponse{}, nil
}

func (a *testAgent) NewSession(_ context.Context, p acpsdk.NewSessionRequest) (acpsdk.NewSessionResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := acpsdk.SessionId(fmt.Sprintf("s%d", len(a.sessions)+1))
	scope := host.ScopeKey("agent-" + string(id))
	if _, err := a.r.root.Scope(scope); err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	s, err := a.r.bridge.Attach(scope, a.conn, id, acp.SessionOptions{Cwd: p.Cwd})
	if err != nil {
		return acpsdk.NewSessionResponse{}, err
	}
	a.sessions[id] = s
	return acpsdk.NewSessionResponse{SessionId: id}, nil
}

func (a *testAgent) Prompt(ctx context.Context, p acpsdk.PromptRequest) (acpsdk.PromptResponse, error) {
	a.mu.Lock()
	s := a.sessions[p.SessionId]
	a.mu.Unlock()
	if s == nil || len(p.Prompt) != 1 || p.Prompt[0].Text == nil {
		return acpsdk.PromptResponse{}, errors.New("test agent: bad prompt")
	}
	var script []scriptedCall
	if err := json.Unmarshal([]byte(p.Prompt[0].Text.Text), &script); err != nil {
		return acpsdk.PromptResponse{}, err
	}
	calls := make([]tools.Call, len(script))
	for i, c := range script {
		calls[i] = tools.Call{ID: c.ID, Name: c.Name, Arguments: c.Args, Agent: s.Scope()}
	}
	res := a.r.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})
	a.mu.Lock()
	a.results = append(a.results, res)
	a.mu.Unlock()
	// The turn's updates go out before the answer, also for a cancelled
	// turn (the peer here always reads, so this cannot hang).
	if err := s.Flush(context.WithoutCancel(ctx)); err != nil {
		return acpsdk.PromptResponse{}, err
	}
	stop := acpsdk.StopReasonEndTurn
	if ctx.Err() != nil {
		stop = acpsdk.StopReasonCancelled
	}
	return acpsdk.PromptResponse{StopReason: stop}, nil
}

func (a *testAgent) ResumeSession(context.Context, acpsdk.ResumeSessionRequest) (acpsdk.ResumeSessionResponse, error) {
	return acpsdk.ResumeSessionResponse{}, nil
}

func (a *testAgent) SetSessionConfigOption(context.Context, acpsdk.SetSessionConfigOptionRequest) (acpsdk.SetSessionConfigOptionResponse, error) {
	return acpsdk.SetSessionConfigOptionResponse{}, nil
}

func (a *testAgent) SetSessionMode(context.Context, acpsdk.SetSessionModeRequest) (acpsdk.SetSessionModeResponse, error) {
	return acpsdk.SetSessionModeResponse{}, nil
}

// testClient is an ACP client (the editor) that records every update and
// permission request, and answers permission requests with answer.
type testClient struct {
	mu      sync.Mutex
	updates []acpsdk.SessionUpdate
	asks    []acpsdk.RequestPermissionRequest
	answer  func(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
}

var _ acpsdk.Client = (*testClient)(nil)

func (c *testClient) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}

func (c *testClient) RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asks = append(c.asks, r)
	answer := c.answer
	c.mu.Unlock()
	return answer(ctx, r)
}

func (c *testClient) ReadTextFile(context.Context, acpsdk.ReadTextFileRequest) (acpsdk.ReadTextFileResponse, error) {
	return acpsdk.ReadTextFileResponse{}, errors.New("not supported")
}

func (c *testClient) WriteTextFile(context.Context, acpsdk.WriteTextFileRequest) (acpsdk.WriteTextFileResponse, error) {
	return acpsdk.WriteTextFileResponse{}, errors.New("not supported")
}

func (c *testClient) CreateTerminal(context.Context, acpsdk.CreateTerminalRequest) (acpsdk.CreateTerminalResponse, error) {
	return acpsdk.CreateTerminalResponse{}, errors.New("not supported")
}

func (c *testClient) KillTerminal(context.Context, acpsdk.KillTerminalRequest) (acpsdk.KillTerminalResponse, error) {
	return acpsdk.KillTerminalResponse{}, errors.New("not supported")
}

func (c *testClient) TerminalOutput(context.Context, acpsdk.TerminalOutputRequest) (acpsdk.TerminalOutputResponse, error) {
	return acpsdk.TerminalOutputResponse{}, errors.New("not supported")
}

func (c *testClient) ReleaseTerminal(context.Context, acpsdk.ReleaseTerminalRequest) (acpsdk.ReleaseTerminalResponse, error) {
	return acpsdk.ReleaseTerminalResponse{}, errors.New("not supported")
}

func (c *testClient) WaitForTerminalExit(context.Context, acpsdk.WaitForTerminalExitRequest) (acpsdk.WaitForTerminalExitResponse, error) {
	return acpsdk.WaitForTerminalExitResponse{}, errors.New("not supported")
}

func (c *testClient) recorded() ([]acpsdk.SessionUpdate, []acpsdk.RequestPermissionRequest) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acpsdk.SessionUpdate(nil), c.updates...), append([]acpsdk.RequestPermissionRequest(nil), c.asks...)
}

// wire connects a testAgent on r and a testClient over two io.Pipe pairs,
// with the SDK's connections on both ends, and tears everything down (and
// waits for it) at the end of the test.
func wire(t *testing.T, r *rig, client *testClient) (*acpsdk.ClientSideConnection, *testAgent) {
	t.Helper()
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	agent := &testAgent{r: r, sessions: map[acpsdk.SessionId]*acp.Session{}}
	quiet := slog.New(slog.DiscardHandler)
	agent.conn = acpsdk.NewAgentSideConnection(agent, a2cW, c2aR)
	agent.conn.SetLogger(quiet)
	cc := acpsdk.NewClientSideConnection(client, c2aW, a2cR)
	cc.SetLogger(quiet)
	t.Cleanup(func() {
		agent.mu.Lock()
		ss := make([]*acp.Session, 0, len(agent.sessions))
		for _, s := range agent.sessions {
			ss = append(ss, s)
		}
		agent.mu.Unlock()
		for _, s := range ss {
			s.Close()
		}
		for _, p := range []interface{ Close() error }{c2aR, c2aW, a2cR, a2cW} {
			_ = p.Close()
		}
		<-agent.conn.Done()
		<-cc.Done()
		for _, s := range ss {
			<-s.Done()
		}
	})
	return cc, agent
}

// summary renders an update as one comparable line, with the workspace
// path written as $WS.
func summary(ws string, u acpsdk.SessionUpdate) string {
	var b strings.Builder
	switch {
	case u.ToolCall != nil:
		tc := u.ToolCall
		fmt.Fprintf(&b, "tool_call %s %s %s %q", tc.ToolCallId, tc.Status, tc.Kind, tc.Title)
		for _, l := range tc.Locations {
			fmt.Fprintf(&b, " @%s", l.Path)
			if l.Line != nil {
				fmt.Fprintf(&b, ":%d", *l.Line)
			}
		}
		writeContent(&b, tc.Content)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		fmt.Fprintf(&b, "tool_call_update %s", tu.ToolCallId)
		if tu.Status != nil {
			fmt.Fprintf(&b, " %s", *tu.Status)
		}
		if tu.Title != nil {
			fmt.Fprintf(&b, " %q", *tu.Title)
		}
		writeContent(&b, tu.Content)
	default:
		b.WriteString("other update")
	}
	return strings.ReplaceAll(b.String(), ws, "$WS")
}

func writeContent(b *strings.Builder, cs []acpsdk.ToolCallContent) {
	for _, c := range cs {
		switch {
		case c.Diff != nil:
			old := "<new file>"
			if c.Diff.OldText != nil {
				old = fmt.Sprintf("%q", *c.Diff.OldText)
			}
			fmt.Fprintf(b, " | diff %s %s -> %q", c.Diff.Path, old, c.Diff.NewText)
		case c.Content != nil && c.Content.Content.Text != nil:
			fmt.Fprintf(b, " | text %q", c.Content.Content.Text.Text)
		case c.Terminal != nil:
			fmt.Fprintf(b, " | terminal %s", c.Terminal.TerminalId)
		default:
			b.WriteString(" | other content")
		}
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
