package mcpserver_test

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A registry with one tool and a guard, served to a go-sdk client over an
// in-memory transport: the client lists the tool and its calls run the
// pipeline, guard included.
func Example() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, nil)
	reg, _ := tools.Service.Get(root)
	reg.Register(root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{
		Name: "echo", Description: "Echo a text.",
		Execute: func(ctx context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(a.Text), nil
		},
	}))
	reg.Guard(root, func(e *tools.Execution) error {
		if e.Arg("text").String() == "secret" {
			return fmt.Errorf("no secrets")
		}
		return nil
	})

	srv, _ := mcpserver.New(root, reg, mcpserver.Config{})
	defer srv.Close()
	clientT, serverT := mcp.NewInMemoryTransports()
	srv.Connect(ctx, serverT)
	cs, _ := mcp.NewClient(&mcp.Implementation{Name: "client"}, nil).Connect(ctx, clientT, nil)
	defer cs.Close()

	list, _ := cs.ListTools(ctx, nil)
	fmt.Println("tools:", list.Tools[0].Name)
	r, _ := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
	fmt.Println(r.Content[0].(*mcp.TextContent).Text)
	r, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "secret"}})
	fmt.Println(r.IsError, r.Meta[mcpserver.MetaError], r.Content[0].(*mcp.TextContent).Text)
	// Output:
	// tools: echo
	// hello
	// true map[code:DENIED name:GuardDenied] Tool call denied: no secrets
}
