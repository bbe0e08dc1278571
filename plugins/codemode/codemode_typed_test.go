package codemode_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The tests of typed values in Code Mode (CT-series): a binding call
// resolves to the tool's canonical value after policy, the SDK declares
// the output types, a failed call rejects with a ToolCallError, images
// are deferred onto run_code's result, and each sub-call logs a start
// event and a settled event with the pair's timing.

// everyRuntime is each engine under each isolation: the typed-value
// behaviours hold wherever a program runs.
func everyRuntime() []coderuntime.Config {
	var out []coderuntime.Config
	for _, eng := range []string{coderuntime.EngineGoja, coderuntime.EngineQuickJS} {
		for _, iso := range []string{coderuntime.IsolationNone, coderuntime.IsolationProcess} {
			c := testRuntime
			c.Engine, c.Isolation = eng, iso
			out = append(out, c)
		}
	}
	return out
}

const lsSchema = `{"type":"object","properties":{"entries":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},"required":["name","size"]}}},"required":["entries"]}`

// typedTools registers ls (an object value), count (a number value whose
// post-execute replaces it) and say (text-only: its text "42").
func typedTools(t testing.TB, e *codeEnv) {
	t.Helper()
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "ls", Description: "Lists.", OutputSchema: json.RawMessage(lsSchema),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Value: json.RawMessage(`{"entries":[{"name":"a","size":3},{"name":"b","size":4}]}`)}, nil
		}})
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "count", Description: "Counts.", OutputSchema: json.RawMessage(`{"type":"integer"}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Value: json.RawMessage(`1`)}, nil
		}})
	mustRegister(t, e.reg, e.root, echo("say", "42"))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		if in.Execution().Name() == "count" {
			return tools.PostDecision{Kind: tools.Accept, Value: json.RawMessage(`99`)}, nil
		}
		return next(ctx)
	}))
}

// TestCT1_BindingResolvesToTheCanonicalValue: a declared output reaches
// the program as a JS value (an object it can walk, a number), the value
// after post-execute's replacement; a text-only tool's call resolves to
// its text, a string even when it looks like a number. Every engine under
// every isolation.
func TestCT1_BindingResolvesToTheCanonicalValue(t *testing.T) {
	for _, rc := range everyRuntime() {
		t.Run(rc.Engine+"/"+rc.Isolation, func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: rc})
			typedTools(t, e)
			src := `const l = await tools.ls({})
const n = await tools.count({})
const s = await tools.say({})
return [typeof l, l.entries.reduce((a, x) => a + x.size, 0), l.entries[1].name, typeof n, n + 1, typeof s, s]`
			res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
			if want := `["object",7,"b","number",100,"string","42"]`; res.IsError || text(res) != want {
				t.Fatalf("result = %+v\nwant %s", res, want)
			}
			// The settled event carries the value and the model-facing
			// content.
			evs := e.log.snapshot()
			if len(evs) != 3 {
				t.Fatalf("events = %d", len(evs))
			}
			var d tools.CodeDispatch
			if err := json.Unmarshal(evs[1].Data, &d); err != nil {
				t.Fatal(err)
			}
			if string(d.Result.Value) != "99" || text(d.Result) != "99" {
				t.Errorf("count event = %s", evs[1].Data)
			}
		})
	}
}

// TestCT2_SDKDeclaresOutputTypes: the tools:sdk section of a registry
// declares each tool's output type from its schema (ToolOutputMap) and the
// ToolCallError a failed call rejects with.
func TestCT2_SDKDeclaresOutputTypes(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	typedTools(t, e)
	sdk := codemode.SDK(e.reg, "")
	for _, want := range []string{
		"interface ToolCallError extends Error {",
		"  count: number;\n",
		"  ls: { entries: { name: string; size: number; }[]; };\n",
		"  say: string;\n",
		`ls(args: Record<string, unknown>): Promise<ToolOutputMap["ls"]>;`,
	} {
		if !strings.Contains(sdk, want) {
			t.Errorf("SDK lacks %q:\n%s", want, sdk)
		}
	}
}

// TestCT4_ImagesAreDeferredOntoTheRunResult: an image in a sub-call's
// final content is not what the program receives (a text-only tool's
// text is); it reaches the model once, on run_code's result after the
// program's output, in submission order. A failed run carries none.
func TestCT4_ImagesAreDeferredOntoTheRunResult(t *testing.T) {
	for _, rc := range everyRuntime() {
		t.Run(rc.Engine+"/"+rc.Isolation, func(t *testing.T) { testCT4(t, rc) })
	}
}

func testCT4(t *testing.T, rc coderuntime.Config) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: rc})
	n := 0
	mustRegister(t, e.reg, e.root, toolFunc("shot", func(context.Context, *tools.Execution) (tools.Output, error) {
		n++
		return tools.Output{Content: []tools.Content{tools.Image(fmt.Sprintf("aW1n%d=", n), "image/png"), tools.Text("shot")}}, nil
	}))
	res := e.reg.Execute(context.Background(), runCode("c1", `const a = await tools.shot({}); const b = await tools.shot({}); return a + b`, "agent"))
	want := []tools.Content{tools.Text("shotshot"), tools.Image("aW1n1=", "image/png"), tools.Image("aW1n2=", "image/png")}
	if res.IsError || len(res.Content) != len(want) {
		t.Fatalf("result = %+v", res)
	}
	for i := range want {
		if res.Content[i] != want[i] {
			t.Errorf("content[%d] = %+v, want %+v", i, res.Content[i], want[i])
		}
	}
	res = e.reg.Execute(context.Background(), runCode("c2", `await tools.shot({}); throw new Error("boom")`, "agent"))
	if !res.IsError || len(res.Content) != 1 || res.Content[0].Type != tools.ContentText {
		t.Fatalf("failed run = %+v", res)
	}
}

// TestCT5_FailedCallRejectsWithToolCallError: a failed sub-call rejects
// with an Error carrying the tool, the code, the error name and the
// message, under every engine and isolation.
func TestCT5_FailedCallRejectsWithToolCallError(t *testing.T) {
	for _, rc := range everyRuntime() {
		t.Run(rc.Engine+"/"+rc.Isolation, func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: rc})
			mustRegister(t, e.reg, e.root, toolFunc("bad-tool", func(context.Context, *tools.Execution) (tools.Output, error) {
				return tools.Output{}, fmt.Errorf("it broke")
			}))
			src := `try { await tools["bad-tool"]({}) } catch (err) {
  const e = err as ToolCallError
  return [e instanceof Error, e.tool, e.code, e.name, e.message]
}`
			res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
			if want := `[true,"bad-tool","TOOL_ERROR","ToolError","tools[\"bad-tool\"]: it broke"]`; res.IsError || text(res) != want {
				t.Fatalf("result = %s\nwant %s", text(res), want)
			}
		})
	}
}

// TestCT6_DispatchStartAndSettledEvents: each sub-call appends a
// tool/code-dispatch-start event when it enters the pipeline (in call
// order, even for calls made together) and, once settled, a
// tool/code-dispatch event with its content, its value and the timing of
// the pair (fake clock: each body's time exactly; the calls settle in
// submission order, so the test gives the later calls the longer bodies).
func TestCT6_DispatchStartAndSettledEvents(t *testing.T) {
	// In a synctest bubble programs run in process (see newCodeEnv): each
	// engine there.
	for _, eng := range []string{coderuntime.EngineGoja, coderuntime.EngineQuickJS} {
		t.Run(eng, func(t *testing.T) { testCT6(t, eng) })
	}
}

func testCT6(t *testing.T, engine string) {
	synctest.Test(t, func(t *testing.T) {
		rc := testRuntime
		rc.Engine = engine
		e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: rc})
		mustRegister(t, e.reg, e.root, tools.Definition{Name: "slow", Description: "Waits.", Concurrency: tools.Parallel,
			OutputSchema: json.RawMessage(`{"type":"integer"}`),
			Parameters:   json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`),
			Execute: func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
				time.Sleep(time.Duration(x.Arg("ms").Int()) * time.Millisecond)
				return tools.Output{Value: json.RawMessage(x.Arg("ms").Raw)}, nil
			}})
		res := e.reg.Execute(context.Background(), runCode("c1",
			`const xs = await Promise.all([tools.slow({ms: 50}), tools.slow({ms: 100}), tools.slow({ms: 250})]); return xs`, "agent"))
		if res.IsError || text(res) != "[50,100,250]" {
			t.Fatalf("result = %+v", res)
		}
		all := e.log.all()
		if len(all) != 6 {
			t.Fatalf("events = %d", len(all))
		}
		starts := e.log.starts()
		for i, ev := range starts {
			var s tools.CodeDispatchStart
			if err := json.Unmarshal(ev.Data, &s); err != nil {
				t.Fatal(err)
			}
			if wantID := fmt.Sprintf("c1:code:%d", i+1); ev.ID != wantID || s.Name != "slow" || s.StartedAt.IsZero() || ev.Parent != "c1" || ev.Agent != "agent" {
				t.Errorf("start %d = %+v (%s)", i, ev, ev.Data)
			}
		}
		// Each start precedes its settled event.
		pos := map[string]int{}
		for i, ev := range all {
			pos[ev.Type+" "+ev.ID] = i
		}
		for i, ev := range e.log.snapshot() {
			if pos[codemode.CodeDispatchStartEvent+" "+ev.ID] > pos[codemode.CodeDispatchEvent+" "+ev.ID] {
				t.Errorf("%s settled before it started", ev.ID)
			}
			var d tools.CodeDispatch
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			ms := []float64{50, 100, 250}[i]
			if d.Timing == nil || d.Timing.DurationMs != ms || !d.Timing.SettledAt.Equal(d.Timing.StartedAt.Add(time.Duration(ms)*time.Millisecond)) {
				t.Errorf("%s timing = %+v, want %vms", ev.ID, d.Timing, ms)
			}
			if string(d.Result.Value) != fmt.Sprint(ms) || text(d.Result) != fmt.Sprint(ms) {
				t.Errorf("%s result = %s", ev.ID, ev.Data)
			}
		}
	})
}
