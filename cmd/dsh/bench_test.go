package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

type benchArgs struct {
	Text string `json:"text" dsh:"required"`
}

// benchGateway serves a registry holding an in-memory echo tool over
// streamable HTTP behind httpFace, once with a bearer token and once
// without authentication, and returns a function opening a client
// session to each.
func benchGateway(b *testing.B) (authed, open func() *mcp.ClientSession) {
	b.Helper()
	h := host.New()
	b.Cleanup(func() { h.Close() })
	root := h.Root()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		b.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Register(root, tools.MustDefine(tools.TypedTool[benchArgs, tools.Output]{
		Name: "echo", Description: "Echo a text.",
		Execute: func(_ context.Context, a benchArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(a.Text), nil
		},
	})); err != nil {
		b.Fatal(err)
	}
	srv, err := mcpserver.New(root, reg, mcpserver.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	mh, err := srv.Handler(&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	if err != nil {
		b.Fatal(err)
	}
	lim := withDefaults(dshconfig.Limits{})
	b.Setenv(tokenEnv, testToken)
	withAuth, err := setupAuth(context.Background(), dshconfig.HTTP{}, "dsh.json", true, false, func(k string) string {
		if k == tokenEnv {
			return testToken
		}
		return ""
	}, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	noAuth, err := setupAuth(context.Background(), dshconfig.HTTP{}, "dsh.json", true, true, func(string) string { return "" }, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	dial := func(a *authSetup, token string) func() *mcp.ClientSession {
		ts := httptest.NewServer(httpFace(mh, a, dshconfig.HTTP{}, lim))
		b.Cleanup(ts.Close)
		return func() *mcp.ClientSession {
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			b.Cleanup(tr.CloseIdleConnections)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: bearerTransport{token, tr}}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { cs.Close() })
			return cs
		}
	}
	return dial(withAuth, testToken), dial(noAuth, "")
}

// BenchmarkServedCallAuthVsNoAuth measures a served tools/call over HTTP
// (an in-memory tool) with bearer-token authentication against the same
// call without, alternating call by call; it reports each side's ns per
// call and authed/open.
func BenchmarkServedCallAuthVsNoAuth(b *testing.B) {
	dialAuthed, dialOpen := benchGateway(b)
	authed, open := dialAuthed(), dialOpen()
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	var tAuth, tOpen time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, acc := open, &tOpen
		if i%2 == 1 {
			cs, acc = authed, &tAuth
		}
		start := time.Now()
		r, err := cs.CallTool(ctx, params)
		*acc += time.Since(start)
		if err != nil || r.IsError {
			b.Fatalf("call: %v %+v", err, r)
		}
	}
	b.StopTimer()
	if half := float64(b.N / 2); half > 0 {
		b.ReportMetric(float64(tOpen.Nanoseconds())/half, "open-ns/call")
		b.ReportMetric(float64(tAuth.Nanoseconds())/half, "authed-ns/call")
		b.ReportMetric(float64(tAuth)/float64(tOpen), "authed/open")
	}
}

// BenchmarkServedCallThroughput runs authenticated tools/call over HTTP
// from 1, 8 and 32 concurrent clients (each its own session of one
// gateway) and reports calls/s and the 99th percentile latency.
func BenchmarkServedCallThroughput(b *testing.B) {
	for _, n := range []int{1, 8, 32} {
		b.Run(fmt.Sprintf("clients=%d", n), func(b *testing.B) {
			dial, _ := benchGateway(b)
			clients := make([]*mcp.ClientSession, n)
			for i := range clients {
				clients[i] = dial()
			}
			params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
			lat := make([][]time.Duration, n)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for c := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := c; i < b.N; i += n {
						t0 := time.Now()
						r, err := clients[c].CallTool(context.Background(), params)
						lat[c] = append(lat[c], time.Since(t0))
						if err != nil || r.IsError {
							b.Errorf("call: %v", err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			all := slices.Concat(lat...)
			slices.Sort(all)
			if len(all) > 0 {
				b.ReportMetric(float64(len(all))/elapsed.Seconds(), "calls/s")
				b.ReportMetric(float64(all[len(all)*99/100].Microseconds()), "p99-µs")
			}
		})
	}
}

// BenchmarkIdleSessionMemory opens b.N authenticated sessions over HTTP
// (each with an initialized client) and reports the Go heap they hold,
// per session.
func BenchmarkIdleSessionMemory(b *testing.B) {
	dial, _ := benchGateway(b)
	dial() // warm up
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		dial()
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.HeapInuse-before.HeapInuse)/float64(b.N), "heap-B/session")
}
