package goja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dlclark/regexp2/v2"
	"go.uber.org/goleak"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// matchTimeoutAtStart is regexp2.DefaultMatchTimeout as the test binary found it, after every
// package's initialization and before any test ran.
var matchTimeoutAtStart time.Duration

func TestMain(m *testing.M) {
	matchTimeoutAtStart = regexp2.DefaultMatchTimeout
	// regexp2's match-timeout clock (see LimitRegexpMatchTime) outlives a match by design.
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction("github.com/dlclark/regexp2/v2.runClock")); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	ample   = crtest.Ample
	runaway = crtest.Runaway
)

// newTestRuntime is a runtime with ample time budgets, adjusted by mod.
func newTestRuntime(t testing.TB, mod ...func(*coderuntime.Config)) *Runtime {
	t.Helper()
	cfg := coderuntime.Config{Timeout: ample, CPUBudget: ample}
	for _, m := range mod {
		m(&cfg)
	}
	g, err := NewInProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// runawayRuntime is a runtime for infinite programs that must be stopped by the busy-CPU budget:
// that budget is runaway, the wall clock is ample, and the heap watchdog is off so that it cannot
// stop an allocating program first.
func runawayRuntime(t testing.TB) *Runtime {
	t.Helper()
	return newTestRuntime(t, func(c *coderuntime.Config) { c.CPUBudget = runaway; c.MaxHeapBytes = -1 })
}

var echo = crtest.Echo

func mustRun(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program) *coderuntime.Result {
	t.Helper()
	return crtest.MustRun(t, rt, p)
}

func mustFail(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program, kind coderuntime.FailureKind) *coderuntime.Failure {
	t.Helper()
	return crtest.MustFail(t, rt, p, kind)
}

func TestTypeStripping(t *testing.T) {
	g := newTestRuntime(t)
	tests := []struct{ name, src, want string }{
		{"interface", "interface P { x: number; y?: string }\nconst p: P = { x: 1 }\nreturn p", `{"x":1}`},
		{"type alias", "type N = number | string\nconst n: N = 2\nreturn n", `2`},
		{"generics", "function id<T>(x: T): T { return x }\nconst f = <T,>(x: T): T[] => [x]\nreturn [id<number>(1), f<string>('a')]", `[1,["a"]]`},
		{"as", "const v = JSON.parse('{\"a\":1}') as { a: number }\nreturn (v as any).a as number", `1`},
		{"satisfies", "const c = { a: 1 } satisfies Record<string, number>\nreturn c", `{"a":1}`},
		{"enum", "enum Color { Red, Green = 5, Blue }\nreturn [Color.Red, Color.Green, Color.Blue, Color[5]]", `[0,5,6,"Green"]`},
		{"const enum", "const enum K { A = 'a' }\nreturn K.A", `"a"`},
		{"class members", "class A { private x: number = 1; constructor(public y: number) {} get z(): number { return this.x + this.y } }\nreturn new A(2).z", `3`},
		{"non-null and optional", "const o: { a?: { b: number } } = { a: { b: 2 } }\nreturn o.a!.b + (o?.a?.b ?? 0)", `4`},
		{"declare", "declare const nothing: number\nreturn typeof nothing", `"undefined"`},
		{"modern syntax", "let a = 0; a ||= 2; a ??= 3\nclass B { #p = 1; static s = 2; get p() { return this.#p } }\nreturn [a, new B().p, B.s, 1_000, 2 ** 10]", `[2,1,2,1000,1024]`},
		{"async iteration", "async function* g() { yield 1; yield 2 }\nlet s = 0\nfor await (const x of g()) s += x\nreturn s", `3`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, coderuntime.Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestTopLevelAwaitAndReturn(t *testing.T) {
	g := newTestRuntime(t)
	tests := []struct{ name, src, want string }{
		{"await", "const v = await Promise.resolve(41)\nreturn v + 1", "42"},
		{"early return", "if (true) return 'early'\nreturn 'late'", `"early"`},
		{"no return", "const x = 1", ""},
		{"return undefined", "return undefined", ""},
		{"return null", "return null", "null"},
		{"await in loop", "let s = 0\nfor (const p of [1, 2, 3].map(async (x) => x * 2)) s += await p\nreturn s", "12"},
		{"trailing line comment", "return 7 // done", "7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, coderuntime.Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %q, want %q", res.Value, tt.want)
			}
			if tt.want == "" && res.Value != nil {
				t.Fatalf("value = %q, want nil", res.Value)
			}
		})
	}
}

func TestInvalidProgram(t *testing.T) {
	g := newTestRuntime(t)
	for name, p := range map[string]coderuntime.Program{
		"nil binding":        {Source: "1", Bindings: map[string]coderuntime.Binding{"x": nil}},
		"empty binding name": {Source: "1", Bindings: map[string]coderuntime.Binding{"": echo}},
		"namespace shadows":  {Source: "1", Namespace: "JSON"},
		"namespace console":  {Source: "1", Namespace: "console"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := g.Run(context.Background(), p)
			if !errors.Is(err, coderuntime.ErrInvalidProgram) {
				t.Fatalf("err = %v, want ErrInvalidProgram", err)
			}
		})
	}
}

