package guides_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
)

func Example_embedding() {
	workspace, _ := os.MkdirTemp("", "guide-")
	defer os.RemoveAll(workspace)
	_ = os.WriteFile(filepath.Join(workspace, "TODO"), []byte("fix the build\n"), 0o644)

	// The host logs through zerolog; every plugin's lines carry "plugin".
	// (Stdout and no timestamp here, so that the example's output shows
	// them; a runtime writes to stderr or a file.)
	logger := zerolog.New(os.Stdout).Level(zerolog.InfoLevel)
	h := host.New(host.WithLogger(logger))
	root := h.Root()

	answer := approval.AnswerFunc(func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		// Ask a person here (a UI, approval.NewTerminal, an approval.Queue);
		// return once ctx is done.
		return tools.Rejected, nil
	})
	for _, p := range []struct {
		plugin host.Plugin
		config any
	}{
		{systemprompt.Plugin, systemprompt.Config{}},
		{tools.Plugin, tools.Config{Mode: tools.Native}},
		{approval.Plugin, approval.Config{Answerer: answer, Timeout: 5 * time.Minute}},
		{timeoutpolicy.Plugin, timeoutpolicy.Config{Default: 2 * time.Minute}},
		{toolfs.Plugin, toolfs.Config{Root: workspace}}, // read, write, edit
	} {
		if _, err := root.Plugin(p.plugin, p.config); err != nil {
			panic(err) // the error says whether it failed or waits for a service
		}
	}
	reg, _ := tools.Service.Get(root)
	sp, _ := systemprompt.ServiceKey.Get(root)
	_, _ = sp.Section(root, systemprompt.StaticSection("persona", 0, "You are a careful coding agent."))

	// Log every final result, exactly once per call, whoever made it.
	_, _ = host.On(root, tools.ResultEvent, func(ctx context.Context, n tools.ResultNotice) error {
		e, r := n.Execution(), n.Result()
		ev := logger.Info().Str("agent", string(e.Agent())).Str("call", e.CallID()).Str("tool", e.Name())
		if r.IsError && r.Error != nil {
			ev = ev.Str("code", string(r.Error.Code))
		}
		ev.Msg("tool result")
		return nil
	})

	agent, err := root.Scope("ada")
	if err != nil {
		panic(err)
	}

	// A tool only this agent has.
	type NoteArgs struct {
		Text string `json:"text" desc:"What to remember." dsh:"required"`
	}
	var notes []string
	remember, err := tools.Define(tools.TypedTool[NoteArgs, tools.Output]{
		Name:        "remember",
		Description: "Remember a note for the rest of the session.",
		Execute: func(ctx context.Context, a NoteArgs, _ *tools.Execution) (tools.Output, error) {
			notes = append(notes, a.Text)
			return tools.Output{
				Content:           []tools.Content{tools.Text("noted")},
				AdditionalContext: []string{"Notes so far: " + strings.Join(notes, "; ")},
			}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	if _, err := reg.Register(agent, remember); err != nil {
		panic(err)
	}
	// This agent reads but does not write.
	if _, err := reg.Restrict(agent, tools.Restriction{Deny: []string{"write", "edit"}}); err != nil {
		panic(err)
	}

	ctx := context.Background()
	prompt, err := sp.Assemble(ctx, agent.ScopeKey())
	if err != nil {
		panic(err) // an *systemprompt.AssemblyError saying what to fix
	}
	fmt.Printf("system: %q\n", prompt.Text())
	for _, t := range prompt.Tools {
		// Hand t.Name, t.Description and t.Parameters (a JSON Schema) to the
		// model as a function definition.
		fmt.Println("tool:", t.Name)
	}

	// One model step: the tool calls of one assistant message, in order.
	turn, cancel := context.WithCancel(ctx) // cancel when the user interrupts
	defer cancel()
	calls := []tools.Call{
		{ID: "call_1", Name: "read", Arguments: json.RawMessage(`{"path":"TODO"}`)},
		{ID: "call_2", Name: "remember", Arguments: json.RawMessage(`{"text":"the build is red"}`)},
		{ID: "call_3", Name: "write", Arguments: json.RawMessage(`{"path":"TODO","content":""}`)},
	}
	for i := range calls {
		calls[i].Agent = agent.ScopeKey()
	}
	// One result per call, in model order, never an error. Calls whose tools
	// declare them parallel-safe run their bodies at the same time.
	results := reg.ExecuteBatch(turn, calls, tools.BatchOptions{})
	for _, res := range results {
		out, _ := json.Marshal(res) // the tool message for res.CallID
		fmt.Println(string(out))
	}
	// Additional context goes after ALL the step's tool results, so every
	// tool call stays adjacent to its result.
	for _, text := range tools.BatchContext(results) {
		fmt.Println("context:", text)
	}

	if err := agent.Fiber().Dispose(); err != nil { // the agent's tools and restriction go
		panic(err)
	}
	_, ok := reg.Get("remember", "ada")
	fmt.Println("remember after dispose:", ok)
	if err := h.Close(); err != nil {
		panic(err)
	}
	// Output:
	// system: "You are a careful coding agent."
	// tool: read
	// tool: remember
	// {"level":"info","agent":"ada","call":"call_1","tool":"read","message":"tool result"}
	// {"level":"info","agent":"ada","call":"call_2","tool":"remember","message":"tool result"}
	// {"level":"info","agent":"ada","call":"call_3","tool":"write","code":"UNKNOWN_TOOL","message":"tool result"}
	// {"callId":"call_1","content":[{"type":"text","text":"fix the build\n"}],"isError":false,"value":{"text":"fix the build\n"}}
	// {"callId":"call_2","content":[{"type":"text","text":"noted"}],"isError":false,"additionalContext":["Notes so far: the build is red"]}
	// {"callId":"call_3","content":[{"type":"text","text":"Unknown tool \"write\""}],"isError":true,"error":{"name":"UnknownTool","code":"UNKNOWN_TOOL"}}
	// context: Notes so far: the build is red
	// remember after dispose: false
}

func Example_embeddingCancel() {
	h := host.New()
	defer h.Close()
	root := h.Root()
	_, _ = root.Plugin(systemprompt.Plugin, nil)
	_, _ = root.Plugin(tools.Plugin, tools.Config{})
	reg, _ := tools.Service.Get(root)
	_, _ = reg.Register(root, tools.Definition{
		Name:        "wait",
		Description: "Wait until cancelled.",
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			<-ctx.Done() // a well-behaved body returns once ctx is done
			return tools.Output{}, ctx.Err()
		},
	})

	code := func(r tools.Result) string {
		if r.Error == nil {
			return fmt.Sprint("isError=", r.IsError)
		}
		return string(r.Error.Code)
	}
	ctx := context.Background()

	// Cancelled before the call: the body never starts.
	done, cancel := context.WithCancel(ctx)
	cancel()
	fmt.Println(code(reg.Execute(done, tools.Call{ID: "1", Name: "wait"})))

	// Cancelled while the body runs: reported once the body has returned.
	turn, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	fmt.Println(code(reg.Execute(turn, tools.Call{ID: "2", Name: "wait"})))

	// Failures are results too, never Go errors.
	fmt.Println(code(reg.Execute(ctx, tools.Call{ID: "3", Name: "nope"})))
	fmt.Println(code(reg.Execute(ctx, tools.Call{ID: "4", Name: "wait", Arguments: json.RawMessage(`{"n":1e400}`)})))
	// Output:
	// ABORTED_BEFORE_DISPATCH
	// ABORTED
	// UNKNOWN_TOOL
	// INVALID_ARGS
}

func Example_embeddingApproval() {
	h := host.New()
	defer h.Close()
	root := h.Root()

	// A Queue hands each ask to your UI as a *approval.Pending.
	queue := approval.NewQueue()
	_, _ = root.Plugin(systemprompt.Plugin, nil)
	_, _ = root.Plugin(tools.Plugin, tools.Config{})
	_, _ = root.Plugin(approval.Plugin, approval.Config{Answerer: queue})
	reg, _ := tools.Service.Get(root)
	_, _ = reg.Register(root, tools.Definition{
		Name:        "deploy",
		Description: "Deploy the service.",
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("deployed")}}, nil
		},
	})
	// A policy that asks before every deploy.
	_, _ = host.OnWaterfall(root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if e.Name() == "deploy" {
			return tools.Asked("deploys reach production"), nil
		}
		return next(ctx)
	})

	// The UI side: show the request, answer it.
	go func() {
		p := <-queue.Requests()
		fmt.Printf("ask: %s wants %s (%s)\n", p.Request.Agent, p.Request.Tool, p.Request.Reason)
		_ = p.Respond(tools.AllowedOnce)
	}()

	ada, _ := root.Scope("ada")
	r := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "deploy", Agent: ada.ScopeKey()})
	fmt.Println(r.IsError, r.Content[0].Text)
	// Output:
	// ask: ada wants deploy (deploys reach production)
	// false deployed
}
