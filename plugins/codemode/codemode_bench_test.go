package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The Code Mode benchmarks: run_code through the full pipeline (the outer
// call and every sub-call), with a session log mounted and an agent, as an
// agent loop would run it. TypeScript reference (worker-thread runtime):
// empty 83 ms, one call 86 ms, 1,000 calls 419 ms.

func benchRunCode(b *testing.B, src string, wantText string) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code})
	mustRegister(b, e.reg, e.root, trivial())
	ctx := context.Background()
	c := runCode("c1", src, "agent")
	res := e.reg.Execute(ctx, c)
	if res.IsError || text(res) != wantText {
		b.Fatalf("result = %+v", res)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		sink = e.reg.Execute(ctx, c)
	}
}

// BenchmarkRunCodeEmpty: an empty program (goal ≤ 3 ms; reference 83 ms).
func BenchmarkRunCodeEmpty(b *testing.B) { benchRunCode(b, "", "") }

// BenchmarkRunCodeOneCall: one awaited binding call (goal ≤ 3.5 ms;
// reference 86 ms).
func BenchmarkRunCodeOneCall(b *testing.B) {
	benchRunCode(b, "return await tools.trivial({ x: 1 })", "ok")
}

// BenchmarkRunCode1000Calls: 1,000 sequential awaited calls of a trivial
// tool, each through the full pipeline (goal ≤ 30 ms; reference 419 ms).
func BenchmarkRunCode1000Calls(b *testing.B) {
	benchRunCode(b, "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n", "1000")
}

// BenchmarkRunCodeOneCallFresh is BenchmarkRunCodeOneCall with a different
// program text every time, as a model writes them: the runtime's compile
// cache never hits, so this is the cost of stripping types and compiling
// too.
func BenchmarkRunCodeOneCallFresh(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code})
	mustRegister(b, e.reg, e.root, trivial())
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		c := runCode("c1", fmt.Sprintf("// program %d\nconst out: string = await tools.trivial({ x: %d })\nreturn out", i, i), "agent")
		if sink = e.reg.Execute(ctx, c); sink.IsError {
			b.Fatalf("result = %+v", sink)
		}
	}
}

// inProcess is the runtime configuration of the bridge-overhead
// benchmarks: goja in the host process, so what they measure is the bridge
// and the pipeline, not a worker's pipe.
var inProcess = coderuntime.Config{Engine: coderuntime.EngineGoja, Isolation: coderuntime.IsolationNone}

// BenchmarkBridge1000CallsInProcess: run_code with 1,000 sequential
// awaited sub-calls of a trivial tool, in process. Its time minus
// BenchmarkBridge1000Executes (the pipeline's own cost for the same calls)
// minus BenchmarkBridgeEmptyInProcess is the bridge's overhead (goal ≤ 5 ms
// for the 1,000 calls).
func BenchmarkBridge1000CallsInProcess(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code, runtime: inProcess})
	mustRegister(b, e.reg, e.root, trivial())
	ctx := context.Background()
	c := runCode("c1", "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n", "agent")
	if res := e.reg.Execute(ctx, c); res.IsError || text(res) != "1000" {
		b.Fatalf("result = %+v", res)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		sink = e.reg.Execute(ctx, c)
	}
}

// BenchmarkBridge1000CallsInProcessQuickJS is BenchmarkBridge1000CallsInProcess on the QuickJS
// engine.
func BenchmarkBridge1000CallsInProcessQuickJS(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code, runtime: coderuntime.Config{Engine: coderuntime.EngineQuickJS, Isolation: coderuntime.IsolationNone}})
	mustRegister(b, e.reg, e.root, trivial())
	ctx := context.Background()
	c := runCode("c1", "let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n", "agent")
	if res := e.reg.Execute(ctx, c); res.IsError || text(res) != "1000" {
		b.Fatalf("result = %+v", res)
	}
	b.ReportAllocs()
	for b.Loop() {
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		sink = e.reg.Execute(ctx, c)
	}
}

// BenchmarkBridgeEmptyInProcess: an empty program, in process.
func BenchmarkBridgeEmptyInProcess(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Code, runtime: inProcess})
	ctx := context.Background()
	c := runCode("c1", "", "agent")
	b.ReportAllocs()
	for b.Loop() {
		e.log.mu.Lock()
		e.log.events = e.log.events[:0]
		e.log.mu.Unlock()
		sink = e.reg.Execute(ctx, c)
	}
}

// BenchmarkBridge1000Executes: the same 1,000 calls of the trivial tool
// made with Execute directly (Both mode, so the tool is callable).
func BenchmarkBridge1000Executes(b *testing.B) {
	e := newCodeEnv(b, codeOpts{mode: tools.Both, runtime: inProcess})
	mustRegister(b, e.reg, e.root, trivial())
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < 1000; i++ {
			if sink = e.reg.Execute(ctx, tools.Call{ID: "d" + strconv.Itoa(i), Name: "trivial", Arguments: json.RawMessage(`{"x":` + strconv.Itoa(i) + `}`), Agent: "agent"}); sink.IsError {
				b.Fatalf("result = %+v", sink)
			}
		}
	}
}
