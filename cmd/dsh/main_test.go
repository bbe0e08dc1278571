package main

import (
	"context"
	"os"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// testServerEnv, set in a child's environment, makes the test binary a
// small stdio MCP server (see serveTestServer) instead of running tests.
const testServerEnv = "DSH_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(testServerEnv) != "" {
		serveTestServer()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// serveTestServer serves over stdio the tools "echo" (returns its
// argument "text") and "block" (creates the file named by its argument
// "marker", then returns only when cancelled).
func serveTestServer() {
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	type echoIn struct {
		Text string `json:"text"`
	}
	type echoOut struct {
		Echoed string `json:"echoed"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Title: "Echo", Description: "echoes text",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, echoOut{Echoed: in.Text}, nil
		})
	type blockIn struct {
		Marker string `json:"marker,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "block", Description: "creates the file marker (if given), then returns when cancelled"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in blockIn) (*mcp.CallToolResult, any, error) {
			if in.Marker != "" {
				_ = os.WriteFile(in.Marker, nil, 0o600)
			}
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	_ = s.Run(context.Background(), &mcp.StdioTransport{})
}
