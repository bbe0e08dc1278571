package audit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/audit"
	"github.com/dsh-go/dsh/plugins/audit/audittest"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// benchRegistry is a registry with an in-memory echo tool, audited to
// store when it is not nil.
func benchRegistry(b *testing.B, store audit.Store) (*host.Context, *tools.Registry, *audit.Recorder) {
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
	if _, err := reg.Register(root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{Name: "echo", Description: "Echo.",
		Execute: func(_ context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(a.Text), nil
		}})); err != nil {
		b.Fatal(err)
	}
	var rec *audit.Recorder
	if store != nil {
		rec, err = audit.NewRecorder(audit.Config{Store: store, Instance: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { rec.Close() })
		if err := rec.Install(root, reg); err != nil {
			b.Fatal(err)
		}
	}
	return root, reg, rec
}

// servedSession serves reg over streamable HTTP and returns a client
// session to it.
func servedSession(b *testing.B, root *host.Context, reg *tools.Registry) *mcp.ClientSession {
	b.Helper()
	srv, err := mcpserver.New(root, reg, mcpserver.Config{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { srv.Close() })
	mh, err := srv.Handler(&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(mh)
	b.Cleanup(ts.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 8}
	b.Cleanup(tr.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: &http.Client{Transport: tr}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// BenchmarkAuditedServedCall compares a served tools/call (the go-sdk
// client over streamable HTTP to the registry, one call at a time) with
// and without the recorder writing to SQLite: rounds alternate which
// side runs first, each round's ratio is audited/unaudited time, and the
// metric "ratio" is the median of the rounds' ratios (the goal: <= 1.15).
func BenchmarkAuditedServedCall(b *testing.B) {
	store := audittest.Open(b, "sqlite")
	plainRoot, plainReg, _ := benchRegistry(b, nil)
	auditRoot, auditReg, rec := benchRegistry(b, store)
	plain, audited := servedSession(b, plainRoot, plainReg), servedSession(b, auditRoot, auditReg)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	call := func(cs *mcp.ClientSession, n int) time.Duration {
		start := time.Now()
		for range n {
			r, err := cs.CallTool(ctx, params)
			if err != nil || r.IsError {
				b.Fatalf("call: %v %+v", err, r)
			}
		}
		return time.Since(start)
	}
	call(plain, 50) // warm up both
	call(audited, 50)
	const perRound = 50
	var ratios []float64
	var tp, ta time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i += 2 * perRound {
		var p, a time.Duration
		if len(ratios)%2 == 0 {
			p, a = call(plain, perRound), call(audited, perRound)
		} else {
			a, p = call(audited, perRound), call(plain, perRound)
		}
		tp, ta = tp+p, ta+a
		ratios = append(ratios, float64(a)/float64(p))
	}
	b.StopTimer()
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio")
	b.ReportMetric(float64(tp.Microseconds())/float64(len(ratios)*perRound), "plain-µs/call")
	b.ReportMetric(float64(ta.Microseconds())/float64(len(ratios)*perRound), "audited-µs/call")
	rec.Close()
	if _, failed := rec.Stats(); failed != 0 {
		b.Fatalf("%d records not written", failed)
	}
}

// BenchmarkAuditedThroughputPostgres measures sustained audited calls per
// second into PostgreSQL: 64 callers run the registry's pipeline (an
// in-memory tool) as fast as it answers, every call recorded (entry
// before the body, completion after). Metric "calls/s".
func BenchmarkAuditedThroughputPostgres(b *testing.B) {
	benchThroughput(b, "postgres")
}

// BenchmarkAuditedThroughputSQLite is the same with SQLite.
func BenchmarkAuditedThroughputSQLite(b *testing.B) {
	benchThroughput(b, "sqlite")
}

func benchThroughput(b *testing.B, kind string) {
	store := audittest.Open(b, kind)
	_, reg, rec := benchRegistry(b, store)
	const callers = 64
	var next atomic.Int64
	args := json.RawMessage(`{"text":"hello"}`)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				if r := reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo", Arguments: args, Agent: "a"}); r.IsError {
					b.Errorf("call: %+v", r)
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	b.StopTimer()
	rec.Close() // the completions still queued are written
	b.ReportMetric(float64(b.N)/el.Seconds(), "calls/s")
	if written, failed := rec.Stats(); failed != 0 || written < int64(b.N) {
		b.Fatalf("written %d, failed %d, calls %d", written, failed, b.N)
	}
}
