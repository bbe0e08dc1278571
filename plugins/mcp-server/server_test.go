package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// budget bounds every wait of a test; a passing case needs milliseconds.
const budget = 30 * time.Second

type env struct {
	h    *host.Host
	root *host.Context
	reg  *tools.Registry
	srv  *mcpserver.Server
}

func boot(t *testing.T, mode tools.Mode, cfg mcpserver.Config) *env {
	t.Helper()
	return bootMode(t, mode, cfg)
}

func bootTB(tb testing.TB) *env { return bootMode(tb, tools.Native, mcpserver.Config{}) }

func bootMode(t testing.TB, mode tools.Mode, cfg mcpserver.Config) *env {
	t.Helper()
	h := host.New()
	root := h.Root()
	if _, err := root.Plugin(systemprompt.Plugin, nil); err != nil {
		t.Fatal(err)
	}
	if mode != tools.Native {
		if _, err := root.Plugin(isolated.Plugin, nil); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := root.Plugin(codemode.Plugin, tools.Config{Mode: mode}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{h: h, root: root, reg: reg}
	register(t, root, reg, echoTool("echo"))
	e.srv, err = mcpserver.New(root, reg, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		h.Close()
	})
	return e
}

func register(t testing.TB, c *host.Context, reg *tools.Registry, d tools.Definition) host.Disposer {
	t.Helper()
	off, err := reg.Register(c, d)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

type echoArgs struct {
	Text string `json:"text" dsh:"required" desc:"what to echo"`
}

func echoTool(name string) tools.Definition {
	return tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{
		Name: name, Description: "Echo a text.",
		Execute: func(ctx context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(a.Text), nil
		},
	})
}

// connect opens a go-sdk client session to the server over an in-memory
// transport.
func connect(t *testing.T, e *env, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	cs, _ := connect2(t, e, opts)
	return cs
}

// connect2 also returns the server's side of the session.
func connect2(t *testing.T, e *env, opts *mcp.ClientOptions) (*mcp.ClientSession, *mcpserver.Session) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := e.srv.Connect(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, ss
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

func text(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func errCode(r *mcp.CallToolResult) string {
	m, _ := r.Meta[mcpserver.MetaError].(map[string]any)
	s, _ := m["code"].(string)
	return s
}

// waitFor polls cond after each tools/list_changed notification (the
// notifications channel) until it holds, or fails after the budget.
func waitFor(t *testing.T, changed <-chan struct{}, cond func() bool) {
	t.Helper()
	deadline := time.After(budget)
	for !cond() {
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("condition not reached after tools/list_changed notifications")
		}
	}
}

func listChanged() (*mcp.ClientOptions, <-chan struct{}) {
	ch := make(chan struct{}, 100)
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case ch <- struct{}{}:
		default:
		}
	}}, ch
}

func TestM3_EachSessionIsItsOwnAgentScope(t *testing.T) {
	var mu sync.Mutex
	scopes := map[host.ScopeKey]*host.Context{}
	var e *env
	e = boot(t, tools.Native, mcpserver.Config{OnSession: func(scope *host.Context, info mcpserver.SessionInfo) error {
		mu.Lock()
		scopes[info.Scope] = scope
		n := len(scopes)
		mu.Unlock()
		// Each session gets a tool of its own, through its scope.
		_, err := e.reg.Register(scope, echoTool(fmt.Sprintf("mine_%d", n)))
		return err
	}})
	seen := make(chan tools.Call, 10)
	if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		seen <- tools.Call{Name: x.Name(), Agent: x.Agent()}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	a, sa := connect2(t, e, nil)
	b := connect(t, e, nil)
	if got := toolNames(t, a); !slices.Equal(got, []string{"echo", "mine_1"}) {
		t.Errorf("session a sees %v", got)
	}
	if got := toolNames(t, b); !slices.Equal(got, []string{"echo", "mine_2"}) {
		t.Errorf("session b sees %v", got)
	}
	// b cannot call a's tool: the pipeline resolves it for b's agent.
	if r := call(t, b, "mine_1", map[string]any{"text": "x"}); !r.IsError {
		t.Errorf("b called a's tool: %v", text(r))
	}
	<-seen
	if r := call(t, a, "mine_1", map[string]any{"text": "hi"}); r.IsError || text(r) != "hi" {
		t.Errorf("a's own tool: %v %q", r.IsError, text(r))
	}
	c := <-seen
	if len(e.srv.Sessions()) != 2 {
		t.Fatalf("sessions %v", e.srv.Sessions())
	}
	mu.Lock()
	scopeA := scopes[c.Agent]
	mu.Unlock()
	if scopeA == nil {
		t.Fatalf("the call ran for agent %q, not a session's scope", c.Agent)
	}
	// The client leaves: its scope and its tool go with it.
	a.Close()
	sa.Wait()
	if st := scopeA.Fiber().State(); st != host.Disposed {
		t.Fatalf("the session's scope is %v after the client left", st)
	}
	if _, ok := e.reg.Get("mine_1", c.Agent); ok {
		t.Error("the session's tool outlived the session")
	}
	if got := e.srv.Sessions(); len(got) != 1 {
		t.Errorf("sessions after a left: %v", got)
	}
}