func TestUnhandledRejectionFailsRun(t *testing.T) {
	g := newTestRuntime(t)
	f := mustFail(t, g, coderuntime.Program{Source: "await tools.fail({})", Bindings: map[string]coderuntime.Binding{
		"fail": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, &codedErr{code: "X", msg: "nope"}
		},
	}}, coderuntime.KindException)
	if f.Message != "ToolError: nope" {
		t.Fatalf("message = %q", f.Message)
	}
}

func TestLogs(t *testing.T) {
	g := newTestRuntime(t)
	src := `console.log("plain", 1, true, null, undefined, { a: [1, "x"] }, [2], Symbol("t"))
console.info("info")
console.warn(new TypeError("bad"))
console.error(() => 1, function named() {})
const c: any = {}; c.c = c
console.debug(c, Symbol("s"))
return 1`
	res := mustRun(t, g, coderuntime.Program{Source: src})
	want := []coderuntime.Log{
		{Level: "log", Text: `plain 1 true null undefined {"a":[1,"x"]} [2] Symbol(t)`},
		{Level: "info", Text: "info"},
		{Level: "warn", Text: "TypeError: bad"},
		{Level: "error", Text: "[Function: (anonymous)] [Function: named]"},
		{Level: "debug", Text: "[object Object] Symbol(s)"},
	}
	if fmt.Sprint(res.Logs) != fmt.Sprint(want) {
		t.Fatalf("logs =\n%q\nwant\n%q", res.Logs, want)
	}
	t.Run("logs survive a failure", func(t *testing.T) {
		f := mustFail(t, g, coderuntime.Program{Source: "console.log('before')\nthrow new Error('x')"}, coderuntime.KindException)
		if len(f.Logs) != 1 || f.Logs[0].Text != "before" {
			t.Fatalf("logs = %q", f.Logs)
		}
	})
}

