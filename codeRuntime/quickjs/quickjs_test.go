package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
	"modernc.org/quickjs"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
)

// The goja backend's behaviour tests, run against QuickJS with the same expectations (where the
// engines differ, the case says how).

func TestMain(m *testing.M) {
	code := m.Run()
	qjsClosing.Wait() // QuickJS VMs are closed after their runs returned
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
			code = 1
		}
	}
	os.Exit(code)
}

const (
	ample     = crtest.Ample
	runaway   = crtest.Runaway
	hangLimit = crtest.HangLimit
)

var echo = crtest.Echo

func runBounded(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program, limit time.Duration) (*coderuntime.Result, error) {
	t.Helper()
	return crtest.RunBounded(t, rt, p, limit)
}

// codedErr is a binding error with a code and a name, as the goja tests use.
type codedErr struct{ code, msg string }

func (e *codedErr) Error() string { return e.msg }
func (e *codedErr) Code() string  { return e.code }
func (e *codedErr) Name() string  { return "ToolError" }

// detailedErr is a binding error with details, as the goja tests use.
type detailedErr struct{}

func (detailedErr) Error() string { return "boom" }
func (detailedErr) Code() string  { return "E_BOOM" }
func (detailedErr) ErrorDetails() map[string]string {
	return map[string]string{"tool": "t1", "code": "IGNORED", "message": "IGNORED"}
}

// qjsMemoryCap is the VM memory limit of the QuickJS tests: far above what a passing case needs.
const qjsMemoryCap = 256 << 20