func TestM3_ToolListFollowsRegistrations(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	opts, changed := listChanged()
	cs := connect(t, e, opts)
	off := register(t, e.root, e.reg, echoTool("later"))
	waitFor(t, changed, func() bool { return slices.Contains(toolNames(t, cs), "later") })
	if err := off(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return !slices.Contains(toolNames(t, cs), "later") })
}

func TestM3_RestrictionOfTheSessionScopeNarrowsItsList(t *testing.T) {
	var e *env
	e = boot(t, tools.Native, mcpserver.Config{OnSession: func(scope *host.Context, _ mcpserver.SessionInfo) error {
		_, err := e.reg.Restrict(scope, tools.Restriction{Deny: []string{"echo"}})
		return err
	}})
	register(t, e.root, e.reg, echoTool("other"))
	cs := connect(t, e, nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"other"}) {
		t.Errorf("restricted session sees %v", got)
	}
	if r := call(t, cs, "echo", map[string]any{"text": "x"}); !r.IsError || errCode(r) != string(tools.CodeUnknownTool) {
		t.Errorf("restricted tool: isError=%v code=%q", r.IsError, errCode(r))
	}
}

func TestM3_EveryToolsCallRunsTheFullPipeline(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	var mu sync.Mutex
	var stages []string
	note := func(s string) { mu.Lock(); stages = append(stages, s); mu.Unlock() }
	must := func(_ host.Disposer, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		note("pre:" + x.Name())
		if x.Agent() == "" {
			return tools.Denied("no agent"), nil
		}
		return next(ctx)
	}))
	must(e.reg.Guard(e.root, func(x *tools.Execution) error {
		note("guard")
		if x.Arg("text").String() == "forbidden" {
			return tools.NewError(tools.CodeDenied, "NoForbidden", "forbidden text")
		}
		return nil
	}))
	must(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
		note("execute")
		return next(ctx)
	}))
	must(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next events.Next[tools.PostDecision]) (tools.PostDecision, error) {
		note("post")
		return tools.PostDecision{Kind: tools.Accept, AdditionalContext: "remember this"}, nil
	}))
	must(host.On(e.root, tools.ResultEvent, func(ctx context.Context, n tools.ResultNotice) error {
		note("result")
		return nil
	}))
	cs := connect(t, e, nil)

	r := call(t, cs, "echo", map[string]any{"text": "hi"})
	if r.IsError || text(r) != "hi" {
		t.Fatalf("allowed call: isError=%v %q", r.IsError, text(r))
	}
	if got := r.Meta[mcpserver.MetaAdditionalContext]; fmt.Sprint(got) != "[remember this]" {
		t.Errorf("additional context in _meta: %v", got)
	}
	mu.Lock()
	if got := strings.Join(stages, ","); got != "pre:echo,guard,execute,post,result" {
		t.Errorf("stages %s", got)
	}
	stages = nil
	mu.Unlock()

	r = call(t, cs, "echo", map[string]any{"text": "forbidden"})
	if !r.IsError || errCode(r) != string(tools.CodeDenied) || !strings.Contains(text(r), "forbidden text") {
		t.Errorf("guarded call: isError=%v code=%q %q", r.IsError, errCode(r), text(r))
	}
	if m, _ := r.Meta[mcpserver.MetaError].(map[string]any); m["name"] != "NoForbidden" {
		t.Errorf("error name in _meta: %v", r.Meta)
	}
	// Invalid arguments are the pipeline's INVALID_ARGS, not a protocol error.
	r = call(t, cs, "echo", map[string]any{"text": 5})
	if !r.IsError || errCode(r) != string(tools.CodeInvalidArgs) {
		t.Errorf("invalid args: isError=%v code=%q", r.IsError, errCode(r))
	}
}

