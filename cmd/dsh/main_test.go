package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// testServerEnv, set in a child's environment, makes the test binary a
// small stdio MCP server (see serveTestServer) instead of running tests.
const testServerEnv = "DSH_TEST_MCP_SERVER"

func TestMain(m *testing.M) {
	serveCodeWorker()
	if os.Getenv(testServerEnv) != "" {
		serveTestServer()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
		npmpeer.Exit(code) // the tests skipped for want of npm peers, in one line
	}))
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

// built is the dsh binary, built once for the tests that run it (building
// it is the costly part of each).
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// dshBinary returns the path of the dsh binary built from this package.
func dshBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "dsh-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "dsh")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}
