package guides_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Example_readme is the embedding example of the top-level README.
func Example_readme() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(tools.Plugin, nil) // the registry, native mode
	reg, _ := tools.Service.Get(root)

	type GreetArgs struct {
		Name string `json:"name" jsonschema:"Who to greet"`
	}
	greet, _ := tools.Define(tools.TypedTool[GreetArgs, tools.Output]{
		Name: "greet", Description: "Greet someone.",
		Execute: func(ctx context.Context, a GreetArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput("hello, " + a.Name), nil
		},
	})
	agent, _ := root.Scope("agent-1") // everything registered through agent dies with it
	reg.Register(agent, greet)        // a tool for this agent only

	res := reg.Execute(ctx, tools.Call{ID: "c1", Name: "greet", Arguments: json.RawMessage(`{"name":"Ada"}`), Agent: "agent-1"})
	fmt.Println(res.Content[0].Text)
	res = reg.Execute(ctx, tools.Call{ID: "c2", Name: "greet", Arguments: json.RawMessage(`{}`), Agent: "agent-1"})
	fmt.Println(res.Error.Code)

	agent.Fiber().Dispose() // the tool is gone
	res = reg.Execute(ctx, tools.Call{ID: "c3", Name: "greet", Agent: "agent-1"})
	fmt.Println(res.Error.Code)
	// Output:
	// hello, Ada
	// INVALID_ARGS
	// UNKNOWN_TOOL
}