func TestM3_ResultContentMapsToMCP(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	register(t, e.root, e.reg, tools.Definition{
		Name: "blocks", Description: "Every kind of block.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{
				tools.Text("t"),
				tools.Image("aGk=", "image/png"),
				tools.Audio("aGk=", "audio/wav"),
				tools.EmbeddedText("file:///a", "text/plain", "body"),
				tools.EmbeddedBlob("file:///b", "application/octet-stream", "aGk="),
				tools.Link("file:///c", "c", "a file", "text/plain"),
			}}, nil
		},
	})
	cs := connect(t, e, nil)
	r := call(t, cs, "blocks", map[string]any{})
	if r.IsError || len(r.Content) != 6 {
		t.Fatalf("isError=%v %d blocks", r.IsError, len(r.Content))
	}
	b, _ := json.Marshal(r.Content)
	want := `[{"type":"text","text":"t"},{"type":"image","mimeType":"image/png","data":"aGk="},{"type":"audio","mimeType":"audio/wav","data":"aGk="},{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"body"}},{"type":"resource","resource":{"uri":"file:///b","mimeType":"application/octet-stream","blob":"aGk="}},{"type":"resource_link","mimeType":"text/plain","uri":"file:///c","name":"c","description":"a file"}]`
	if string(b) != want {
		t.Errorf("content\n got %s\nwant %s", b, want)
	}
	if r.Meta[mcpserver.MetaError] != nil {
		t.Errorf("a success carries an error class: %v", r.Meta)
	}
}

func TestM3_StructuredContentFromTheResultMeta(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	register(t, e.root, e.reg, tools.Definition{
		Name: "weather", Description: "Structured weather.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{
				Content: []tools.Content{tools.Text(`{"temp":21}`)},
				Meta:    json.RawMessage(`{"structuredContent":{"temp":21}}`),
			}, nil
		},
	})
	cs := connect(t, e, nil)
	r := call(t, cs, "weather", map[string]any{})
	if b, _ := json.Marshal(r.StructuredContent); string(b) != `{"temp":21}` {
		t.Errorf("structuredContent %s", b)
	}
	r = call(t, cs, "echo", map[string]any{"text": "x"})
	if r.StructuredContent != nil {
		t.Errorf("structuredContent without one: %v", r.StructuredContent)
	}
}

// askAll makes every call of tool ask.
func askAll(t *testing.T, e *env, tool string) {
	t.Helper()
	if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		if x.Name() == tool {
			return tools.Asked("it is sensitive"), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestM3_AnAskBecomesAnElicitationWhenTheClientSupportsIt(t *testing.T) {
	fallback := tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		return tools.AllowedOnce, errors.New("the fallback must not be asked")
	})
	e := boot(t, tools.Native, mcpserver.Config{Approver: fallback})
	askAll(t, e, "echo")
	answer := make(chan string, 1)
	asked := make(chan *mcp.ElicitParams, 1)
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params
		return &mcp.ElicitResult{Action: <-answer}, nil
	}})
	for _, tc := range []struct {
		action, code string
	}{
		{"accept", ""},
		{"decline", string(tools.CodeApprovalRejected)},
		{"cancel", string(tools.CodeApprovalCancelled)},
	} {
		t.Run(tc.action, func(t *testing.T) {
			answer <- tc.action
			r := call(t, cs, "echo", map[string]any{"text": "hi"})
			p := <-asked
			if p.Mode != "form" || !strings.Contains(p.Message, "echo") || !strings.Contains(p.Message, "it is sensitive") || !strings.Contains(p.Message, "hi") {
				t.Errorf("elicitation message %q (mode %q)", p.Message, p.Mode)
			}
			if m, _ := p.Meta[mcpserver.MetaApproval].(map[string]any); m["tool"] != "echo" || m["reason"] != "it is sensitive" {
				t.Errorf("elicitation _meta %v", p.Meta)
			}
			if tc.code == "" {
				if r.IsError || text(r) != "hi" {
					t.Errorf("accepted call: isError=%v %q", r.IsError, text(r))
				}
				return
			}
			if !r.IsError || errCode(r) != tc.code {
				t.Errorf("isError=%v code=%q, want %s", r.IsError, errCode(r), tc.code)
			}
		})
	}
}

