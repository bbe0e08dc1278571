package mcpclient_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dsh-go/dsh/host"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMountedOverhead measures a mounted tool's call through the
// registry's pipeline against the raw go-sdk CallTool round trip to the
// same server over an in-memory transport, interleaved in one loop (the
// order alternates each iteration), and reports both and their ratio.
func BenchmarkMountedOverhead(b *testing.B) {
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	ctx := context.Background()

	client := mcp.NewClient(&mcp.Implementation{Name: "raw", Version: "1"}, nil)
	ct, err := ms.dial(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()

	h := host.New()
	root := h.Root()
	defer root.Fiber().Dispose()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		b.Fatal(err)
	}
	reg, _ := tools.Service.Get(root)
	if _, err := root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "mem", Dial: ms.dial}); err != nil {
		b.Fatal(err)
	}

	args := json.RawMessage(`{"text":"x"}`)
	call := tools.Call{ID: "c1", Name: "mcp__mem__echo", Arguments: args, Agent: "a"}
	raw := func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	mounted := func() {
		if r := reg.Execute(ctx, call); r.IsError {
			b.Fatal(r)
		}
	}
	var rawT, mountedT time.Duration
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		if n%2 == 0 {
			t0 := time.Now()
			raw()
			t1 := time.Now()
			mounted()
			rawT, mountedT = rawT+t1.Sub(t0), mountedT+time.Since(t1)
		} else {
			t0 := time.Now()
			mounted()
			t1 := time.Now()
			raw()
			mountedT, rawT = mountedT+t1.Sub(t0), rawT+time.Since(t1)
		}
		n++
	}
	b.ReportMetric(float64(rawT.Nanoseconds())/float64(n), "raw-ns/call")
	b.ReportMetric(float64(mountedT.Nanoseconds())/float64(n), "mounted-ns/call")
	b.ReportMetric(float64(mountedT)/float64(rawT), "mounted/raw")
}
