package mcpclient_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/benchratio"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMountedOverhead measures a mounted tool's call through the
// registry's pipeline against the raw go-sdk CallTool round trip to the
// same server over an in-memory transport, interleaved in one loop (the
// order alternates each iteration), and reports both sides' mean and p10
// latency, the ratio of the totals and the median of the per-iteration
// ratios (the goal's metric).
func BenchmarkMountedOverhead(b *testing.B) { benchOverhead(b, false) }

// BenchmarkMountedBodyOverhead is BenchmarkMountedOverhead with the mounted
// tool's body called directly (no registry pipeline): the plugin's own
// share of the overhead.
func BenchmarkMountedBodyOverhead(b *testing.B) { benchOverhead(b, true) }

func benchOverhead(b *testing.B, bodyOnly bool) {
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	ctx := context.Background()

	// The raw client is configured as the plugin configures its own (the
	// same capabilities and handlers), and it lists the server's tools as
	// a mount does: the go-sdk's CallTool then looks the tool up in its
	// list and puts it in the request's context, for both sides alike.
	// (Unlisted, the raw client skipped that work the mount cannot skip.)
	cs := rawClient(b, ms)

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
	if bodyOnly {
		tool, _ := reg.Get(call.Name, "")
		def := tool.Definition()
		exec, err := tools.NewExecution(call, def)
		if err != nil {
			b.Fatal(err)
		}
		mounted = func() {
			if _, err := def.Execute(ctx, exec); err != nil {
				b.Fatal(err)
			}
		}
	}
	var rawT, mountedT time.Duration
	// Per iteration: the median ratio is robust to a GC pause or a
	// preemption on one side; the p10 of each side is its unloaded cost.
	var ratios, raws, mounteds []float64
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		var r, m time.Duration
		if n%2 == 0 {
			t0 := time.Now()
			raw()
			t1 := time.Now()
			mounted()
			r, m = t1.Sub(t0), time.Since(t1)
		} else {
			t0 := time.Now()
			mounted()
			t1 := time.Now()
			raw()
			m, r = t1.Sub(t0), time.Since(t1)
		}
		rawT, mountedT = rawT+r, mountedT+m
		ratios = append(ratios, float64(m)/float64(r))
		raws, mounteds = append(raws, float64(r.Nanoseconds())/1e3), append(mounteds, float64(m.Nanoseconds())/1e3)
		n++
	}
	b.ReportMetric(float64(rawT.Nanoseconds())/float64(n), "raw-ns/call")
	b.ReportMetric(float64(mountedT.Nanoseconds())/float64(n), "mounted-ns/call")
	b.ReportMetric(benchratio.Quantile(raws, 0.1), "raw-p10-µs")
	b.ReportMetric(benchratio.Quantile(mounteds, 0.1), "mounted-p10-µs")
	b.ReportMetric(float64(mountedT)/float64(rawT), "mounted/raw")
	b.ReportMetric(benchratio.Quantile(ratios, 0.5), "median-mounted/raw")
}
