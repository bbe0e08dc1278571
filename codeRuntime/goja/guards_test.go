package goja

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dlclark/regexp2/v2"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
)

// runBounded runs p on rt and fails the test when Run does not return within limit: the programs
// here and in the conformance suite used to keep an engine busy in native code, which no interrupt
// reaches (the goroutine of a hung Run is leaked, and goleak reports it too).
func runBounded(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program, limit time.Duration) (*coderuntime.Result, error) {
	t.Helper()
	return crtest.RunBounded(t, rt, p, limit)
}

const hangLimit = crtest.HangLimit

// TestNativeWorkIsBounded: built-ins that loop natively over a program-chosen length or depth
// are refused with a catchable RangeError, not left to hang or crash the process. The time budgets
// are ample, so each case can only end by its guard. The nesting limit is lowered to 100: goja's
// stringify and join check for cycles in time linear in the depth, so reaching the real limit
// (maxNestingDepth) costs seconds under -race, and minutes on a loaded machine.
func TestNativeWorkIsBounded(t *testing.T) {
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxHeapBytes = -1 })
	g.maxDepth = 100
	const (
		tooLong = "RangeError: the array or array-like object is longer than 4194304 elements"
		tooDeep = "nested more than 100 levels deep"
	)
	cases := []struct {
		name, src string
		kind      coderuntime.FailureKind
		want      string // in the failure's message
	}{
		{"indexOf over a huge array-like", "return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)", coderuntime.KindException, tooLong},
		{"join over a huge array-like", "return Array.prototype.join.call({ length: 2 ** 53 - 1 }, '')", coderuntime.KindException, tooLong},
		{"includes over a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn a.includes(1)", coderuntime.KindException, tooLong},
		{"forEach over a sparse array", "new Array(2 ** 32 - 1).forEach(() => {})", coderuntime.KindException, tooLong},
		{"Array.from of an array-like", "return Array.from({ length: 2 ** 32 - 1 }).length", coderuntime.KindException, tooLong},
		{"spread of a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn [...a].length", coderuntime.KindException, tooLong},
		{"apply with a huge array-like", "return Math.max.apply(null, { length: 2 ** 31 } as any)", coderuntime.KindException, tooLong},
		{"Reflect.apply with a huge array-like", "return Reflect.apply(Math.max, null, { length: 2 ** 32 } as any)", coderuntime.KindException, tooLong},
		{"concat of a spreadable array-like", "return [].concat({ length: 2 ** 32 - 2, [Symbol.isConcatSpreadable]: true } as any).length", coderuntime.KindException, tooLong},
		{"deep JSON.parse", "return JSON.parse('['.repeat(1000) + ']'.repeat(1000))", coderuntime.KindException, "RangeError: JSON.parse: the text is " + tooDeep},
		{"stringify of a deep array", "let a: any = []\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn JSON.stringify(a).length", coderuntime.KindException, "RangeError: JSON.stringify: the value is " + tooDeep},
		{"stringify of a deep array with a list replacer", "let a: any = []\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn JSON.stringify(a, ['x']).length", coderuntime.KindException, "RangeError: JSON.stringify: the value is " + tooDeep},
		{"String of a deep array", "let a: any = []\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn String(a).length", coderuntime.KindException, "RangeError: the array is " + tooDeep},
		{"returning a deep array", "let a: any = []\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn a", coderuntime.KindInvalidOutput, "RangeError: JSON.stringify: the value is " + tooDeep},
		{"passing a deep array to a binding", "let a: any = []\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn await tools.echo(a)", coderuntime.KindException, "RangeError: JSON.stringify: the value is " + tooDeep},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runBounded(t, g, coderuntime.Program{Source: tc.src, Bindings: map[string]coderuntime.Binding{"echo": echo}}, hangLimit)
			var f *coderuntime.Failure
			if !errors.As(err, &f) || f.Kind != tc.kind || !strings.Contains(f.Message, tc.want) {
				t.Fatalf("err = %v; want a %s failure containing %q", err, tc.kind, tc.want)
			}
		})
	}
}

// TestCatastrophicRegexpEnds: a regexp2 match (backreferences, lookaround) backtracks in native code
// no interrupt reaches; once the process opted in with LimitRegexpMatchTime, the match gives up, and
// Run still ends within its budget.
func TestCatastrophicRegexpEnds(t *testing.T) {
	LimitRegexpMatchTime()
	// 2^60 backtracking steps: without the match timeout, this never ends.
	const catastrophic = "/^(a+)+(?=b)/.test('a'.repeat(60) + 'c')"
	t.Run("a match gives up, finding nothing", func(t *testing.T) {
		res, err := runBounded(t, newTestRuntime(t), coderuntime.Program{Source: "return " + catastrophic}, hangLimit)
		if err != nil || string(res.Value) != "false" {
			t.Fatalf("Run = %v, %v; want false (the match gave up)", res, err)
		}
	})
	t.Run("a loop of matches ends at the busy-CPU budget", func(t *testing.T) {
		_, err := runBounded(t, runawayRuntime(t), coderuntime.Program{Source: "for (;;) " + catastrophic}, hangLimit)
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindTimeout || !errors.Is(err, coderuntime.ErrCPUBudget) {
			t.Fatalf("err = %v; want the busy-CPU budget", err)
		}
	})
}

