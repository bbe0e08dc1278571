package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// seedFiles is the workspace the session starts in.
var seedFiles = map[string]string{
	"README.md":  "# greeter\n\nA tiny Go program that greets.\n",
	"main.go":    "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello\")\n}\n",
	"config.txt": "user=admin\npassword=hunter2\n",
	".env":       "API_KEY=do-not-leak\n",
	"build/out":  "stale build output\n",
}

// Run plays one scripted session.
func Run(ctx context.Context, o Options) error {
	script, err := parseScript(o.Script)
	if err != nil {
		return err
	}
	ws := o.Workspace
	if ws == "" {
		ws, err = os.MkdirTemp("", "dsh-coding-agent-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(ws)
	}
	for name, body := range seedFiles {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return err
		}
	}
	// The session log is kept outside the workspace: the session's tools
	// (confined to the workspace) cannot alter it, and it outlives a
	// temporary workspace, which is removed at exit.
	var lf *os.File
	if o.LogPath == "" {
		lf, err = os.CreateTemp("", "dsh-coding-agent-session-*.jsonl")
	} else {
		lf, err = os.Create(o.LogPath)
	}
	if err != nil {
		return err
	}
	defer lf.Close()
	logPath := lf.Name()
	log := &sessionLog{w: lf}

	zl := zerolog.New(io.Discard)
	if o.Debug != nil {
		zl = zerolog.New(zerolog.ConsoleWriter{Out: o.Debug}).Level(zerolog.DebugLevel)
	}
	h := host.New(host.WithLogger(zl))
	defer h.Close()
	root := h.Root()

	answerer, err := answererFor(o)
	if err != nil {
		return err
	}
	// The agent runtime's session log, where the registry records Code
	// Mode sub-calls.
	if _, err := tools.SessionLogService.Provide(root, log); err != nil {
		return err
	}
	toolsFiber, err := load(root, []plugin{
		{isolated.Plugin, coderuntime.Config{Timeout: 10 * time.Second}},
		{systemprompt.Plugin, systemprompt.Config{}},
		{codemode.Plugin, tools.Config{Mode: tools.Native}}, // the registry, with Code Mode (the session switches to it)
		{approval.Plugin, approval.Config{Answerer: answerer}},
		{timeoutpolicy.Plugin, timeoutpolicy.Config{}},
		{toolfs.Plugin, toolfs.Config{Root: ws}},
		{toolbash.Plugin, toolbash.Config{Dir: ws}},
		{demoPolicy, nil},
	})
	if err != nil {
		return err
	}
	// An observer of tools/result: Code Mode sub-calls (those with a parent)
	// are shown as they complete, inside their run_code call.
	if _, err := host.On(root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		e := n.Execution()
		if e.Parent().IsZero() {
			return nil
		}
		status := "ok"
		if r := n.Result(); r.IsError && r.Error != nil {
			status = "error " + string(r.Error.Code)
		}
		fmt.Fprintf(o.Out, "  ↳ %s %s: %s\n", e.CallID(), e.Name(), status)
		return nil
	}); err != nil {
		return err
	}
	// The batch clock: when each call's body ran, shown after a turn with
	// several calls.
	tm := &timing{}
	if err := tm.watch(root); err != nil {
		return err
	}
	agent, err := root.Scope(host.ScopeKey(script.Agent))
	if err != nil {
		return err
	}
	s := &session{h: h, root: root, agent: agent, log: log, out: o.Out, toolsFiber: toolsFiber, timing: tm}
	fmt.Fprintf(o.Out, "workspace: %s\nsession log: %s\n", ws, logPath)
	played := 0
	for i, t := range script.Turns {
		played++
		concluded, err := s.turn(ctx, i+1, t)
		if err != nil {
			return err
		}
		if concluded {
			fmt.Fprintf(o.Out, "\n(the turn concluded: a tool asked to end it, so the model is not called again)\n")
			break
		}
	}
	fmt.Fprintf(o.Out, "\nsession over: %d turns, %d calls, %d log events\nsession log (kept): %s\n", played, s.calls, log.seq, logPath)
	return nil
}

type plugin struct {
	p   host.Plugin
	cfg any
}

// load loads the plugins in order and returns the tools plugin's fiber.
func load(root *host.Context, ps []plugin) (*host.Fiber, error) {
	var toolsFiber *host.Fiber
	for _, p := range ps {
		f, err := root.Plugin(p.p, p.cfg)
		if err != nil {
			return nil, err
		}
		if p.p == codemode.Plugin {
			toolsFiber = f
		}
	}
	return toolsFiber, nil
}