func newQJS(t testing.TB, mod ...func(*coderuntime.Config)) *Runtime {
	t.Helper()
	cfg := coderuntime.Config{Timeout: ample, CPUBudget: ample, MaxHeapBytes: qjsMemoryCap}
	for _, m := range mod {
		m(&cfg)
	}
	q, err := NewInProcess(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func runawayQJS(t testing.TB) *Runtime {
	t.Helper()
	return newQJS(t, func(c *coderuntime.Config) { c.CPUBudget = runaway })
}

func qjsMustRun(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program) *coderuntime.Result {
	t.Helper()
	res, err := rt.Run(context.Background(), p)
	if err != nil {
		t.Fatalf("Run(%q): %v", p.Source, err)
	}
	return res
}

func qjsFail(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program, kind coderuntime.FailureKind) *coderuntime.Failure {
	t.Helper()
	res, err := rt.Run(context.Background(), p)
	var f *coderuntime.Failure
	if !errors.As(err, &f) {
		t.Fatalf("Run(%.200q) = %+v, %v; want a *Failure of kind %s", p.Source, res, err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("Run(%.200q) failed with %s (%.300s); want kind %s", p.Source, f.Kind, f.Message, kind)
	}
	return f
}

func qjsWarm(t testing.TB, q *Runtime, src string) {
	t.Helper()
	if _, f := q.programs.compile(src); f != nil {
		t.Fatal(f)
	}
}

func TestQuickJSTypeStrippingAndTopLevel(t *testing.T) {
	q := newQJS(t)
	tests := []struct{ name, src, want string }{
		{"interface", "interface P { x: number; y?: string }\nconst p: P = { x: 1 }\nreturn p", `{"x":1}`},
		{"generics", "function id<T>(x: T): T { return x }\nconst f = <T,>(x: T): T[] => [x]\nreturn [id<number>(1), f<string>('a')]", `[1,["a"]]`},
		{"enum", "enum Color { Red, Green = 5, Blue }\nreturn [Color.Red, Color.Green, Color.Blue, Color[5]]", `[0,5,6,"Green"]`},
		{"class members", "class A { private x: number = 1; constructor(public y: number) {} get z(): number { return this.x + this.y } }\nreturn new A(2).z", `3`},
		{"modern syntax", "let a = 0; a ||= 2; a ??= 3\nclass B { #p = 1; static s = 2; get p() { return this.#p } }\nreturn [a, new B().p, B.s, 1_000, 2 ** 10]", `[2,1,2,1000,1024]`},
		{"async iteration", "async function* g() { yield 1; yield 2 }\nlet s = 0\nfor await (const x of g()) s += x\nreturn s", `3`},
		{"await", "const v = await Promise.resolve(41)\nreturn v + 1", "42"},
		{"early return", "if (true) return 'early'\nreturn 'late'", `"early"`},
		{"no return", "const x = 1", ""},
		{"return null", "return null", "null"},
		{"await in loop", "let s = 0\nfor (const p of [1, 2, 3].map(async (x) => x * 2)) s += await p\nreturn s", "12"},
		{"trailing line comment", "return 7 // done", "7"},
		{"BigInt", "return String(2n ** 64n)", `"18446744073709551616"`},
		{"Unicode property escape", "return /\\p{Script=Greek}/u.test('α')", `true`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := qjsMustRun(t, q, coderuntime.Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestQuickJSInvalidProgram(t *testing.T) {
	q := newQJS(t)
	for name, p := range map[string]coderuntime.Program{
		"nil binding":        {Source: "1", Bindings: map[string]coderuntime.Binding{"x": nil}},
		"empty binding name": {Source: "1", Bindings: map[string]coderuntime.Binding{"": echo}},
		"namespace shadows":  {Source: "1", Namespace: "JSON"},
		"namespace console":  {Source: "1", Namespace: "console"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := q.Run(context.Background(), p); !errors.Is(err, coderuntime.ErrInvalidProgram) {
				t.Fatalf("err = %v, want ErrInvalidProgram", err)
			}
		})
	}
}

func TestQuickJSLogs(t *testing.T) {
	q := newQJS(t)
	src := `console.log("plain", 1, true, null, undefined, { a: [1, "x"] }, [2], 3n)
console.info("info")
console.warn(new TypeError("bad"))
console.error(() => 1, function named() {})
const c: any = {}; c.c = c
console.debug(c, Symbol("s"))
return 1`
	res := qjsMustRun(t, q, coderuntime.Program{Source: src})
	want := []coderuntime.Log{
		{Level: "log", Text: `plain 1 true null undefined {"a":[1,"x"]} [2] 3n`},
		{Level: "info", Text: "info"},
		{Level: "warn", Text: "TypeError: bad"},
		{Level: "error", Text: "[Function: (anonymous)] [Function: named]"},
		{Level: "debug", Text: "[object Object] Symbol(s)"},
	}
	if fmt.Sprint(res.Logs) != fmt.Sprint(want) {
		t.Fatalf("logs =\n%q\nwant\n%q", res.Logs, want)
	}
	f := qjsFail(t, q, coderuntime.Program{Source: "console.log('before')\nthrow new Error('x')"}, coderuntime.KindException)
	if len(f.Logs) != 1 || f.Logs[0].Text != "before" {
		t.Fatalf("logs of a failed run = %q", f.Logs)
	}
	t.Run("output limit keeps the logs up to the cap", func(t *testing.T) {
		q := newQJS(t, func(c *coderuntime.Config) { c.MaxLogBytes = 100 })
		f := qjsFail(t, q, coderuntime.Program{Source: "console.log('a'.repeat(60))\ntry { console.log('b'.repeat(60)) } catch {}\nreturn 1"}, coderuntime.KindOutputLimit)
		if !errors.Is(f, coderuntime.ErrOutputLimit) || len(f.Logs) != 2 || f.Logs[1].Text != strings.Repeat("b", 39) {
			t.Fatalf("failure %v, logs %q", f, f.Logs)
		}
	})
}

func TestQuickJSErrorPositions(t *testing.T) {
	q := newQJS(t)
	tests := []struct {
		name, src string
		kind      coderuntime.FailureKind
		line, col int // col 0: not checked (QuickJS points at another token of the statement than goja)
		msg       string
	}{
		{"throw on line 3", "const a = 1\nconst b: number = 2\nthrow new Error('boom')", coderuntime.KindException, 3, 7, "Error: boom"},
		{"type error after types", "interface X { a: number }\nconst x = null as unknown as X\n\n  x.a.b", coderuntime.KindException, 4, 0, "TypeError"},
		{"after await", "await null\nawait Promise.resolve()\nthrow new RangeError('late')", coderuntime.KindException, 3, 7, "RangeError: late"},
		{"in a nested function", "function f(n: number): number {\n  if (n === 0) throw new Error('deep')\n  return f(n - 1)\n}\nf(3)", coderuntime.KindException, 2, 22, "Error: deep"},
		{"thrown string", "throw 'just a string'", coderuntime.KindException, 0, 0, "Uncaught just a string"},
		{"syntax error", "const a = 1\nconst b = = 2", coderuntime.KindSyntax, 2, 11, "Unexpected"},
		{"unclosed block", "if (true) {\n  return 1", coderuntime.KindSyntax, 2, 11, "end of the program"},
		{"import is refused", "import fs from 'fs'\nreturn 1", coderuntime.KindSyntax, 1, 8, ""},
		{"reference error", "return nope + 1", coderuntime.KindException, 1, 0, "ReferenceError: 'nope' is not defined"},
		{"columns after wide characters", "const s = 'ééé'; throw new Error(s)", coderuntime.KindException, 1, 24, "Error: ééé"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := qjsFail(t, q, coderuntime.Program{Source: tt.src}, tt.kind)
			if f.Line != tt.line || (tt.col != 0 && f.Column != tt.col) {
				t.Errorf("position = %d:%d, want %d:%d (%s)", f.Line, f.Column, tt.line, tt.col, f.Message)
			}
			if !strings.Contains(f.Message, tt.msg) {
				t.Errorf("message = %q, want it to contain %q", f.Message, tt.msg)
			}
		})
	}
}

func TestQuickJSResultValue(t *testing.T) {
	q := newQJS(t, func(c *coderuntime.Config) { c.MaxResultBytes = 1000 })
	qjsFail(t, q, coderuntime.Program{Source: "return 1n"}, coderuntime.KindInvalidOutput)
	qjsFail(t, q, coderuntime.Program{Source: "const o: any = {}; o.self = o; return o"}, coderuntime.KindInvalidOutput)
	qjsFail(t, q, coderuntime.Program{Source: "return () => 1"}, coderuntime.KindInvalidOutput)
	if f := qjsFail(t, q, coderuntime.Program{Source: "return 'x'.repeat(2000)"}, coderuntime.KindOutputLimit); !errors.Is(f, coderuntime.ErrOutputLimit) {
		t.Fatalf("cause = %v", f.Cause)
	}
	if f := qjsFail(t, q, coderuntime.Program{Source: "return ['x'.repeat(2000)]"}, coderuntime.KindOutputLimit); !errors.Is(f, coderuntime.ErrOutputLimit) {
		t.Fatalf("cause = %v", f.Cause)
	}
	if res := qjsMustRun(t, q, coderuntime.Program{Source: "return { toJSON() { return 'custom' } }"}); string(res.Value) != `"custom"` {
		t.Fatalf("value = %s", res.Value)
	}
}

func TestQuickJSCancellationAndBudgets(t *testing.T) {
	t.Run("busy CPU", func(t *testing.T) {
		f := qjsFail(t, runawayQJS(t), coderuntime.Program{Source: "while (true) {}"}, coderuntime.KindTimeout)
		if !errors.Is(f, coderuntime.ErrCPUBudget) || !errors.Is(f, context.DeadlineExceeded) {
			t.Fatalf("cause = %v, want ErrCPUBudget (the wall clock is ample)", f.Cause)
		}
	})
	t.Run("CPU budget excludes binding waits", func(t *testing.T) {
		q := newQJS(t, func(c *coderuntime.Config) { c.CPUBudget = 50 * time.Millisecond })
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
		qjsWarm(t, q, p.Source)
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			res := qjsMustRun(t, q, p)
			if string(res.Value) != "4" {
				t.Fatalf("value = %s", res.Value)
			}
			if d := time.Since(start); d != 120*time.Millisecond {
				t.Fatalf("the run took %s of bubble time, want the bindings' 120ms", d)
			}
		})
	})
	t.Run("wall clock while awaiting a binding", func(t *testing.T) {
		q := newQJS(t, func(c *coderuntime.Config) { c.Timeout = 150 * time.Millisecond })
		var called, returned atomic.Bool
		p := coderuntime.Program{Source: "await tools.block({})", Bindings: map[string]coderuntime.Binding{
			"block": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				called.Store(true)
				<-ctx.Done()
				returned.Store(true)
				return nil, ctx.Err()
			},
		}}
		qjsWarm(t, q, p.Source)
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			f := qjsFail(t, q, p, coderuntime.KindTimeout)
			if !errors.Is(f, context.DeadlineExceeded) || errors.Is(f.Cause, coderuntime.ErrCPUBudget) {
				t.Fatalf("cause = %v, want the wall-clock deadline", f.Cause)
			}
			if !called.Load() || !returned.Load() {
				t.Fatalf("binding called %v, returned %v", called.Load(), returned.Load())
			}
			if d := time.Since(start); d != 150*time.Millisecond {
				t.Fatalf("the run took %s of bubble time, want its 150ms Timeout", d)
			}
		})
	})
	t.Run("caller cancels during busy loop", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := coderuntime.Program{Source: "tools.cancel({})\nfor (;;) {}", Bindings: map[string]coderuntime.Binding{
			"cancel": func(context.Context, json.RawMessage) (json.RawMessage, error) { cancel(); return nil, nil },
		}}
		_, err := newQJS(t).Run(ctx, p)
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindAbort || !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("caller deadline", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		_, err := newQJS(t).Run(ctx, coderuntime.Program{Source: "for (;;) {}"})
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindTimeout || !errors.Is(err, context.DeadlineExceeded) || errors.Is(f.Cause, coderuntime.ErrCPUBudget) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := newQJS(t).Run(ctx, coderuntime.Program{Source: "return 1"}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("context ending during setup is a failure", func(t *testing.T) {
		q := newQJS(t)
		for range 5 {
			_, err := q.Run(&crtest.CancelledAfterCheck{Context: context.Background()}, coderuntime.Program{Source: "for (;;) {}"})
			var f *coderuntime.Failure
			if !errors.As(err, &f) || f.Kind != coderuntime.KindAbort || !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %T %v; want an abort *Failure", err, err)
			}
		}
	})
	t.Run("settlement cancels and drains in-flight bindings", func(t *testing.T) {
		q := newQJS(t)
		var cause atomic.Value
		p := coderuntime.Program{Source: "tools.slow({}); tools.slow({})\nreturn 'done'", Bindings: map[string]coderuntime.Binding{
			"slow": func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
				<-ctx.Done()
				time.Sleep(10 * time.Millisecond) // still draining (bubble time): Run must wait
				cause.Store(context.Cause(ctx))
				return nil, ctx.Err()
			},
		}}
		qjsWarm(t, q, p.Source)
		synctest.Test(t, func(t *testing.T) {
			if res := qjsMustRun(t, q, p); string(res.Value) != `"done"` {
				t.Fatalf("value = %s", res.Value)
			}
			if c, _ := cause.Load().(error); !errors.Is(c, coderuntime.ErrRunSettled) {
				t.Fatalf("binding ctx cause = %v, want ErrRunSettled", c)
			}
		})
	})
	t.Run("never-settling promise fails fast", func(t *testing.T) {
		f := qjsFail(t, newQJS(t), coderuntime.Program{Source: "await new Promise(() => {})"}, coderuntime.KindException)
		if !strings.Contains(f.Message, "never settle") {
			t.Fatalf("message = %q", f.Message)
		}
	})
}

// TestQuickJSHostilePrograms: each ends as a clean Failure, stopped by the limit it was written to
// hit (the goja table; QuickJS's own messages where they differ).
func TestQuickJSHostilePrograms(t *testing.T) {
	crtest.SkipQuickJSHostileUnderRace(t, coderuntime.EngineQuickJS)
	tests := []struct {
		name, src string
		kind      coderuntime.FailureKind
		cause     error
		want      string
	}{
		{"infinite loop", "while (true) {}", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"infinite microtasks", "function f(): Promise<void> { return Promise.resolve().then(f) }\nawait f()", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"deep recursion", "function f(n: number): number { return f(n + 1) + 1 }\nreturn f(0)", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"recursion through native", "function f(): any { return [1].map(f) }\nf()", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"doubling string", "let s = 'x'\nwhile (true) s = s + s", coderuntime.KindLimit, nil, "maximum string length"},
		{"recursion through eval", "function f(): any { return eval('f()') }\nreturn f()", coderuntime.KindLimit, coderuntime.ErrStackDepth, "call stack"},
		{"huge repeat", "return 'abc'.repeat(2 ** 40).length", coderuntime.KindException, nil, "RangeError"},
		{"huge join", "return new Array(2 ** 31).join('abcdef').length", coderuntime.KindException, nil, "RangeError"},
		{"huge output", "while (true) console.log('spam spam spam spam')", coderuntime.KindOutputLimit, coderuntime.ErrOutputLimit, "console output"},
		{"typed arrays are gone", "return new Uint8Array(2 ** 32)", coderuntime.KindException, nil, "ReferenceError"},
		{"ArrayBuffer is gone", "return new ArrayBuffer(2 ** 33)", coderuntime.KindException, nil, "ReferenceError"},
		// Memory: the VM's limit refuses the allocation; the run fails with kind limit.
		{"growing array of strings", "const a: string[] = []\nconst s = 'x'.repeat(1 << 20)\nwhile (true) a.push(s + a.length)", coderuntime.KindLimit, coderuntime.ErrHeapLimit, "out of memory"},
		{"BigInt shift", "return String(1n << (2n ** 40n)).length", coderuntime.KindException, nil, "RangeError"},
		{"BigInt power", "return String(2n ** (2n ** 40n)).length", coderuntime.KindException, nil, "RangeError"},
		{"BigInt.asUintN", "return String(BigInt.asUintN(2 ** 40, -1n)).length", coderuntime.KindException, nil, "RangeError: BigInt is too large"},
		{"replaceAll", "const s = 'x'.repeat(2 ** 20)\nreturn s.replaceAll('x', 'y'.repeat(2 ** 20)).length", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"replace", "return 'x'.replace('x', 'y'.repeat(2 ** 26)).length", coderuntime.KindException, nil, "RangeError: Invalid string length"},
		{"catastrophic regexp", "return /^(a+)+(?=b)/.test('a'.repeat(60) + 'c')", coderuntime.KindTimeout, coderuntime.ErrCPUBudget, "busy-CPU budget"},
		{"thrown huge string", "throw 'x'.repeat(2 ** 24)", coderuntime.KindException, nil, "more characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newQJS(t)
			if errors.Is(tt.cause, coderuntime.ErrCPUBudget) {
				q = runawayQJS(t)
			}
			f := qjsFail(t, q, coderuntime.Program{Source: tt.src}, tt.kind)
			if tt.cause != nil && !errors.Is(f, tt.cause) {
				t.Errorf("cause = %v, want %v", f.Cause, tt.cause)
			}
			if !strings.Contains(f.Message, tt.want) {
				t.Errorf("message = %.300q, want it to contain %q", f.Message, tt.want)
			}
			if len(f.Message) > 64<<10 {
				t.Errorf("message is %d bytes", len(f.Message))
			}
		})
	}
}

