package goja

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/dop251/goja"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// BenchmarkSubCallOverGojaFloor splits an in-process binding call's cost into goja's and the
// engine's, interleaved (issue 24). Each round runs A, 1,000 sequential awaited calls of a trivial
// binding through Run (the program of Code Mode's BenchmarkBridge1000CallsInProcess, without Code
// Mode); B, the same loop in a bare goja VM whose native function returns a promise from
// NewPromise that a Go loop resolves with a string (goja's own floor for an awaited call: no
// argument serialization, no call record, no budget); and C, an empty Run (the run's fixed cost).
// It reports the medians over the rounds of A and B per call ("µs-run/call", "µs-goja-floor/call")
// and of (A-B-C) per call ("µs-engine/call", what the engine adds to each call): medians of
// per-round figures, so that load that comes and goes moves them less than ns/op (a whole round).
func BenchmarkSubCallOverGojaFloor(b *testing.B) {
	const n = 1000
	const src = "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n"
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ok := json.RawMessage(`"ok"`)
	trivial := func(context.Context, json.RawMessage) (json.RawMessage, error) { return ok, nil }
	calls := coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"trivial": trivial}}
	empty := coderuntime.Program{Source: "return 0"}
	bare := goja.MustCompile("", "(async () => { const tools = { trivial: f }\n"+src+"\n})()", true)
	ctx := context.Background()
	run := func(p coderuntime.Program, want string) time.Duration {
		start := time.Now()
		res, err := g.Run(ctx, p)
		d := time.Since(start)
		if err != nil || string(res.Value) != want {
			b.Fatalf("Run = %v, %v", res, err)
		}
		return d
	}
	floor := func() time.Duration {
		vm := goja.New()
		okV := vm.ToValue("ok")
		var resolve func(any) error
		if err := vm.Set("f", func(goja.FunctionCall) goja.Value {
			p, res, _ := vm.NewPromise()
			resolve = res
			return vm.ToValue(p)
		}); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		v, err := vm.RunProgram(bare)
		if err != nil {
			b.Fatal(err)
		}
		main := v.Export().(*goja.Promise)
		for main.State() == goja.PromiseStatePending {
			res := resolve
			resolve = nil
			if err := res(okV); err != nil {
				b.Fatal(err)
			}
		}
		d := time.Since(start)
		if main.State() != goja.PromiseStateFulfilled || main.Result().ToInteger() != n {
			b.Fatalf("bare loop: %v", main.Result())
		}
		return d
	}
	run(calls, "1000")
	run(empty, "0")
	floor()
	var as, fs, es []float64
	for b.Loop() {
		a := run(calls, "1000")
		f := floor()
		c := run(empty, "0")
		as = append(as, float64(a)/float64(time.Microsecond)/n)
		fs = append(fs, float64(f)/float64(time.Microsecond)/n)
		es = append(es, float64(a-f-c)/float64(time.Microsecond)/n)
	}
	median := func(xs []float64) float64 {
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(median(as), "µs-run/call")
	b.ReportMetric(median(fs), "µs-goja-floor/call")
	b.ReportMetric(median(es), "µs-engine/call")
}
