package coderuntime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// runBounded runs p and fails the test when Run does not return within limit: the programs here
// used to keep goja busy in native code, which no interrupt reaches (the hung goroutine is leaked).
func runBounded(t *testing.T, g *Goja, p Program, limit time.Duration) (*Result, error) {
	t.Helper()
	type out struct {
		res *Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := g.Run(context.Background(), p)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(limit):
		t.Fatalf("Run(%q) did not return within %s", p.Source, limit)
		return nil, nil
	}
}

// TestReviewNativeWorkIsBounded: built-ins that loop natively over a program-chosen length or depth
// must be refused (a catchable RangeError) or stay under the budgets, not hang or crash the process.
func TestReviewNativeWorkIsBounded(t *testing.T) {
	g := short(t, func(c *Config) { c.CPUBudget = 300 * time.Millisecond })
	cases := []struct{ name, src string }{
		{"indexOf over a huge array-like", "return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)"},
		{"join over a huge array-like", "return Array.prototype.join.call({ length: 2 ** 53 - 1 }, '')"},
		{"includes over a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn a.includes(1)"},
		{"forEach over a sparse array", "new Array(2 ** 32 - 1).forEach(() => {})"},
		{"Array.from of an array-like", "return Array.from({ length: 2 ** 32 - 1 }).length"},
		{"spread of a sparse array", "const a: any[] = []\na.length = 2 ** 32 - 1\nreturn [...a].length"},
		{"apply with a huge array-like", "return Math.max.apply(null, { length: 2 ** 31 } as any)"},
		{"Reflect.apply with a huge array-like", "return Reflect.apply(Math.max, null, { length: 2 ** 32 } as any)"},
		{"concat of a spreadable array-like", "return [].concat({ length: 2 ** 32 - 2, [Symbol.isConcatSpreadable]: true } as any).length"},
		{"deep JSON.parse", "return JSON.parse('['.repeat(1e7) + ']'.repeat(1e7))"},
		{"stringify of a deep array", "let a: any = []\nfor (let i = 0; i < 1e5; i++) a = [a]\nreturn JSON.stringify(a).length"},
		{"stringify of a deep array with a list replacer", "let a: any = []\nfor (let i = 0; i < 1e5; i++) a = [a]\nreturn JSON.stringify(a, ['x']).length"},
		{"String of a deep array", "let a: any = []\nfor (let i = 0; i < 3e5; i++) a = [a]\nreturn String(a).length"},
		{"returning a deep array", "let a: any = []\nfor (let i = 0; i < 1e5; i++) a = [a]\nreturn a"},
		{"passing a deep array to a binding", "let a: any = []\nfor (let i = 0; i < 1e5; i++) a = [a]\nreturn await tools.echo(a)"},
		{"catastrophic backtracking in regexp2", "return /^(a+)+(?=b)/.test('a'.repeat(40) + 'c')"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := runBounded(t, g, Program{Source: tc.src, Bindings: map[string]Binding{"echo": echo}}, 5*time.Second)
			if err == nil {
				t.Fatalf("Run succeeded; want a failure")
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// TestReviewDeepBindingResult: a binding result nested deeper than goja's recursive JSON.parse can
// take must reject the call, not overflow the Go stack (a fatal error no recover catches).
func TestReviewDeepBindingResult(t *testing.T) {
	g := short(t, func(c *Config) { c.CPUBudget = 5 * time.Second; c.Timeout = 10 * time.Second })
	deep := strings.Repeat("[", 1e7) + strings.Repeat("]", 1e7)
	b := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(deep), nil }
	res := mustRun(t, g, Program{Source: "try { await tools.deep({}); return 'resolved' } catch (e: any) { return e.code }", Bindings: map[string]Binding{"deep": b}})
	if string(res.Value) != `"INVALID_RESULT"` {
		t.Fatalf("value = %s", res.Value)
	}
}

// TestReviewGuardsKeepSemantics: the guards change nothing for ordinary programs.
func TestReviewGuardsKeepSemantics(t *testing.T) {
	g := short(t)
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
	}
	for _, tt := range probes {
		t.Run(tt.name, func(t *testing.T) {
			res := mustRun(t, g, Program{Source: tt.src})
			if string(res.Value) != tt.want {
				t.Fatalf("value = %s, want %s", res.Value, tt.want)
			}
		})
	}
}