// TestQuickJSOutOfMemoryAfterCatchingOne: the VM stays usable after an out-of-memory error the
// program caught, and a second one ends the run too (as a limit failure, or as the null QuickJS
// throws when it cannot even build that error).
func TestQuickJSOutOfMemoryAfterCatchingOne(t *testing.T) {
	crtest.SkipQuickJSHostileUnderRace(t, coderuntime.EngineQuickJS)
	src := "let n = 0\ntry { const a: any[] = []; while (true) a.push('x'.repeat(1000) + n++) } catch (e) { console.log('caught', String(e)) }\nconst b: string[] = []\nwhile (true) b.push('y'.repeat(1000) + n++)"
	_, err := newQJS(t).Run(context.Background(), coderuntime.Program{Source: src})
	var f *coderuntime.Failure
	if !errors.As(err, &f) || !(f.Kind == coderuntime.KindLimit && errors.Is(f, coderuntime.ErrHeapLimit) || f.Kind == coderuntime.KindException && strings.Contains(f.Message, qjsNullOOMNote)) {
		t.Fatalf("err = %v; want an out-of-memory failure", err)
	}
	if len(f.Logs) != 1 || !strings.HasPrefix(f.Logs[0].Text, "caught ") {
		t.Fatalf("logs = %q; want the first out-of-memory error caught", f.Logs)
	}
	t.Run("many small objects", func(t *testing.T) {
		_, err := newQJS(t).Run(context.Background(), coderuntime.Program{Source: "const a: any[] = []\nwhile (true) a.push({ n: a.length })"})
		var f *coderuntime.Failure
		if !errors.As(err, &f) || !(f.Kind == coderuntime.KindLimit && errors.Is(f, coderuntime.ErrHeapLimit) || f.Kind == coderuntime.KindException && strings.Contains(f.Message, qjsNullOOMNote)) {
			t.Fatalf("err = %v; want an out-of-memory failure", err)
		}
	})
}