func TestM3_AnAskGoesToTheApprovalServiceWhenTheClientCannotElicit(t *testing.T) {
	var got []tools.ApprovalRequest
	var mu sync.Mutex
	approver := tools.ApproverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		if req.Execution.Arg("text").String() == "yes" {
			return tools.AllowedOnce, nil
		}
		return tools.Rejected, nil
	})
	t.Run("Config.Approver", func(t *testing.T) {
		e := boot(t, tools.Native, mcpserver.Config{Approver: approver})
		askAll(t, e, "echo")
		cs := connect(t, e, nil)
		if r := call(t, cs, "echo", map[string]any{"text": "yes"}); r.IsError {
			t.Errorf("approved: %q", text(r))
		}
		if r := call(t, cs, "echo", map[string]any{"text": "no"}); errCode(r) != string(tools.CodeApprovalRejected) {
			t.Errorf("rejected: code %q", errCode(r))
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) != 2 || got[0].Agent != e.srv.Sessions()[0] {
			t.Errorf("approver asked %d times, agent %v", len(got), got)
		}
	})
	t.Run("the approval service present at New", func(t *testing.T) {
		h := host.New()
		defer h.Close()
		root := h.Root()
		root.Plugin(systemprompt.Plugin, nil)
		root.Plugin(tools.Plugin, nil)
		reg, _ := tools.Service.Get(root)
		register(t, root, reg, echoTool("echo"))
		if _, err := tools.ApprovalService.Provide(root, approver); err != nil {
			t.Fatal(err)
		}
		srv, err := mcpserver.New(root, reg, mcpserver.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		e := &env{h: h, root: root, reg: reg, srv: srv}
		askAll(t, e, "echo")
		cs := connect(t, e, nil)
		if r := call(t, cs, "echo", map[string]any{"text": "yes"}); r.IsError {
			t.Errorf("approved: %q", text(r))
		}
		cs.Close()
	})
	t.Run("none", func(t *testing.T) {
		e := boot(t, tools.Native, mcpserver.Config{})
		askAll(t, e, "echo")
		cs := connect(t, e, nil)
		if r := call(t, cs, "echo", map[string]any{"text": "yes"}); errCode(r) != string(tools.CodeApprovalUnavailable) {
			t.Errorf("no approver: code %q", errCode(r))
		}
	})
}

func TestM3_AHostileElicitationAnswerFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer func() (*mcp.ElicitResult, error)
	}{
		{"error", func() (*mcp.ElicitResult, error) { return nil, errors.New("the client broke") }},
		{"unknown action", func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{Action: "maybe\x1b[2J"}, nil }},
		{"empty action", func() (*mcp.ElicitResult, error) { return &mcp.ElicitResult{}, nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := boot(t, tools.Native, mcpserver.Config{})
			askAll(t, e, "echo")
			cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return tc.answer()
			}})
			r := call(t, cs, "echo", map[string]any{"text": "hi"})
			if !r.IsError || errCode(r) != string(tools.CodeApprovalFailed) || strings.Contains(text(r), "\x1b") {
				t.Errorf("isError=%v code=%q %q", r.IsError, errCode(r), text(r))
			}
		})
	}
}