func TestErrorPositions(t *testing.T) {
	g := newTestRuntime(t)
	tests := []struct {
		name, src string
		kind      coderuntime.FailureKind
		line, col int
		msg       string
	}{
		{"throw on line 3", "const a = 1\nconst b: number = 2\nthrow new Error('boom')", coderuntime.KindException, 3, 7, "Error: boom"},
		{"type error after types", "interface X { a: number }\nconst x = null as unknown as X\n\n  x.a.b", coderuntime.KindException, 4, 5, "TypeError"},
		{"after await", "await null\nawait Promise.resolve()\nthrow new RangeError('late')", coderuntime.KindException, 3, 7, "RangeError: late"},
		{"in a nested function", "function f(n: number): number {\n  if (n === 0) throw new Error('deep')\n  return f(n - 1)\n}\nf(3)", coderuntime.KindException, 2, 22, "Error: deep"},
		{"thrown string", "throw 'just a string'", coderuntime.KindException, 0, 0, "Uncaught just a string"},
		{"syntax error", "const a = 1\nconst b = = 2", coderuntime.KindSyntax, 2, 11, "Unexpected"},
		{"unclosed block", "if (true) {\n  return 1", coderuntime.KindSyntax, 2, 11, "end of the program"},
		{"import is refused", "import fs from 'fs'\nreturn 1", coderuntime.KindSyntax, 1, 8, ""},
		{"reference error", "return nope + 1", coderuntime.KindException, 1, 8, "ReferenceError: nope is not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := mustFail(t, g, coderuntime.Program{Source: tt.src}, tt.kind)
			if f.Line != tt.line || (tt.col != 0 && f.Column != tt.col) {
				t.Errorf("position = %d:%d, want %d:%d (%s)", f.Line, f.Column, tt.line, tt.col, f.Message)
			}
			if !strings.Contains(f.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", f.Message, tt.msg)
			}
		})
	}
	t.Run("stack inside the program names model lines", func(t *testing.T) {
		res := mustRun(t, g, coderuntime.Program{Source: "\n\nreturn new Error('x').stack"})
		if !strings.Contains(string(res.Value), "program.ts:3:8") {
			t.Fatalf("stack = %s", res.Value)
		}
	})
}

func TestResultValue(t *testing.T) {
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxResultBytes = 1000 })
	mustFail(t, g, coderuntime.Program{Source: "const c: any = {}\nc.c = c\nreturn c"}, coderuntime.KindInvalidOutput)
	mustFail(t, g, coderuntime.Program{Source: "const o: any = {}; o.self = o; return o"}, coderuntime.KindInvalidOutput)
	mustFail(t, g, coderuntime.Program{Source: "return () => 1"}, coderuntime.KindInvalidOutput)
	f := mustFail(t, g, coderuntime.Program{Source: "return 'x'.repeat(2000)"}, coderuntime.KindOutputLimit)
	if !errors.Is(f, coderuntime.ErrOutputLimit) {
		t.Fatalf("cause = %v", f.Cause)
	}
	res := mustRun(t, g, coderuntime.Program{Source: "return { toJSON() { return 'custom' } }"})
	if string(res.Value) != `"custom"` {
		t.Fatalf("value = %s", res.Value)
	}
}