func answererFor(o Options) (approval.Answerer, error) {
	switch o.Approve {
	case "ask", "auto":
		// Whatever stdin is (a terminal, a pipe, a file, /dev/null), a
		// line read from it is the answer, and no line (end of input) is
		// no answer: unavailable, a denial. Nothing is allowed unasked.
		return approval.NewTerminal(o.Stdin, o.Out), nil
	case "yes", "no":
		outcome := tools.AllowedOnce
		if o.Approve == "no" {
			outcome = tools.Rejected
		}
		// Answer automatically, but show what a person would have seen.
		return approval.AnswerFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
			fmt.Fprint(o.Out, approval.Render(req))
			fmt.Fprintf(o.Out, "  -> %s (answered automatically: -approve=%s)\n", outcome, o.Approve)
			return outcome, nil
		}), nil
	}
	return nil, fmt.Errorf("-approve=%q: want auto, ask, yes or no", o.Approve)
}

type session struct {
	h          *host.Host
	root       *host.Context
	agent      *host.Context
	log        *sessionLog
	out        io.Writer
	toolsFiber *host.Fiber
	timing     *timing
	calls      int
}

func (s *session) registry() (*tools.Registry, error) {
	return tools.Service.Get(s.root)
}

// turn plays one assistant turn: its calls as one batch. It reports
// whether a result asked to conclude the turn.
func (s *session) turn(ctx context.Context, n int, t Turn) (concluded bool, err error) {
	if t.Mode != "" {
		if err := s.toolsFiber.Update(tools.Config{Mode: tools.Mode(t.Mode)}); err != nil {
			return false, fmt.Errorf("turn %d: switching tools mode to %s: %w", n, t.Mode, err)
		}
		fmt.Fprintf(s.out, "\n=== tools mode: %s ===\n", t.Mode)
	}
	sp, err := systemprompt.ServiceKey.Get(s.root)
	if err != nil {
		return false, err
	}
	agentKey := s.agent.ScopeKey()
	prompt, err := sp.Assemble(ctx, agentKey)
	if err != nil {
		return false, fmt.Errorf("turn %d: assembling the prompt: %w", n, err)
	}
	names := prompt.ToolNames()
	var sections []string
	for _, sec := range prompt.Sections {
		sections = append(sections, sec.Name)
	}
	if err := s.log.append("request/header", fmt.Sprintf("turn-%d", n), string(agentKey), "", map[string]any{"tools": names, "sections": sections}); err != nil {
		return false, err
	}
	fmt.Fprintf(s.out, "\n--- turn %d (model sees tools: %s)\n", n, strings.Join(names, ", "))
	fmt.Fprintf(s.out, "assistant: %s\n", t.Say)
	if err := s.log.append("assistant/message", fmt.Sprintf("turn-%d", n), string(agentKey), "", map[string]any{"text": t.Say, "calls": t.Calls}); err != nil {
		return false, err
	}
	reg, err := s.registry()
	if err != nil {
		return false, err
	}
	// The model's calls run as one batch, in model order: parallel-safe
	// calls (read) overlap, exclusive ones (bash, write, edit, run_code)
	// are barriers; policy and results stay in model order.
	calls := make([]tools.Call, len(t.Calls))
	class := make([]tools.Concurrency, len(t.Calls))
	for i, c := range t.Calls {
		s.calls++
		calls[i] = tools.Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Agent: agentKey}
		class[i] = reg.Concurrency(calls[i])
		fmt.Fprintf(s.out, "\n▶ %s %s (%s)\n", c.ID, c.Name, class[i])
		fmt.Fprint(s.out, cardtext.Call(c.Name, c.Arguments, reg.PresentCall(c.Name, agentKey, c.Arguments)))
		if err := s.log.append("tool/call", c.ID, string(agentKey), "", c); err != nil {
			return false, err
		}
	}
	s.timing.reset()
	start := time.Now()
	results := reg.ExecuteBatch(ctx, calls, tools.BatchOptions{})
	wall := time.Since(start)
	for i, res := range results {
		c := t.Calls[i]
		if err := s.log.append("tool/result", c.ID, string(agentKey), "", res); err != nil {
			return false, err
		}
		if len(calls) > 1 {
			fmt.Fprintf(s.out, "\n◀ %s %s\n", c.ID, c.Name)
		}
		view := reg.PresentResult(c.Name, agentKey, c.Arguments, res.Data())
		code := ""
		if res.Error != nil {
			code = string(res.Error.Code)
		}
		fmt.Fprint(s.out, cardtext.Result(view, res.Data(), code))
	}
	if len(calls) > 1 {
		s.timing.print(s.out, calls, class, wall)
	}
	// Additional context is appended after every tool result of the step,
	// keeping tool-call/result adjacency.
	for _, text := range tools.BatchContext(results) {
		fmt.Fprintf(s.out, "  (context for the model: %s)\n", text)
		if err := s.log.append("context/message", "", string(agentKey), "", map[string]string{"text": text}); err != nil {
			return false, err
		}
	}
	return tools.ConcludesTurn(results), nil
}