func TestM3_AnElicitationWaitsNoLongerThanTheCall(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	askAll(t, e, "echo")
	release := make(chan struct{})
	defer close(release)
	asked := make(chan struct{}, 1)
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return &mcp.ElicitResult{Action: "cancel"}, nil
		}
	}})
	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan *mcp.CallToolResult, 1)
	errs := make(chan error, 1)
	go func() {
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
		results <- r
		errs <- err
	}()
	seen := make(chan struct{})
	off, _ := host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		close(seen)
		return nil
	})
	defer off()
	<-asked
	cancel() // the client gives up: notifications/cancelled reaches the pipeline
	<-results
	<-errs
	select {
	case <-seen:
	case <-time.After(budget):
		t.Fatal("the cancelled call never produced its result")
	}
}

func TestM3_CodeModeIsServedAsRunCodeWithTheSDK(t *testing.T) {
	e := boot(t, tools.Code, mcpserver.Config{})
	subAgents := make(chan host.ScopeKey, 10)
	if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		if x.Name() == "echo" {
			subAgents <- x.Agent()
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, e, nil)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != codemode.RunCodeName {
		t.Fatalf("code mode lists %v", list.Tools)
	}
	if d := list.Tools[0].Description; !strings.Contains(d, "echo(") || !strings.Contains(d, "declare const tools") {
		t.Errorf("run_code's description lacks the SDK:\n%s", d)
	}
	r := call(t, cs, codemode.RunCodeName, map[string]any{"code": `const a = await tools.echo({text: "one"}); return a + "+two";`})
	if r.IsError || !strings.Contains(text(r), "one+two") {
		t.Fatalf("run_code: isError=%v %q", r.IsError, text(r))
	}
	if got := <-subAgents; got != e.srv.Sessions()[0] {
		t.Errorf("the sub-call ran for agent %q, not the session", got)
	}
	// A direct call to an end tool is not offered in code mode.
	if r := call(t, cs, "echo", map[string]any{"text": "x"}); !r.IsError {
		t.Errorf("direct echo in code mode succeeded")
	}
	// The SDK follows registrations.
	opts, changed := listChanged()
	cs2 := connect(t, e, opts)
	register(t, e.root, e.reg, echoTool("shout"))
	waitFor(t, changed, func() bool {
		res, err := cs2.ListTools(ctx, nil)
		return err == nil && len(res.Tools) == 1 && strings.Contains(res.Tools[0].Description, "shout(")
	})
}

func TestM3_ServedOverStreamableHTTPOneScopePerSession(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	h, err := e.srv.Handler(nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	agents := make(chan host.ScopeKey, 10)
	host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		agents <- n.Execution().Agent()
		return nil
	})
	register(t, e.root, e.reg, echoTool("asky"))
	askAll(t, e, "asky")
	elicited := make(chan struct{}, 2)
	var sessions []*mcp.ClientSession
	for range 2 {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-client"}, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited <- struct{}{}
			return &mcp.ElicitResult{Action: "accept"}, nil
		}}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: hs.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, cs)
		if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
			t.Errorf("negotiated %q", v)
		}
		if r := call(t, cs, "echo", map[string]any{"text": "over http"}); r.IsError || text(r) != "over http" {
			t.Errorf("http call: %v %q", r.IsError, text(r))
		}
	}
	a1, a2 := <-agents, <-agents
	if r := call(t, sessions[1], "asky", map[string]any{"text": "asked"}); r.IsError || len(elicited) != 1 {
		t.Errorf("ask over http: isError=%v %q, %d elicitations", r.IsError, text(r), len(elicited))
	}
	<-agents
	if a1 == a2 || a1 == "" {
		t.Errorf("two HTTP sessions ran as agents %q and %q", a1, a2)
	}
	if n := len(e.srv.Sessions()); n != 2 {
		t.Errorf("%d live sessions", n)
	}
	for _, cs := range sessions {
		cs.Close() // DELETE ends the session
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(e.srv.Sessions()); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
}

func TestM3_StatelessHTTPIsRefused(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	if _, err := e.srv.Handler(&mcp.StreamableHTTPOptions{Stateless: true}); err == nil {
		t.Error("a stateless handler was made")
	}
}