// TestQuickJSNativeWorkIsBounded: array built-ins that loop natively over a program-chosen length
// (QuickJS checks no interrupt there) refuse it with a catchable RangeError.
func TestQuickJSNativeWorkIsBounded(t *testing.T) {
	q := newQJS(t)
	const tooLong = "RangeError: the array or array-like object is longer than 4194304 elements"
	cases := []struct{ name, src string }{
		{"indexOf over a huge array-like", "return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)"},
		{"join over a huge array-like", "return Array.prototype.join.call({ length: 2 ** 53 - 1 }, '')"},
		{"includes over a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn a.includes(1)"},
		{"sort of a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn a.sort().length"},
		{"forEach over a sparse array", "new Array(2 ** 32 - 1).forEach(() => {})"},
		{"Array.from of an array-like", "return Array.from({ length: 2 ** 32 - 1 }).length"},
		{"spread of a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn [...a].length"},
		{"stringify of a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn JSON.stringify(a).length"},
		{"concat of a spreadable array-like", "return [].concat({ length: 2 ** 32 - 2, [Symbol.isConcatSpreadable]: true } as any).length"},
		{"passing a sparse array to a binding", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn await tools.echo(a)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runBounded(t, q, coderuntime.Program{Source: tc.src, Bindings: map[string]coderuntime.Binding{"echo": echo}}, hangLimit)
			var f *coderuntime.Failure
			if !errors.As(err, &f) || f.Kind != coderuntime.KindException || !strings.Contains(f.Message, tooLong) {
				t.Fatalf("err = %v; want an exception containing %q", err, tooLong)
			}
		})
	}
	t.Run("returning a sparse array", func(t *testing.T) {
		f := qjsFail(t, q, coderuntime.Program{Source: "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn a"}, coderuntime.KindInvalidOutput)
		if !strings.Contains(f.Message, tooLong) {
			t.Fatalf("message = %q", f.Message)
		}
	})
}

