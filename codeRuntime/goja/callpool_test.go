package goja

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// TestWorkersAreReused pins the per-run worker pool: awaited calls in sequence reuse one goroutine,
// concurrent calls never exceed MaxConcurrentCalls, and every worker is gone when Run returns
// (goleak checks the last part for the whole package).
func TestWorkersAreReused(t *testing.T) {
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 3 })
	var mu sync.Mutex
	active, peak := 0, 0
	slowEcho := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		defer func() { mu.Lock(); active--; mu.Unlock() }()
		return args, nil
	}
	src := "let s = 0\nfor (let i = 0; i < 20; i++) s += (await tools.e({ n: i })).n\nconst all = await Promise.all([...Array(10).keys()].map((n) => tools.e({ n })))\nreturn s + all.reduce((a, r) => a + r.n, 0)"
	res := mustRun(t, g, coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"e": slowEcho}})
	if string(res.Value) != "235" {
		t.Fatalf("value = %s", res.Value)
	}
	if peak > 3 {
		t.Fatalf("%d calls ran at once, over MaxConcurrentCalls 3", peak)
	}
}

// TestSerialCallsRunInSubmissionOrder pins Program.MaxConcurrentCalls = 1:
// even under Promise.all the bindings run one at a time, in call order.
func TestSerialCallsRunInSubmissionOrder(t *testing.T) {
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		order  []string
		active atomic.Int32
		maxAct atomic.Int32
	)
	b := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		n := active.Add(1)
		defer active.Add(-1)
		if n > maxAct.Load() {
			maxAct.Store(n)
		}
		order = append(order, string(args))
		return json.RawMessage(`1`), nil
	}
	src := `await Promise.all([1,2,3,4,5,6,7,8].map(i => tools.f({i})))`
	if _, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"f": b}, MaxConcurrentCalls: 1}); err != nil {
		t.Fatal(err)
	}
	want := []string{`{"i":1}`, `{"i":2}`, `{"i":3}`, `{"i":4}`, `{"i":5}`, `{"i":6}`, `{"i":7}`, `{"i":8}`}
	if fmt.Sprint(order) != fmt.Sprint(want) || maxAct.Load() != 1 {
		t.Fatalf("order %v (max concurrent %d), want %v one at a time", order, maxAct.Load(), want)
	}
}

// TestQueuedCallsAreDeliveredAtSettlement: calls still queued when the run
// settles reach their binding exactly once, in order, with a cancelled ctx.
func TestQueuedCallsAreDeliveredAtSettlement(t *testing.T) {
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu   sync.Mutex
		seen []string
	)
	b := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%s cancelled=%v", args, ctx.Err() != nil))
		mu.Unlock()
		return json.RawMessage(`1`), nil
	}
	src := `tools.f({i: 1}); tools.f({i: 2}); tools.f({i: 3}); return "early"`
	res, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"f": b}, MaxConcurrentCalls: 1})
	if err != nil || string(res.Value) != `"early"` {
		t.Fatalf("Run = %v, %v", res, err)
	}
	want := []string{`{"i":2} cancelled=true`, `{"i":3} cancelled=true`}
	if len(seen) != 3 || !strings.HasPrefix(seen[0], `{"i":1}`) || fmt.Sprint(seen[1:]) != fmt.Sprint(want) {
		t.Fatalf("delivered %q, want call 1 then %q", seen, want)
	}
}

// BenchmarkRun1000BindingsObject is BenchmarkRun1000Bindings with a typical tool result: a small
// object with strings, numbers and an array.
func BenchmarkRun1000BindingsObject(b *testing.B) {
	g, _ := NewInProcess(coderuntime.Config{})
	ctx := context.Background()
	result := json.RawMessage(`{"path":"src/main.go","size":1234,"lines":["package main","","func main() {}"],"ok":true}`)
	tool := func(context.Context, json.RawMessage) (json.RawMessage, error) { return result, nil }
	p := coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.read({ path: 'f' + i })).lines.length\nreturn s", Bindings: map[string]coderuntime.Binding{"read": tool}}
	for b.Loop() {
		if _, err := g.Run(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