func TestM3_ClosingLeavesNoSessionScopeOrGoroutine(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	block := make(chan struct{})
	register(t, e.root, e.reg, tools.Definition{
		Name: "hang", Description: "Waits for its context.",
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			close(block)
			<-ctx.Done()
			return tools.Output{}, ctx.Err()
		},
	})
	var scope *host.Context
	var mu sync.Mutex
	e.srv.Close()
	srv, err := mcpserver.New(e.root, e.reg, mcpserver.Config{OnSession: func(c *host.Context, _ mcpserver.SessionInfo) error {
		mu.Lock()
		scope = c
		mu.Unlock()
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	cs := connect(t, e, nil)
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "hang", Arguments: map[string]any{}})
		done <- err
	}()
	<-block
	// Closing the server with a call in flight: the call is cancelled and
	// waited for, the scope disposed, no goroutine of the server is left.
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	<-done
	mu.Lock()
	if st := scope.Fiber().State(); st != host.Disposed {
		t.Errorf("scope %v after Close", st)
	}
	mu.Unlock()
	if n := len(srv.Sessions()); n != 0 {
		t.Errorf("%d sessions after Close", n)
	}
	// A closed server refuses sessions.
	_, st := mcp.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st); !errors.Is(err, mcpserver.ErrClosed) {
		t.Errorf("Connect after Close: %v", err)
	}
	cs.Close()
	goleak.VerifyNone(t)
}

func TestM3_DisposingThePluginEndsEverySession(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, nil)
	reg, _ := tools.Service.Get(root)
	register(t, root, reg, echoTool("echo"))
	f, err := root.Plugin(mcpserver.Plugin, mcpserver.Config{})
	if err == nil {
		err = f.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	srv, err := mcpserver.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{h: h, root: root, reg: reg, srv: srv}
	cs, ss := connect2(t, e, nil)
	if r := call(t, cs, "echo", map[string]any{"text": "hi"}); r.IsError {
		t.Fatalf("call: %q", text(r))
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	ss.Wait()
	if len(srv.Sessions()) != 0 {
		t.Errorf("sessions after dispose: %v", srv.Sessions())
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err == nil {
		t.Error("the client could still call after the plugin was disposed")
	}
	if _, ok := tools.ApprovalService.Lookup(root); ok {
		t.Error("the approval router outlived the plugin")
	}
}

func TestM3_ARestrictionAddedLaterNarrowsTheLiveList(t *testing.T) {
	scopes := make(chan *host.Context, 1)
	e := boot(t, tools.Native, mcpserver.Config{OnSession: func(scope *host.Context, _ mcpserver.SessionInfo) error {
		scopes <- scope
		return nil
	}})
	opts, changed := listChanged()
	cs := connect(t, e, opts)
	scope := <-scopes
	if got := toolNames(t, cs); !slices.Equal(got, []string{"echo"}) {
		t.Fatalf("before: %v", got)
	}
	lift, err := e.reg.Restrict(scope, tools.Restriction{Deny: []string{"echo"}})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return len(toolNames(t, cs)) == 0 })
	if err := lift(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return slices.Equal(toolNames(t, cs), []string{"echo"}) })
}

// A client that never answers: the elicitation's own bound answers
// unavailable, and the session stays usable.
func TestM3_AnUnansweredElicitationIsBoundedByElicitationTimeout(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{ElicitationTimeout: 20 * time.Millisecond})
	askAll(t, e, "asky")
	register(t, e.root, e.reg, echoTool("asky"))
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		<-ctx.Done() // never answers
		return nil, ctx.Err()
	}})
	r := call(t, cs, "asky", map[string]any{"text": "hi"})
	if !r.IsError || errCode(r) != string(tools.CodeApprovalUnavailable) {
		t.Errorf("isError=%v code=%q %q", r.IsError, errCode(r), text(r))
	}
	if r := call(t, cs, "echo", map[string]any{"text": "still here"}); r.IsError {
		t.Errorf("the session broke: %q", text(r))
	}
	if _, err := mcpserver.New(e.root, e.reg, mcpserver.Config{ElicitationTimeout: -1}); err == nil {
		t.Error("a negative ElicitationTimeout was accepted")
	}
}