// TestQuickJSGuardsKeepSemantics: the guards and replaced built-ins change nothing for ordinary
// programs (and BigInt.asUintN / asIntN answer right where QuickJS's own did not).
func TestQuickJSGuardsKeepSemantics(t *testing.T) {
	q := newQJS(t)
	probes := []struct{ name, src, want string }{
		{"array methods", "const a = [3, 1, 2]\nreturn [a.indexOf(1), a.includes(2), [...a].sort(), a.map((x) => x * 2), a.join('-'), String(a), Array.from('ab'), [1, [2, [3]]].flat(2), [].concat([1], 2)]", `[1,true,[1,2,3],[6,2,4],"3-1-2","3,1,2",["a","b"],[1,2,3],[1,2]]`},
		{"array-likes", "return [Array.prototype.indexOf.call({ length: 2, 1: 'x' }, 'x'), Array.from({ length: 3 }, (_, i) => i), Math.max.apply(null, [1, 3, 2])]", `[1,[0,1,2],3]`},
		{"method shape", "return [Array.prototype.map.length, Array.prototype.map.name, 'prototype' in Array.prototype.map, String.prototype.replaceAll.length]", `[1,"map",false,2]`},
		{"replace and replaceAll", "const s = 'x'.repeat(1 << 20)\nreturn ['aXbX'.replaceAll('X', '-'), 'aXbX'.replace('X', '$&$&'), s.replaceAll('x', 'yy').length, 'abc'.replaceAll('', '.'), 'abc'.replace(/b/g, 'BB')]", `["a-b-","aXXbX",2097152,".a.b.c.","aBBc"]`},
		{"asUintN and asIntN", "return [BigInt.asUintN(64, -1n), BigInt.asUintN(8, 257n), BigInt.asIntN(8, 255n), BigInt.asIntN(8, 127n), BigInt.asUintN(0, 5n), BigInt.asIntN(64, 2n ** 63n), BigInt.asUintN(2 ** 40, 5n)].map(String)", `["18446744073709551615","1","-1","127","0","-9223372036854775808","5"]`},
		{"asUintN refuses a number", "try { BigInt.asUintN(8, 1 as any) } catch (e: any) { return e.name }", `"TypeError"`},
		{"stringify with a replacer", "return JSON.stringify({ a: 1, b: [1, 2] }, (k, v) => typeof v === 'number' ? v * 2 : v)", `"{\"a\":2,\"b\":[2,4]}"`},
	}
	for _, tt := range probes {
		t.Run(tt.name, func(t *testing.T) {
			res := qjsMustRun(t, q, coderuntime.Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestQuickJSNoHostReach(t *testing.T) {
	q := newQJS(t)
	std := "Object Function Array String Number BigInt RegExp Date Boolean Proxy Reflect Error AggregateError TypeError " +
		"ReferenceError SyntaxError RangeError EvalError URIError InternalError eval Math JSON Symbol WeakSet WeakMap Map Set Promise " +
		"globalThis NaN undefined Infinity isNaN parseInt parseFloat isFinite decodeURI decodeURIComponent encodeURI " +
		"encodeURIComponent escape unescape console tools Iterator WeakRef FinalizationRegistry"
	res := qjsMustRun(t, q, coderuntime.Program{Source: "return Object.getOwnPropertyNames(globalThis)", Bindings: map[string]coderuntime.Binding{"echo": echo}})
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
		{"no process, module, std, os", "return [typeof process, typeof module, typeof std, typeof os, typeof print, typeof scriptArgs]", `["undefined","undefined","undefined","undefined","undefined","undefined"]`},
		{"no timers", "return [typeof setTimeout, typeof setInterval, typeof setImmediate]", `["undefined","undefined","undefined"]`},
		{"no host functions", "return [typeof __qjsCall, typeof __qjsLog, typeof __qjsSettled]", `["undefined","undefined","undefined"]`},
		{"Function constructor sees only globals", "return Function('return typeof require + typeof process')()", `"undefinedundefined"`},
		{"binding is a plain function", "const f: any = tools.echo\nreturn [Object.getOwnPropertyNames(f).sort(), Object.getPrototypeOf(f) === Function.prototype]", `[["length","name"],true]`},
		{"console is plain", "return Object.getOwnPropertyNames(console).sort()", `["debug","error","info","log","warn"]`},
		{"error from binding exposes no Go value", "try { await tools.echo(1n) } catch (e: any) { return Object.getOwnPropertyNames(e).sort() }", `["code","message","name","stack"]`},
		{"import() is refused", "try { await import('fs'); return 'imported' } catch (e: any) { return e instanceof Error }", `true`},
	}
	for _, tt := range probes {
		t.Run(tt.name, func(t *testing.T) {
			res, err := q.Run(context.Background(), coderuntime.Program{Source: tt.src, Bindings: map[string]coderuntime.Binding{"echo": echo}})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

func TestQuickJSNoStateCarriesOver(t *testing.T) {
	q := newQJS(t)
	qjsMustRun(t, q, coderuntime.Program{Source: "(globalThis as any).x = 1\nObject.prototype.polluted = true\nJSON.stringify = () => 'hijacked'\nArray.prototype.map = null\nreturn 1"})
	res := qjsMustRun(t, q, coderuntime.Program{Source: "return [typeof (globalThis as any).x, typeof ({} as any).polluted, [1].map((x) => x + 1)]"})
	if string(res.Value) != `["undefined","undefined",[2]]` {
		t.Fatalf("value = %s", res.Value)
	}
	res = qjsMustRun(t, q, coderuntime.Program{Source: "JSON.stringify = () => '\"hijacked\"'\nJSON.parse = () => 'hijacked'\nconst r = await tools.echo({ a: 1 })\nreturn r", Bindings: map[string]coderuntime.Binding{"echo": echo}})
	if string(res.Value) != `{"a":1}` {
		t.Fatalf("hijacked JSON fooled the host: value = %s", res.Value)
	}
}

func TestQuickJSConcurrentRuns(t *testing.T) {
	q := newQJS(t)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			res, err := q.Run(context.Background(), coderuntime.Program{
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
		})
	}
	wg.Wait()
}

func TestQuickJSBindings(t *testing.T) {
	q := newQJS(t)
	var mu sync.Mutex
	var seen []string
	record := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		seen = append(seen, string(args))
		mu.Unlock()
		return json.RawMessage(`{"ok":true}`), nil
	}
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	bindings := map[string]coderuntime.Binding{
		"echo":    echo,
		"record":  record,
		"my-tool": echo,
		"fail": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("wrapped: %w", &codedErr{code: "TOOL_DENIED", msg: "denied by policy"})
		},
		"plain": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, errors.New("plain failure")
		},
		"boom": func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("kaboom") },
		"none": func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, nil },
		"bad":  func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`{nope`), nil },
		"deep": func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(deep), nil },
		"details": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return nil, fmt.Errorf("wrapped: %w", detailedErr{})
		},
		"__proto__": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			return json.RawMessage(`"called"`), nil
		},
	}
	tests := []struct{ name, src, want string }{
		{"sequential", "const a = await tools.echo({n: 1})\nconst b = await tools.echo({n: a.n + 1})\nreturn b.n", "2"},
		{"Promise.all", "const rs = await Promise.all([1, 2, 3, 4, 5].map((n) => tools.echo({ n })))\nreturn rs.map((r) => r.n)", "[1,2,3,4,5]"},
		{"exotic name", "return await tools['my-tool']({ x: 'y' })", `{"x":"y"}`},
		{"undefined argument is {}", "return await tools.echo()", `{}`},
		{"argument is JSON-normalized", "return await tools.echo({ d: new Date(0), f: () => 1, u: undefined, n: NaN })", `{"d":"1970-01-01T00:00:00.000Z","n":null}`},
		{"error carries code, name and message", "try { await tools.fail({}) } catch (e) { return [e instanceof Error, e.code, e.name, e.message] }",
			`[true,"TOOL_DENIED","ToolError","wrapped: denied by policy"]`},
		{"plain error", "try { await tools.plain({}) } catch (e) { return [e.code, e.name, e.message] }", `[null,"Error","plain failure"]`},
		{"panic rejects", "try { await tools.boom({}) } catch (e) { return e.message }", `"binding \"boom\" panicked: kaboom"`},
		{"nil result is undefined", "return typeof (await tools.none({}))", `"undefined"`},
		{"invalid JSON rejects", "try { await tools.bad({}) } catch (e) { return e.code }", `"INVALID_RESULT"`},
		{"too deep a result rejects", "try { await tools.deep({}) } catch (e) { return e.code }", `"INVALID_RESULT"`},
		{"BigInt argument rejects that call only", "let m\ntry { await tools.echo({ n: 1n }) } catch (e) { m = e.code }\nreturn [m, (await tools.echo({ n: 2 })).n]", `["INVALID_ARGUMENTS",2]`},
		{"circular argument rejects", "const o: any = {}; o.o = o\ntry { await tools.echo(o) } catch (e) { return e.name }", `"TypeError"`},
		{"function argument rejects", "try { await tools.echo(() => 1) } catch (e) { return e.code }", `"INVALID_ARGUMENTS"`},
		{"error details", "try { await tools.details({}) } catch (e: any) { return [e.tool, e.code, e.message, typeof e.tool] }", `["t1","E_BOOM","wrapped: boom","string"]`},
		{"a binding named __proto__", "return [Object.getPrototypeOf(tools) === Object.prototype, await tools['__proto__']({})]", `[true,"called"]`},
		{"bindings are functions", "return [typeof tools.echo, Object.keys(tools).sort()]", `["function",["__proto__","bad","boom","deep","details","echo","fail","my-tool","none","plain","record"]]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := qjsMustRun(t, q, coderuntime.Program{Source: tt.src, Bindings: bindings})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
	t.Run("submission order with concurrency 1", func(t *testing.T) {
		seen = nil
		qjsMustRun(t, q, coderuntime.Program{Source: "await Promise.all([1, 2, 3].map((n) => tools.record({ n })))", Bindings: bindings, MaxConcurrentCalls: 1})
		if got := strings.Join(seen, ","); got != `{"n":1},{"n":2},{"n":3}` {
			t.Fatalf("calls = %s", got)
		}
	})
	t.Run("too many pending calls", func(t *testing.T) {
		q1 := newQJS(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 1; c.MaxPendingCalls = 2 })
		res := qjsMustRun(t, q1, coderuntime.Program{Source: "const r = await Promise.allSettled([1, 2, 3].map((n) => tools.echo({ n })))\nreturn r.map((x) => x.status)", Bindings: bindings})
		if string(res.Value) != `["fulfilled","fulfilled","rejected"]` {
			t.Fatalf("value = %s", res.Value)
		}
	})
	t.Run("custom namespace", func(t *testing.T) {
		res := qjsMustRun(t, q, coderuntime.Program{Source: "return [typeof tools, await sdk.echo({ a: 1 })]", Namespace: "sdk", Bindings: bindings})
		if string(res.Value) != `["undefined",{"a":1}]` {
			t.Fatalf("value = %s", res.Value)
		}
	})
	t.Run("unhandled rejection fails the run", func(t *testing.T) {
		f := qjsFail(t, q, coderuntime.Program{Source: "await tools.fail({})", Bindings: bindings}, coderuntime.KindException)
		if f.Message != "ToolError: wrapped: denied by policy" {
			t.Fatalf("message = %q", f.Message)
		}
	})
}

func TestQuickJSBindingAfterSettlementIsRefused(t *testing.T) {
	q := newQJS(t)
	var calls atomic.Int32
	count := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
		calls.Add(1)
		return args, nil
	}
	src := `const f = tools.count
await f({ first: true })
Promise.resolve().then(() => Promise.resolve()).then(() => { f({ late: true }).catch(() => {}) })
return 'settled'`
	res := qjsMustRun(t, q, coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"count": count}})
	if string(res.Value) != `"settled"` || calls.Load() != 1 {
		t.Fatalf("value = %s, calls = %d; want the late call refused", res.Value, calls.Load())
	}
}

func TestQuickJSCallSeqAndWorkers(t *testing.T) {
	t.Run("submission numbers", func(t *testing.T) {
		q := newQJS(t)
		var mu sync.Mutex
		got := map[string]uint64{}
		rec := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			n, ok := coderuntime.CallSeq(ctx)
			if !ok {
				t.Errorf("binding call %s without a submission number", args)
			}
			mu.Lock()
			got[string(args)] = n
			mu.Unlock()
			return nil, nil
		}
		src := `await tools.rec({ i: 0 })
try { await tools.rec({ i: 10n }) } catch {}
await Promise.all([1, 2, 3, 4, 5].map((i) => tools.rec({ i })))
tools.rec({ i: 6 }); tools.rec({ i: 7 })`
		if _, err := q.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"rec": rec}, MaxConcurrentCalls: 2}); err != nil {
			t.Fatal(err)
		}
		var want, seen []uint64
		for i := 0; i <= 7; i++ {
			want = append(want, uint64(i+1))
			seen = append(seen, got[`{"i":`+strconv.Itoa(i)+`}`])
		}
		if !slices.Equal(seen, want) {
			t.Errorf("submission numbers of calls 0..7 = %v, want %v", seen, want)
		}
	})
	t.Run("workers are reused and bounded", func(t *testing.T) {
		q := newQJS(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 3 })
		var mu sync.Mutex
		active, peak := 0, 0
		e := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			active++
			peak = max(peak, active)
			mu.Unlock()
			defer func() { mu.Lock(); active--; mu.Unlock() }()
			return args, nil
		}
		src := "let s = 0\nfor (let i = 0; i < 20; i++) s += (await tools.e({ n: i })).n\nconst all = await Promise.all([...Array(10).keys()].map((n) => tools.e({ n })))\nreturn s + all.reduce((a, r) => a + r.n, 0)"
		if res := qjsMustRun(t, q, coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"e": e}}); string(res.Value) != "235" {
			t.Fatalf("value = %s", res.Value)
		}
		if peak > 3 {
			t.Fatalf("%d calls ran at once, over MaxConcurrentCalls 3", peak)
		}
	})
	t.Run("queued calls are delivered at settlement", func(t *testing.T) {
		q := newQJS(t)
		var mu sync.Mutex
		var seen []string
		b := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s cancelled=%v", args, ctx.Err() != nil))
			mu.Unlock()
			return json.RawMessage(`1`), nil
		}
		res := qjsMustRun(t, q, coderuntime.Program{Source: `tools.f({i: 1}); tools.f({i: 2}); tools.f({i: 3}); return "early"`, Bindings: map[string]coderuntime.Binding{"f": b}, MaxConcurrentCalls: 1})
		want := []string{`{"i":2} cancelled=true`, `{"i":3} cancelled=true`}
		if string(res.Value) != `"early"` || len(seen) != 3 || !strings.HasPrefix(seen[0], `{"i":1}`) || fmt.Sprint(seen[1:]) != fmt.Sprint(want) {
			t.Fatalf("value %s, delivered %q, want call 1 then %q", res.Value, seen, want)
		}
	})
}

func TestQuickJSConfig(t *testing.T) {
	if _, err := NewInProcess(coderuntime.Config{Timeout: -1}); !errors.Is(err, coderuntime.ErrInvalidConfig) {
		t.Fatalf("err = %v", err)
	}
	q, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if c := q.Config(); c != (coderuntime.Config{}).WithDefaults() || c.Timeout != 30*time.Second || q.Language() != "typescript" {
		t.Fatalf("config = %+v", c)
	}
}

func FuzzQuickJSRun(f *testing.F) {
	for _, s := range []string{
		"", "return 1", "}", "})()", "/*", "`", "throw 1", "return await tools.echo({})", "while(true){}",
		"for await (const x of []) {}", "return [1,2].map(x => x * 2)", "return new Error('x').stack",
	} {
		f.Add(s)
	}
	q, err := NewInProcess(coderuntime.Config{Timeout: 2 * time.Second, CPUBudget: 20 * time.Millisecond, MaxHeapBytes: 64 << 20})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		res, err := q.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"echo": echo}})
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

