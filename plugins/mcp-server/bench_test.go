package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
)

// BenchmarkServedCallVsBareServer measures tools/call through the served
// registry (full pipeline, typed argument validation) against a bare
// go-sdk server whose handler does the same work, both over in-memory
// transports, alternating call by call in the same run. It reports each
// side's ns per call and served/bare.
func BenchmarkServedCallVsBareServer(b *testing.B) {
	ctx := context.Background()

	// Bare: the go-sdk server with the handler.
	// The same protocol versions as the served registry, so both sides
	// speak the same protocol.
	bare := mcp.NewServer(&mcp.Implementation{Name: "bare"}, &mcp.ServerOptions{SupportedProtocolVersions: mcpserver.ProtocolVersions})
	bare.AddTool(&mcp.Tool{Name: "echo", Description: "Echo a text.", InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			var a echoArgs
			if err := json.Unmarshal(req.Params.Arguments, &a); err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Text}}}, nil
		})
	bct, bst := mcp.NewInMemoryTransports()
	bss, err := bare.Connect(ctx, bst, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bss.Close()
	bcs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, bct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer bcs.Close()

	// Served: the registry's echo tool behind mcpserver.
	e := bootBench(b)
	sct, sst := mcp.NewInMemoryTransports()
	if _, err := e.srv.Connect(ctx, sst); err != nil {
		b.Fatal(err)
	}
	scs, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, sct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer scs.Close()

	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	var tBare, tServed time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, acc := bcs, &tBare
		if i%2 == 1 {
			cs, acc = scs, &tServed
		}
		start := time.Now()
		r, err := cs.CallTool(ctx, params)
		*acc += time.Since(start)
		if err != nil || r.IsError {
			b.Fatalf("call: %v %+v", err, r)
		}
	}
	b.StopTimer()
	half := float64(b.N / 2)
	if half > 0 {
		b.ReportMetric(float64(tBare.Nanoseconds())/half, "bare-ns/call")
		b.ReportMetric(float64(tServed.Nanoseconds())/half, "served-ns/call")
		b.ReportMetric(float64(tServed)/float64(tBare), "served/bare")
	}
}

func bootBench(b *testing.B) *env { return bootTB(b) }
