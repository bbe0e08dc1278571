package codemode_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"testing"
	"time"

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