func TestCancellationAndBudgets(t *testing.T) {
	t.Run("busy CPU", func(t *testing.T) {
		f := mustFail(t, runawayRuntime(t), coderuntime.Program{Source: "while (true) {}"}, coderuntime.KindTimeout)
		if !errors.Is(f, coderuntime.ErrCPUBudget) || !errors.Is(f, context.DeadlineExceeded) {
			t.Fatalf("cause = %v, want ErrCPUBudget (the wall clock is ample)", f.Cause)
		}
	})
	t.Run("CPU budget excludes binding waits", func(t *testing.T) {
		// Under synctest, time passes only while every goroutine waits: the program's own work
		// takes no time, the binding's waits take 4 x 30ms, beyond the 50ms budget.
		g := newTestRuntime(t, func(c *coderuntime.Config) { c.CPUBudget = 50 * time.Millisecond; c.MaxHeapBytes = -1 })
		p := coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 4; i++) s += await tools.slow({})\nreturn s", Bindings: map[string]coderuntime.Binding{
			"slow": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				select {
				case <-time.After(30 * time.Millisecond):
					return json.RawMessage(`1`), nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		}}
		warmCache(t, g, p.Source)
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			res := mustRun(t, g, p)
			if string(res.Value) != "4" {
				t.Fatalf("value = %s", res.Value)
			}
			if d := time.Since(start); d != 120*time.Millisecond {
				t.Fatalf("the run took %s of bubble time, want the bindings' 120ms", d)
			}
		})
	})
	t.Run("wall clock while awaiting a binding", func(t *testing.T) {
		g := newTestRuntime(t, func(c *coderuntime.Config) { c.Timeout = 150 * time.Millisecond; c.MaxHeapBytes = -1 })
		var called, returned atomic.Bool
		p := coderuntime.Program{Source: "await tools.block({})", Bindings: map[string]coderuntime.Binding{
			"block": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				called.Store(true)
				<-ctx.Done()
				returned.Store(true)
				return nil, ctx.Err()
			},
		}}
		warmCache(t, g, p.Source)
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := mustFail(t, g, p, coderuntime.KindTimeout)
			if !errors.Is(f, context.DeadlineExceeded) || errors.Is(f.Cause, coderuntime.ErrCPUBudget) {
				t.Fatalf("cause = %v, want the wall-clock deadline", f.Cause)
			}
			if !called.Load() || !returned.Load() {
				t.Fatalf("binding called %v, returned %v; want Run to return after the in-flight binding did", called.Load(), returned.Load())
			}
			if d := time.Since(start); d != 150*time.Millisecond {
				t.Fatalf("the run took %s of bubble time, want its 150ms Timeout", d)
			}
		})
	})
	t.Run("caller cancels during busy loop", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The binding cancels the caller's context while the program spins: no timer involved.
		p := coderuntime.Program{Source: "tools.cancel({})\nfor (;;) {}", Bindings: map[string]coderuntime.Binding{
			"cancel": func(context.Context, json.RawMessage) (json.RawMessage, error) { cancel(); return nil, nil },
		}}
		_, err := newTestRuntime(t).Run(ctx, p)
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindAbort || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		// The program is infinite and both budgets are ample: only the caller's deadline can end it,
		// whenever it passes.
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newTestRuntime(t).Run(ctx, coderuntime.Program{Source: "for (;;) {}"})
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindTimeout || !errors.Is(err, context.DeadlineExceeded) || errors.Is(f.Cause, coderuntime.ErrCPUBudget) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := newTestRuntime(t).Run(ctx, coderuntime.Program{Source: "return 1"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("settlement cancels and drains in-flight bindings", func(t *testing.T) {
		g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = -1 })
		var cause atomic.Value
		p := coderuntime.Program{Source: "tools.slow({}); tools.slow({})\nreturn 'done'", Bindings: map[string]coderuntime.Binding{
			"slow": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				time.Sleep(10 * time.Millisecond) // still draining (bubble time): Run must wait
				cause.Store(context.Cause(ctx))
				return nil, ctx.Err()
			},
		}}
		warmCache(t, g, p.Source)
		synctest.Test(t, func(t *testing.T) {
			res := mustRun(t, g, p)
			if string(res.Value) != `"done"` {
				t.Fatalf("value = %s", res.Value)
			}
			if c, _ := cause.Load().(error); !errors.Is(c, coderuntime.ErrRunSettled) {
				t.Fatalf("binding ctx cause = %v, want ErrRunSettled (drained before Run returned)", c)
			}
		})
	})
	t.Run("never-settling promise fails fast", func(t *testing.T) {
		f := mustFail(t, newTestRuntime(t), coderuntime.Program{Source: "await new Promise(() => {})"}, coderuntime.KindException)
		if !strings.Contains(f.Message, "never settle") {
			t.Fatalf("message = %q", f.Message)
		}
	})
}

// TestContextEndingDuringSetupIsAFailure: a run whose context ends while the VM is being set up (on
// a loaded machine, its own Timeout can pass there) fails with a *Failure, never with an error that
// claims the program was invalid.
func TestContextEndingDuringSetupIsAFailure(t *testing.T) {
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = -1 })
	for range 20 {
		_, err := g.Run(&crtest.CancelledAfterCheck{Context: context.Background()}, coderuntime.Program{Source: "for (;;) {}"})
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindAbort || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %T %v; want an abort *Failure", err, err)
		}
	}
}