// TestDeepBindingResultIsRejected: a binding result nested deeper than goja's recursive JSON.parse can
// take must reject the call, not overflow the Go stack (a fatal error no recover catches).
func TestDeepBindingResultIsRejected(t *testing.T) {
	g := newTestRuntime(t)
	deep := strings.Repeat("[", 1e7) + strings.Repeat("]", 1e7)
	b := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(deep), nil }
	res := mustRun(t, g, coderuntime.Program{Source: "try { await tools.deep({}); return 'resolved' } catch (e: any) { return e.code }", Bindings: map[string]coderuntime.Binding{"deep": b}})
	if string(res.Value) != `"INVALID_RESULT"` {
		t.Fatalf("value = %s", res.Value)
	}
}

// TestGuardsKeepSemantics: the guards change nothing for ordinary programs.
func TestGuardsKeepSemantics(t *testing.T) {
	g := newTestRuntime(t)
	probes := []struct{ name, src, want string }{
		{"stringify with a function replacer", "return JSON.stringify({ a: 1, b: [1, 2] }, (k, v) => typeof v === 'number' ? v * 2 : v)", `"{\"a\":2,\"b\":[2,4]}"`},
		{"stringify with a list replacer", "return JSON.stringify({ b: 1, a: { b: 2, c: 3 }, c: 4 }, ['a', 'b'])", `"{\"a\":{\"b\":2},\"b\":1}"`},
		{"stringify with space", "return JSON.stringify([1, { a: 2 }], null, 1)", `"[\n 1,\n {\n  \"a\": 2\n }\n]"`},
		{"stringify of toJSON and wrappers", "return JSON.stringify({ d: new Date(0), n: new Number(3), s: new String('x'), u: undefined, f() {} })", `"{\"d\":\"1970-01-01T00:00:00.000Z\",\"n\":3,\"s\":\"x\"}"`},
		{"stringify of a circular value", "const o: any = {}\no.o = o\ntry { JSON.stringify(o) } catch (e: any) { return e.name }", `"TypeError"`},
		{"stringify of 1000 levels", "let a: any = 1\nfor (let i = 0; i < 1000; i++) a = [a]\nreturn JSON.stringify(a).length", `2001`},
		{"parse with a reviver", "return JSON.parse('{\"a\":[1,2]}', (k, v) => typeof v === 'number' ? v + 1 : v)", `{"a":[2,3]}`},
		{"parse of 1000 levels", "return JSON.stringify(JSON.parse('['.repeat(1000) + ']'.repeat(1000))).length", `2000`},
		{"join, toString and nested arrays", "return [[1, [2, 3]].join(';'), String([1, [2, [3]]]), [1, 2].toLocaleString()]", `["1;2,3","1,2,3","1,2"]`},
		{"array-likes", "return [Array.prototype.indexOf.call({ length: 2, 1: 'x' }, 'x'), Array.from({ length: 3 }, (_, i) => i), Math.max.apply(null, [1, 3, 2])]", `[1,[0,1,2],3]`},
		{"regexp2 still matches", "return /(a)\\1(?=b)/.test('aab')", `true`},
		{"string concat, replace and replaceAll", "return ['a'.concat('b', 1, { toString() { return 'c' } }), 'axbx'.replaceAll('x', '[$&]'), 'aXa'.replace(/a/g, 'b'), 'abc'.replace('b', (m) => m + m)]", `["ab1c","a[x]b[x]","bXb","abbc"]`},
		{"Object.entries and Array.from of a string", "return [Object.entries('ab'), Array.from('xy'), Object.keys([1, 2])]", `[[["0","a"],["1","b"]],["x","y"],["0","1"]]`},
		{"array concat", "return [1].concat([2, 3], 4, [[5]])", `[1,2,3,4,[5]]`},
		{"eval and Function", "const f = Function('a', 'return a * 2')\nreturn [eval('1 + 1'), f(4), new Function('return this')() !== undefined, /x/.constructor === RegExp, new RegExp('a', 'g').flags]", `[2,8,true,true,"g"]`},
	}
	for _, tt := range probes {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, coderuntime.Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}

// TestImportLeavesRegexp2Alone: importing the package changes nothing process-wide; the regexp2
// match timeout is regexp2's own ("forever") until a program opts in.
func TestImportLeavesRegexp2Alone(t *testing.T) {
	if forever := time.Duration(math.MaxInt64); matchTimeoutAtStart != forever {
		t.Fatalf("regexp2.DefaultMatchTimeout = %s before any test ran, want regexp2's default %s", matchTimeoutAtStart, forever)
	}
}

// TestLimitRegexpMatchTime: the opt-in lowers regexp2's default match timeout to 250ms, never raises
// it, and a pattern compiled afterwards carries it.
func TestLimitRegexpMatchTime(t *testing.T) {
	saved := regexp2.DefaultMatchTimeout
	t.Cleanup(func() { regexp2.DefaultMatchTimeout = saved })

	regexp2.DefaultMatchTimeout = time.Duration(math.MaxInt64)
	LimitRegexpMatchTime()
	if got := regexp2.DefaultMatchTimeout; got != 250*time.Millisecond {
		t.Fatalf("after the opt-in, DefaultMatchTimeout = %s, want 250ms", got)
	}
	if re := regexp2.MustCompile(`(a)\1`, regexp2.ECMAScript); re.MatchTimeout != 250*time.Millisecond {
		t.Fatalf("a pattern compiled after the opt-in has MatchTimeout %s, want 250ms", re.MatchTimeout)
	}

	regexp2.DefaultMatchTimeout = 10 * time.Millisecond
	LimitRegexpMatchTime()
	if got := regexp2.DefaultMatchTimeout; got != 10*time.Millisecond {
		t.Fatalf("the opt-in raised a lower DefaultMatchTimeout to %s", got)
	}
}
