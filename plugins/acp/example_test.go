package acp_test

import (
	"context"
	"encoding/json"
	"fmt"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

// printingPeer stands in for *acpsdk.AgentSideConnection: it prints each
// update as the client would receive it, and allows every ask once.
type printingPeer struct{}

func (printingPeer) SessionUpdate(_ context.Context, n acpsdk.SessionNotification) error {
	b, _ := json.Marshal(n.Update)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	delete(m, "rawInput")
	delete(m, "rawOutput")
	b, _ = json.Marshal(m)
	fmt.Println(string(b))
	return nil
}

func (printingPeer) RequestPermission(_ context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	fmt.Printf("request_permission %s: %s\n", r.ToolCall.ToolCallId, *r.ToolCall.Title)
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acp.OptionAllowOnce)}, nil
}

type GreetArgs struct {
	Name string `json:"name" dsh:"required"`
}

func Example() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(tools.Plugin, nil)
	root.Plugin(acp.Plugin, acp.Config{Approval: true}) // asks go to request_permission
	reg, _ := tools.Service.Get(root)
	bridge, _ := acp.Service.Get(root)

	greet, _ := tools.Define(tools.TypedTool[GreetArgs, tools.Output]{
		Name: "greet", Description: "Greet someone.",
		Execute: func(ctx context.Context, a GreetArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput("hello, " + a.Name), nil
		},
		PresentCall: func(a GreetArgs) tools.CallView {
			return tools.GenericCall{Title: "Greet " + a.Name, Kind: "other"}
		},
	})
	reg.Register(root, greet)
	host.OnWaterfall(root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		return tools.Asked("greetings need approval"), nil
	})

	// On session/new: attach the agent's scope to the ACP session (the
	// peer is the SDK's *acpsdk.AgentSideConnection in a real agent).
	agent, _ := root.Scope("agent-1")
	session, _ := bridge.Attach(agent.ScopeKey(), printingPeer{}, "sess-1", acp.SessionOptions{})
	defer session.Close()

	// On session/prompt: run the model's calls, then flush before answering.
	reg.Execute(ctx, tools.Call{ID: "c1", Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`), Agent: "agent-1"})
	if err := session.Flush(ctx); err != nil {
		fmt.Println(err)
	}
	// Output:
	// {"kind":"other","sessionUpdate":"tool_call","status":"pending","title":"Greet Ada","toolCallId":"c1"}
	// request_permission c1: Greet Ada
	// {"sessionUpdate":"tool_call_update","status":"in_progress","toolCallId":"c1"}
	// {"content":[{"content":{"text":"hello, Ada","type":"text"},"type":"content"}],"sessionUpdate":"tool_call_update","status":"completed","toolCallId":"c1"}
}