// warmCache compiles src into g's program cache, so that a run of it inside a synctest bubble does
// not call esbuild (whose process-wide state must not be created inside a bubble).
func warmCache(t testing.TB, g *Runtime, src string) {
	t.Helper()
	if _, f := g.programs.compile(src, jsengine.Transformed{}); f != nil {
		t.Fatal(f)
	}
}

// TestHostilePrograms: each must end as a clean Failure, stopped by the limit it was written to hit.
// The runaway ones are infinite and stopped by the busy-CPU budget; the others get ample time
// budgets, so that only the size, depth, output or stack limit under test can end them.
func TestHostilePrograms(t *testing.T) {
	tests := []struct {
		name, src string
		kind      coderuntime.FailureKind
		cause     error
		want      string // in the failure's message
	}{
		{"infinite loop", "while (true) {}", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"infinite microtasks", "function f(): Promise<void> { return Promise.resolve().then(f) }\nawait f()", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"giant array", "const a: number[] = []\nwhile (true) a.push(a.length)", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"deep recursion", "function f(n: number): number { return f(n + 1) + 1 }\nreturn f(0)", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"recursion that catches", "function f() { try { f() } catch (e) { f() } }\nf()", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"recursion through native", "const a: any[] = []\nfunction f(): any { return [1].map(f) }\nf()", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"doubling string", "let s = 'x'\nwhile (true) s = s.repeat(2)", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"huge repeat", "return 'abc'.repeat(2 ** 40).length", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"huge pad", "return ''.padStart(2 ** 40)", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"huge join", "return new Array(2 ** 31).join('abcdef').length", coderuntime.KindException, nil, "RangeError"},
		{"join of big strings", "const s = 'x'.repeat(1 << 20)\nreturn new Array(1000).fill(s).join('').length", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"huge output", "while (true) console.log('spam spam spam spam')", coderuntime.KindOutputLimit, coderuntime.ErrOutputLimit, "console output"},
		{"one huge log", "const s = 'x'.repeat(1 << 10)\nconsole.log(s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s + s)", coderuntime.KindOutputLimit, coderuntime.ErrOutputLimit, "console output"},
		{"typed arrays are gone", "return new Uint8Array(2 ** 32)", coderuntime.KindException, nil, "ReferenceError"},
		{"ArrayBuffer is gone", "return new ArrayBuffer(2 ** 33)", coderuntime.KindException, nil, "ReferenceError"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var g *Runtime
			if errors.Is(tt.cause, coderuntime.ErrCPUBudget) {
				g = runawayRuntime(t)
			} else {
				g = newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = -1 })
			}
			f := mustFail(t, g, coderuntime.Program{Source: tt.src}, tt.kind)
			if tt.cause != nil && !errors.Is(f, tt.cause) {
				t.Errorf("cause = %v, want %v", f.Cause, tt.cause)
			}
			if !strings.Contains(f.Message, tt.want) {
				t.Errorf("message = %q, want it to contain %q", f.Message, tt.want)
			}
		})
	}
}