// BenchmarkQuickJSNewVM is the cost of a bare QuickJS VM (created and closed).
func BenchmarkQuickJSNewVM(b *testing.B) {
	for b.Loop() {
		vm, err := quickjs.NewVM()
		if err != nil {
			b.Fatal(err)
		}
		_ = vm.Close()
	}
}

// TestQuickJSTeardownIsOutsideTheRun: Run returns before its VM is freed (freeing a big heap took
// seconds after the budget), and the VM is freed afterwards. The test holds the teardown until Run
// returned.
func TestQuickJSTeardownIsOutsideTheRun(t *testing.T) {
	q := newQJS(t)
	qjsClosing.Wait() // earlier runs' teardowns, so this one is not run in line for want of a slot
	release := make(chan struct{})
	closed := make(chan struct{})
	qjsCloseHook = func() { <-release }
	t.Cleanup(func() { qjsCloseHook = nil })
	done := make(chan error, 1)
	go func() {
		_, err := q.Run(context.Background(), coderuntime.Program{Source: "const a: object[] = []\nfor (let i = 0; i < 1000; i++) a.push({ i })\nreturn a.length"})
		done <- err
	}()
	select {
	case err := <-done: // returns although the teardown is held
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(time.Minute): // decides only when Run waits for its teardown (forever here)
		close(release)
		t.Fatal("Run did not return while its VM's teardown was held")
	}
	go func() { qjsClosing.Wait(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("the VM was closed while its teardown was held")
	default:
	}
	close(release)
	<-closed
}

// FuzzQJSFramePosition: moving a frame's position never panics, whatever the text and position,
// and only ever moves it to a place in the text: the same line one column on (a property read's
// name), or an earlier place (a new keyword).
func FuzzQJSFramePosition(f *testing.F) {
	f.Add("(async () => {\n  throw new /* c */\n  Error(\"x\");\n})();\n", 3, 8)
	f.Add("  throw new // c\n  Error(\"x\");", 2, 8)
	f.Add("  x.a.b;", 1, 6)
	f.Add("new(", 1, 4)
	f.Add("*/(", 1, 3)
	f.Add("\n.", 2, 1)
	f.Add("  new o[\"f\"]();", 1, 13)
	f.Add("  new /* c */ o.a[`]`][0]\n  (1);", 2, 3)
	f.Add("new o[\"x${\"](", 1, 13)
	f.Fuzz(func(t *testing.T, js string, line, col int) {
		l, c := qjsFramePosition(js, line, col)
		if l == line && (c == col || c == col+1) {
			return
		}
		if l < 1 || c < 1 || l > line || (l == line && c > col) {
			t.Fatalf("qjsFramePosition(%q, %d, %d) = %d, %d", js, line, col, l, c)
		}
		lines := strings.Split(js, "\n")
		if l > len(lines) || c > len(lines[l-1]) || !strings.HasPrefix(lines[l-1][c-1:], "new") {
			t.Fatalf("qjsFramePosition(%q, %d, %d) = %d, %d: not at a new keyword", js, line, col, l, c)
		}
	})
}

// TestQJSFramePositionComputedNew: a constructor call whose callee ends with a computed member is
// moved from its "(" to its new keyword, whatever the brackets hold (a "]" in a string, a comment
// before the callee on the line before); a bracket it cannot follow leaves it where it was.
func TestQJSFramePositionComputedNew(t *testing.T) {
	tests := []struct {
		js                string
		line, col, wl, wc int
	}{
		{`  new o["f"]();`, 1, 13, 1, 3},
		{"  new /* c */\n  o.a[\"]\"][0](1);", 2, 14, 1, 3},
		{`  x = new o[f(1)[2]]();`, 1, 21, 1, 7},
		{"  new o[`${x}`]();", 1, 17, 1, 17},
		{`  renew o["f"]();`, 1, 15, 1, 15},
		{`  o["f"]();`, 1, 9, 1, 9},
	}
	for _, tt := range tests {
		if l, c := qjsFramePosition(tt.js, tt.line, tt.col); l != tt.wl || c != tt.wc {
			t.Errorf("qjsFramePosition(%q, %d, %d) = %d:%d, want %d:%d", tt.js, tt.line, tt.col, l, c, tt.wl, tt.wc)
		}
	}
}
