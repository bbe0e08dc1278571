package mcpclient_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/host"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Mount an MCP server (here one in the same process, over in-memory
// transports; a real deployment sets Command or URL instead of Dial) and
// call its tool through the registry.
func Example() {
	// The server: one tool, "greet".
	server := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	type args struct {
		Name string `json:"name"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "greet", Description: "Greet someone."},
		func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello, " + a.Name}}}, nil, nil
		})

	h := host.New()
	root := h.Root()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		panic(err)
	}
	reg, _ := tools.Service.Get(root)

	f, err := root.Plugin(mcpclient.Plugin, mcpclient.Config{
		Name: "greeter",
		Dial: func(ctx context.Context) (mcp.Transport, error) {
			client, srv := mcp.NewInMemoryTransports()
			if _, err := server.Connect(ctx, srv, nil); err != nil {
				return nil, err
			}
			return client, nil
		},
	})
	if err != nil {
		panic(err)
	}
	for _, t := range reg.Visible("") {
		fmt.Println("tool:", t.Name())
	}
	res := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "mcp__greeter__greet", Arguments: json.RawMessage(`{"name":"Ada"}`)})
	fmt.Println(res.Content[0].Text)

	_ = f.Dispose() // the tools go, the session closes
	fmt.Println("tools left:", len(reg.Visible("")))
	_ = root.Fiber().Dispose()
	// Output:
	// tool: mcp__greeter__greet
	// hello, Ada
	// tools left: 0
}