func TestNoHostReach(t *testing.T) {
	g := newTestRuntime(t)
	std := "Object Function Array String Number BigInt RegExp Date Boolean Proxy Reflect Error AggregateError TypeError " +
		"ReferenceError SyntaxError RangeError EvalError URIError eval Math JSON Symbol WeakSet WeakMap Map Set Promise " +
		"globalThis NaN undefined Infinity isNaN parseInt parseFloat isFinite decodeURI decodeURIComponent encodeURI " +
		"encodeURIComponent escape unescape console tools"
	res := mustRun(t, g, coderuntime.Program{Source: "return Object.getOwnPropertyNames(globalThis)", Bindings: map[string]coderuntime.Binding{"echo": echo}})
	var names []string
	if err := json.Unmarshal(res.Value, &names); err != nil {
		t.Fatal(err)
	}
	allowed := map[string]bool{}
	for _, n := range strings.Fields(std) {
		allowed[n] = true
	}
	for _, n := range names {
		if !allowed[n] {
			t.Errorf("unexpected global %q", n)
		}
	}
	probes := []struct{ name, src, want string }{
		{"no require", "return typeof require", `"undefined"`},
		{"no process", "return typeof process", `"undefined"`},
		{"no module", "return [typeof module, typeof exports, typeof Deno, typeof Bun]", `["undefined","undefined","undefined","undefined"]`},
		{"no timers", "return [typeof setTimeout, typeof setInterval, typeof setImmediate, typeof queueMicrotask]", `["undefined","undefined","undefined","undefined"]`},
		{"no fetch", "return [typeof fetch, typeof XMLHttpRequest, typeof WebSocket]", `["undefined","undefined","undefined"]`},
		{"Function constructor sees only globals", "return Function('return typeof require + typeof process')()", `"undefinedundefined"`},
		{"async constructor", "return await (async () => {}).constructor('return typeof process')()", `"undefined"`},
		{"binding is a plain function", "const f: any = tools.echo\nreturn [Object.getOwnPropertyNames(f).sort(), Object.getPrototypeOf(f) === Function.prototype]", `[["length","name"],true]`},
		{"console is plain", "return Object.getOwnPropertyNames(console).sort()", `["debug","error","info","log","warn"]`},
		{"no GoError", "return typeof GoError", `"undefined"`},
		{"eval is sandboxed", "return eval('typeof require')", `"undefined"`},
		{"error from binding exposes no Go value", "try { await tools.echo(Symbol('s')) } catch (e: any) { return Object.getOwnPropertyNames(e).sort() }", `["code","message","name","stack"]`},
		{"source map comment in eval is inert", "return eval('1\\n//# sourceMappingURL=/etc/passwd')", `1`},
	}
	for _, tt := range probes {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, coderuntime.Program{Source: tt.src, Bindings: map[string]coderuntime.Binding{"echo": echo}})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestNoStateCarriesOver(t *testing.T) {
	g := newTestRuntime(t)
	mustRun(t, g, coderuntime.Program{Source: "(globalThis as any).x = 1\nObject.prototype.polluted = true\nJSON.stringify = () => 'hijacked'\nArray.prototype.map = null\nreturn 1"})
	res := mustRun(t, g, coderuntime.Program{Source: "return [typeof (globalThis as any).x, typeof ({} as any).polluted, [1].map((x) => x + 1)]"})
	if string(res.Value) != `["undefined","undefined",[2]]` {
		t.Fatalf("value = %s", res.Value)
	}
	t.Run("hijacked JSON does not fool the host", func(t *testing.T) {
		res := mustRun(t, g, coderuntime.Program{Source: "JSON.stringify = () => '\"hijacked\"'\nJSON.parse = () => 'hijacked'\nconst r = await tools.echo({ a: 1 })\nreturn r", Bindings: map[string]coderuntime.Binding{"echo": echo}})
		if string(res.Value) != `{"a":1}` {
			t.Fatalf("value = %s", res.Value)
		}
	})
}

func TestConcurrentRuns(t *testing.T) {
	g := newTestRuntime(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := g.Run(context.Background(), coderuntime.Program{
				Source:   fmt.Sprintf("(globalThis as any).me = %d\nconst r = await Promise.all([tools.echo({ i: %d }), tools.echo({ i: %d })])\nreturn [(globalThis as any).me, r[0].i + r[1].i]", i, i, i),
				Bindings: map[string]coderuntime.Binding{"echo": echo},
			})
			if err != nil {
				t.Error(err)
				return
			}
			if want := fmt.Sprintf("[%d,%d]", i, 2*i); string(res.Value) != want {
				t.Errorf("value = %s, want %s", res.Value, want)
			}
		}()
	}
	wg.Wait()
}

