package codemode_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	gojart "github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/plugins/tools"
)

// BenchmarkBridgeOverheadPerSubCall measures issue 24's in-process row interleaved: each round runs
// A, run_code with 1,000 sequential awaited sub-calls of a trivial tool (in process, with a session
// log and an agent), B, the same 1,000 calls made with Execute directly, and C, an empty run_code,
// back to back. It reports the medians over the rounds of A ("ms/1000-subcalls", goal ≤ 5), of the
// bridge's own cost per sub-call, (A-B-C)/1000 ("µs-overhead/subcall"), and of A/(B+C)
// ("x-vs-executes"): medians of per-round figures, so load that comes and goes moves them less than
// ns/op (which is a whole round).
func BenchmarkBridgeOverheadPerSubCall(b *testing.B) {
	code := newCodeEnv(b, codeOpts{mode: tools.Code, runtime: inProcess})
	mustRegister(b, code.reg, code.root, trivial())
	direct := newCodeEnv(b, codeOpts{mode: tools.Both, runtime: inProcess})
	mustRegister(b, direct.reg, direct.root, trivial())
	ctx := context.Background()
	const n = 1000
	calls := runCode("c1", "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n", "agent")
	empty := runCode("c2", "return 0", "agent")
	direct1000 := make([]tools.Call, n)
	for i := range direct1000 {
		direct1000[i] = tools.Call{ID: "d" + strconv.Itoa(i), Name: "trivial", Arguments: json.RawMessage(`{"x":` + strconv.Itoa(i) + `}`), Agent: "agent"}
	}
	run := func(c tools.Call, want string) time.Duration {
		code.log.mu.Lock()
		code.log.events = code.log.events[:0]
		code.log.mu.Unlock()
		start := time.Now()
		res := code.reg.Execute(ctx, c)
		d := time.Since(start)
		if res.IsError || text(res) != want {
			b.Fatalf("result = %+v", res)
		}
		return d
	}
	run(calls, "1000")
	run(empty, "0")
	var as, overheads, ratios []float64
	b.ReportAllocs()
	for b.Loop() {
		a := run(calls, "1000")
		start := time.Now()
		for _, c := range direct1000 {
			if sink = direct.reg.Execute(ctx, c); sink.IsError {
				b.Fatalf("result = %+v", sink)
			}
		}
		bd := time.Since(start)
		cd := run(empty, "0")
		as = append(as, float64(a)/float64(time.Millisecond))
		overheads = append(overheads, float64(a-bd-cd)/float64(time.Microsecond)/n)
		ratios = append(ratios, float64(a)/float64(bd+cd))
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(as), "ms/1000-subcalls")
	b.ReportMetric(median(overheads), "µs-overhead/subcall")
	b.ReportMetric(median(ratios), "x-vs-executes")
}

// BenchmarkBridgeOverRuntime splits an in-process sub-call's cost between the code runtime and
// what Code Mode adds to it (issue 24), interleaved: each round runs A, run_code with 1,000
// sequential awaited sub-calls of a trivial tool (in process, with a session log and an agent, as
// BenchmarkBridgeOverheadPerSubCall), and R, the same program run by a goja runtime of its own
// (coderuntime's Run, without Code Mode) with a binding that answers "ok" at once. It reports the
// medians over the rounds of A and R per call ("µs-codemode/call", "µs-runtime/call") and of (A-R)
// per call ("µs-bridge+pipeline/call": the bridge, the tools pipeline each sub-call goes through,
// and run_code's own fixed cost spread over the 1,000 calls).
func BenchmarkBridgeOverRuntime(b *testing.B) {
	const n = 1000
	code := newCodeEnv(b, codeOpts{mode: tools.Code, runtime: inProcess})
	mustRegister(b, code.reg, code.root, trivial())
	g, err := gojart.NewInProcess(coderuntime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	const src = "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n"
	ok := json.RawMessage(`"ok"`)
	p := coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{
		"trivial": func(context.Context, json.RawMessage) (json.RawMessage, error) { return ok, nil },
	}}
	ctx := context.Background()
	calls := runCode("c1", src, "agent")
	viaCodeMode := func() time.Duration {
		code.log.mu.Lock()
		code.log.events = code.log.events[:0]
		code.log.mu.Unlock()
		start := time.Now()
		res := code.reg.Execute(ctx, calls)
		d := time.Since(start)
		if res.IsError || text(res) != "1000" {
			b.Fatalf("result = %+v", res)
		}
		return d
	}
	viaRuntime := func() time.Duration {
		start := time.Now()
		res, err := g.Run(ctx, p)
		d := time.Since(start)
		if err != nil || string(res.Value) != "1000" {
			b.Fatalf("Run = %v, %v", res, err)
		}
		return d
	}
	viaCodeMode()
	viaRuntime()
	var as, rs, ds []float64
	b.ReportAllocs()
	for b.Loop() {
		a, r := viaCodeMode(), viaRuntime()
		as = append(as, float64(a)/float64(time.Microsecond)/n)
		rs = append(rs, float64(r)/float64(time.Microsecond)/n)
		ds = append(ds, float64(a-r)/float64(time.Microsecond)/n)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(as), "µs-codemode/call")
	b.ReportMetric(median(rs), "µs-runtime/call")
	b.ReportMetric(median(ds), "µs-bridge+pipeline/call")
}