func TestConfig(t *testing.T) {
	if _, err := NewInProcess(coderuntime.Config{Timeout: -1, MaxLogBytes: -1}); !errors.Is(err, coderuntime.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c, want := g.Config(), (coderuntime.Config{}).WithDefaults(); c != want || c.Timeout != 30*time.Second || c.MaxHeapBytes != 1<<30 {
		t.Fatalf("defaults = %+v, want %+v", c, want)
	}
	if g.maxDepth != jsengine.MaxNestingDepth {
		t.Fatalf("nesting limit = %d, want %d", g.maxDepth, jsengine.MaxNestingDepth)
	}
	if g.Language() != "typescript" {
		t.Fatal(g.Language())
	}
}

func TestFailureError(t *testing.T) {
	f := &coderuntime.Failure{Kind: coderuntime.KindException, Message: "Error: x", Line: 3, Column: 7}
	if f.Error() != "exception: Error: x (line 3, column 7)" {
		t.Fatal(f.Error())
	}
	if (&coderuntime.Failure{Kind: coderuntime.KindAbort, Cause: context.Canceled}).Unwrap() != context.Canceled {
		t.Fatal("unwrap")
	}
}

func TestVLQRoundTrip(t *testing.T) {
	for _, fields := range [][]int{{0}, {1, -1, 15, -16, 16, 1000, -123456}, {0, 0, 0, 0, 0}} {
		enc := jsengine.EncodeVLQ(fields)
		dec, err := jsengine.DecodeVLQ(enc)
		if err != nil || fmt.Sprint(dec) != fmt.Sprint(fields) {
			t.Fatalf("%v -> %q -> %v, %v", fields, enc, dec, err)
		}
	}
	if _, err := jsengine.DecodeVLQ("!"); err == nil {
		t.Fatal("want error")
	}
	if _, err := jsengine.DecodeVLQ("g"); err == nil {
		t.Fatal("want truncated error")
	}
}

func FuzzWrapProgram(f *testing.F) {
	for _, s := range []string{
		"", "return 1", "}", "})()", "}); (async () => {", "/*", "`", "'", "//", "#!x", "return await tools.echo({})",
		"interface A {}\nenum E { A }\nreturn 1 as any", "while(true){}", "throw 1", "import x from 'y'", "export {}",
		"\x00", "\n\n\n", "<T,>(x: T) => x", "for await (const x of []) {}", "yield 1", "//# sourceMappingURL=/etc/passwd",
	} {
		f.Add(s)
	}
	g, err := NewInProcess(coderuntime.Config{Timeout: 200 * time.Millisecond, CPUBudget: 20 * time.Millisecond, MaxHeapBytes: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		js, fail := jsengine.WrapProgram(src)
		if fail == nil && js == "" {
			t.Fatal("no output and no failure")
		}
		res, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"echo": echo}})
		if err != nil {
			var f *coderuntime.Failure
			if !errors.As(err, &f) {
				t.Fatalf("Run returned %T %v, want *Failure", err, err)
			}
			if f.Line < 0 || f.Column < 0 {
				t.Fatalf("negative position %d:%d", f.Line, f.Column)
			}
			return
		}
		if res == nil {
			t.Fatal("nil result and nil error")
		}
	})
}

func BenchmarkRunEmpty(b *testing.B) {
	g, _ := NewInProcess(coderuntime.Config{})
	ctx := context.Background()
	for b.Loop() {
		if _, err := g.Run(ctx, coderuntime.Program{Source: ""}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunOneBinding(b *testing.B) {
	g, _ := NewInProcess(coderuntime.Config{})
	ctx := context.Background()
	p := coderuntime.Program{Source: "return await tools.echo({ n: 1 })", Bindings: map[string]coderuntime.Binding{"echo": echo}}
	for b.Loop() {
		if _, err := g.Run(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRun1000Bindings(b *testing.B) {
	g, _ := NewInProcess(coderuntime.Config{})
	ctx := context.Background()
	p := coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.echo({ n: i })).n\nreturn s", Bindings: map[string]coderuntime.Binding{"echo": echo}}
	for b.Loop() {
		res, err := g.Run(ctx, p)
		if err != nil {
			b.Fatal(err)
		}
		if string(res.Value) != "499500" {
			b.Fatal(string(res.Value))
		}
	}
}
