package isolated

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
)

// The conformance suite: every engine × isolation combination runs the same two tables, the hostile
// programs (each must end with one of its required failure kinds, and the host must survive) and the
// language features (what must work, and what must fail loudly instead of silently doing something
// else). A combination registers itself from its own test file, in init:
//
//	func init() {
//		registerConformanceCombo(conformanceCombo{name: "quickjs/none", engine: "quickjs", isolation: "none",
//			newRuntime: func(t *testing.T, cfg Config) Runtime { ... }})
//	}

// conformanceCombo is one engine × isolation combination under the conformance suite.
type conformanceCombo struct {
	// name identifies the combination in subtest names, e.g. "goja/none".
	name string
	// engine ("goja", "quickjs") and isolation ("none", "process") say what it is.
	engine, isolation string
	// newRuntime returns a runtime with cfg's limits (the suite sets the budgets; the combination
	// may add its own settings). It fails t if it cannot. A runtime it returns may own resources: the
	// combination registers their cleanup with t.Cleanup.
	newRuntime func(t *testing.T, cfg coderuntime.Config) coderuntime.Runtime
	// unsafe maps a hostile case's name to the documented reason this combination cannot contain it
	// (in-process engines only: such a case would crash or hang the test process, so it is skipped
	// and the combination is documented as for trusted code against that class). An isolated
	// combination leaves it empty: it must contain every case.
	unsafe map[string]string
	// unsupported maps a language feature's name to why this combination fails it loudly instead of
	// running it (e.g. BigInt in in-process goja, whose BigInt operators allocate without bound): the
	// feature must then fail with kind syntax or exception, never succeed with a wrong value.
	unsupported map[string]string
}

// conformanceCombos is every registered combination, in registration order.
var conformanceCombos []conformanceCombo

// registerConformanceCombo adds c to the suite; names must be unique.
func registerConformanceCombo(c conformanceCombo) {
	for _, o := range conformanceCombos {
		if o.name == c.name {
			panic("coderuntime: conformance combo registered twice: " + c.name)
		}
	}
	conformanceCombos = append(conformanceCombos, c)
}

// Budget classes of the hostile cases.
const (
	// budgetNone: the case must end by a size, depth or output limit (or a guard's error); both time
	// budgets are ample, so a time budget never decides it.
	budgetNone = ""
	// budgetCPU: the case is infinite busy work, stopped by the busy-CPU budget (runaway).
	budgetCPU = "cpu"
	// budgetWall: the case waits forever, stopped by the wall-clock budget (runaway).
	budgetWall = "wall"
)

// conformanceMemoryCap is the heap cap (Config.MaxHeapBytes) the suite runs under: small enough that
// a run growing towards it on a shared test machine is harmless, far above what a passing case needs.
const conformanceMemoryCap = 256 << 20

// hostileCase is a program that must not harm the host: it must end, within its budget, as a
// Failure of one of kinds (or, when mayFinish, with a result: an engine that computes it within its
// limits harms nothing).
type hostileCase struct {
	name      string
	src       string
	kinds     []coderuntime.FailureKind
	budget    string // budgetNone, budgetCPU or budgetWall
	mayFinish bool
}

// hostileCases is the hostile table. Sources are built at init (some are megabytes).
var hostileCases = []hostileCase{
	// Plain runaways.
	{name: "infinite loop", src: "while (true) {}", kinds: kinds(coderuntime.KindTimeout), budget: budgetCPU},
	{name: "infinite microtasks", src: "function f(): Promise<void> { return Promise.resolve().then(f) }\nawait f()", kinds: kinds(coderuntime.KindTimeout), budget: budgetCPU},
	{name: "unbounded recursion", src: "function f(n: number): number { return f(n + 1) + 1 }\nreturn f(0)", kinds: kinds(coderuntime.KindLimit, coderuntime.KindException)},
	{name: "recursion that catches", src: "function f() { try { f() } catch (e) { f() } }\nf()", kinds: kinds(coderuntime.KindLimit, coderuntime.KindException, coderuntime.KindTimeout), budget: budgetCPU},
	{name: "never-settling await", src: "await new Promise(() => {})", kinds: kinds(coderuntime.KindException)},
	{name: "await on a binding that never answers", src: "await tools.hang({})", kinds: kinds(coderuntime.KindTimeout), budget: budgetWall},
	{name: "console flood", src: "while (true) console.log('spam spam spam spam')", kinds: kinds(coderuntime.KindOutputLimit)},

	// Nesting in the program text: refused before any parser sees it.
	{name: "200k unary operators", src: "return " + strings.Repeat("!", 200_000) + "1", kinds: kinds(coderuntime.KindLimit, coderuntime.KindSyntax)},
	{name: "300k parentheses", src: "return " + strings.Repeat("(", 300_000) + "1" + strings.Repeat(")", 300_000), kinds: kinds(coderuntime.KindLimit, coderuntime.KindSyntax)},
	{name: "1M brackets", src: "return " + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000), kinds: kinds(coderuntime.KindLimit, coderuntime.KindSyntax)},
	{name: "100k-term operator chain", src: "return " + strings.Repeat("1+", 100_000) + "1", kinds: kinds(coderuntime.KindLimit, coderuntime.KindSyntax)},
	{name: "deep nesting via eval", src: "return eval('return ' + '!'.repeat(200000) + '1')", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "deep brackets via eval", src: "return eval('['.repeat(1000000) + ']'.repeat(1000000))", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "deep nesting via new Function", src: "return new Function('return ' + '('.repeat(300000) + '1' + ')'.repeat(300000))()", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "deep nesting via Function", src: "return Function('return ' + '!'.repeat(200000) + '1')()", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "deep nesting via the async Function constructor", src: "const AF: any = (async function () {}).constructor\nreturn await new AF('return ' + '!'.repeat(200000) + '1')()", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "deep nesting via the generator Function constructor", src: "const GF: any = (function* () {}).constructor\nreturn [...new GF('yield ' + '!'.repeat(200000) + '1')()]", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "operator chain via eval", src: "return eval('1+'.repeat(100000) + '1')", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit, coderuntime.KindTimeout), mayFinish: true},

	// BigInt arithmetic that allocates in one step.
	{name: "BigInt shift", src: "return String(1n << (2n ** 40n)).length", kinds: kinds(coderuntime.KindSyntax, coderuntime.KindException, coderuntime.KindLimit)},
	{name: "BigInt.asUintN", src: "return String(BigInt.asUintN(2 ** 40, -1n)).length", kinds: kinds(coderuntime.KindSyntax, coderuntime.KindException, coderuntime.KindLimit)},
	{name: "BigInt power", src: "return String(2n ** (2n ** 40n)).length", kinds: kinds(coderuntime.KindSyntax, coderuntime.KindException, coderuntime.KindLimit)},
	{name: "BigInt via eval", src: "return String(eval('2' + 'n ** (2' + 'n ** 40' + 'n)')).length", kinds: kinds(coderuntime.KindSyntax, coderuntime.KindException, coderuntime.KindLimit)},

	// Built-ins that grow huge in one native call.
	{name: "concat pre-size", src: "const s = 'x'.repeat(2 ** 25)\nreturn ''.concat(...new Array(4096).fill(s)).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "join above 2^20 elements", src: "const s = 'x'.repeat(2 ** 25)\nreturn new Array(2 ** 21).fill(s).join('').length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "replaceAll", src: "const s = 'x'.repeat(2 ** 20)\nreturn s.replaceAll('x', 'y'.repeat(2 ** 20)).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "Object.entries of a 32 Mi string", src: "return Object.entries('x'.repeat(2 ** 25)).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "concat of many big arrays", src: "const a = new Array(2 ** 22).fill(0)\nreturn [].concat(...new Array(1000).fill(a)).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "flat", src: "const a = new Array(2 ** 22).fill(0)\nreturn new Array(1000).fill(a).flat().length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "Array.from of a big string", src: "return Array.from('x'.repeat(2 ** 25)).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	{name: "JSON.parse of 100 MB", src: "let s = '\"' + 'x'.repeat(2 ** 25)\ns = s + s + s + '\"'\nreturn JSON.parse(s).length", kinds: kinds(coderuntime.KindException, coderuntime.KindLimit)},
	// goja matches this pattern with Go's linear-time regexp: a fast machine finishes it (false)
	// within the 100ms busy-CPU budget, a loaded one does not; either ending harms nothing.
	{name: "regexp over 1 Mi characters", src: "return /^(a|aa)+$/.test('a'.repeat(2 ** 20) + 'b')", kinds: kinds(coderuntime.KindException, coderuntime.KindTimeout, coderuntime.KindLimit), budget: budgetCPU, mayFinish: true},
	{name: "thrown 100 MB string", src: "let s = 'x'.repeat(2 ** 25)\nthrow s + s + s", kinds: kinds(coderuntime.KindException)},
}

func kinds(k ...coderuntime.FailureKind) []coderuntime.FailureKind { return k }

// conformanceConfig is the suite's Config for a case of the given budget class.
func conformanceConfig(budget string) coderuntime.Config {
	cfg := coderuntime.Config{Timeout: ample, CPUBudget: ample, MaxHeapBytes: conformanceMemoryCap}
	switch budget {
	case budgetCPU:
		cfg.CPUBudget = runaway
	case budgetWall:
		cfg.Timeout = runaway
	}
	return cfg
}

// conformanceMaxFailureText bounds the failure message any case may produce: a thrown value's text
// is capped like the logs.
const conformanceMaxFailureText = 64 << 10

// TestG6_ConformanceHostileProgramsEndWithTheRequiredKind: every combination ends every hostile
// program as a Failure of one of the required kinds, within a bounded time, and its failure text
// stays small; cases a combination cannot contain in-process are skipped with its documented reason.
func TestG6_ConformanceHostileProgramsEndWithTheRequiredKind(t *testing.T) {
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			// One runtime per budget class, shared by the cases (each run is independent).
			rts := map[string]coderuntime.Runtime{}
			for _, b := range []string{budgetNone, budgetCPU, budgetWall} {
				rts[b] = combo.newRuntime(t, conformanceConfig(b))
			}
			for _, tc := range hostileCases {
				t.Run(tc.name, func(t *testing.T) {
					if why, ok := combo.unsafe[tc.name]; ok {
						t.Skipf("%s cannot contain this case: %s", combo.name, why)
					}
					crtest.SkipQuickJSHostileUnderRace(t, combo.engine)
					parallelIfIsolated(t, combo)
					rt := rts[tc.budget]
					_, err := runBounded(t, rt, coderuntime.Program{Source: tc.src, Bindings: map[string]coderuntime.Binding{"hang": hangingBinding}}, hangLimit)
					if err == nil && tc.mayFinish {
						return
					}
					var f *coderuntime.Failure
					if !errors.As(err, &f) {
						t.Fatalf("Run = %v; want a Failure of kind %v", err, tc.kinds)
					}
					if !slices.Contains(tc.kinds, f.Kind) {
						t.Fatalf("failed with %s (%.300s); want one of %v", f.Kind, f.Message, tc.kinds)
					}
					if len(f.Message) > conformanceMaxFailureText {
						t.Fatalf("failure message is %d bytes, over %d", len(f.Message), conformanceMaxFailureText)
					}
				})
			}
		})
	}
}

// featureCase is a language feature: src must return want (JSON), or, when want is empty, fail with
// kind (and a message containing msg).
type featureCase struct {
	name string
	src  string
	want string
	kind coderuntime.FailureKind
	msg  string
}

// featureCases is the language table: what model-written programs use must work, and what an engine
// cannot do right must fail loudly.
var featureCases = []featureCase{
	{name: "types are stripped", src: "interface P { x: number }\nconst p: P = { x: 1 }\nreturn p.x as number", want: `1`},
	{name: "generics and enums", src: "enum E { A = 1, B }\nfunction id<T>(x: T): T { return x }\nreturn id<number>(E.B)", want: `2`},
	{name: "optional chaining and nullish", src: "const o: any = { a: null }\nlet x = o.b?.c ?? 5\nx ??= 1\nreturn [o.a?.b, x]", want: `[null,5]`},
	{name: "destructuring, spread, rest", src: "const { a, ...rest } = { a: 1, b: 2, c: 3 }\nconst [x, , ...ys] = [1, 2, 3, 4]\nreturn { a, rest, x, ys, m: { ...rest, d: 4 } }", want: `{"a":1,"rest":{"b":2,"c":3},"x":1,"ys":[3,4],"m":{"b":2,"c":3,"d":4}}`},
	{name: "classes with private fields and static blocks", src: "class A { #x = 1; static n = 0; static { A.n = 2 } get x() { return this.#x + A.n } #m() { return 3 } m() { return this.#m() } }\nreturn [new A().x, new A().m()]", want: `[3,3]`},
	{name: "async functions and Promise combinators", src: "const v = await Promise.all([Promise.resolve(1), (async () => 2)()])\nconst s = await Promise.allSettled([Promise.reject(new Error('x'))])\nconst a = await Promise.any([Promise.reject(1), Promise.resolve(3)])\nreturn [v, s[0].status, a]", want: `[[1,2],"rejected",3]`},
	{name: "generators", src: "function* g() { yield 1; yield 2 }\nreturn [...g()]", want: `[1,2]`},
	{name: "async generators and for await", src: "async function* g() { yield 1; yield 2 }\nconst out: number[] = []\nfor await (const x of g()) out.push(x)\nreturn out", want: `[1,2]`},
	{name: "ES2022+ built-ins", src: "return [[1, 2, 3].at(-1), Object.hasOwn({ a: 1 }, 'a'), [1, 2, 3].findLast((x) => x < 3), 'aXbX'.replaceAll('X', '-'), new Error('e', { cause: 7 }).cause, Object.fromEntries([['k', 1]])]", want: `[3,true,2,"a-b-",7,{"k":1}]`},
	{name: "array copy methods", src: "const a = [3, 1, 2]\nreturn [a.toSorted(), a.toReversed(), a.with(0, 9), a]", want: `[[1,2,3],[2,1,3],[9,1,2],[3,1,2]]`},
	{name: "regexp named groups, lookbehind, dotAll, sticky", src: "const m = /(?<y>\\d{4})-(?<m>\\d{2})/.exec('on 2024-05')!\nreturn [m.groups!.y, /(?<=a)b/.test('ab'), /a.b/s.test('a\\nb'), /b/y.test('ab')]", want: `["2024",true,true,false]`},
	{name: "template literals and tagged templates", src: "const tag = (s: TemplateStringsArray, ...v: any[]) => s.raw.join('|') + v.join(',')\nconst n = 2\nreturn [`a${n + 1}b`, tag`x${1}y${2}z`]", want: `["a3b","x|y|z1,2"]`},
	{name: "labels, switch, exceptions", src: "let n = 0\nouter: for (const i of [1, 2, 3]) { for (const j of [1, 2]) { if (j === 2) continue outer; n += i } }\ntry { throw new TypeError('t') } catch (e: any) { return [n, e.name, e instanceof TypeError] }", want: `[6,"TypeError",true]`},
	{name: "Map, Set, WeakMap, Symbol", src: "const m = new Map([[1, 'a']])\nconst s = new Set([1, 1, 2])\nconst w = new WeakMap()\nconst k = {}\nw.set(k, 1)\nreturn [m.get(1), s.size, w.get(k), typeof Symbol('x')]", want: `["a",2,1,"symbol"]`},
	{name: "JSON round trip", src: "return JSON.parse(JSON.stringify({ a: [1, 'x', null, true], b: { c: 1.5 } }))", want: `{"a":[1,"x",null,true],"b":{"c":1.5}}`},
	{name: "string methods", src: "return ['  x '.trim(), 'a-b'.split('-'), 'x'.padStart(3, '.'), 'é'.normalize('NFD').length, 'abc'.at(-1)]", want: `["x",["a","b"],"..x",2,"c"]`},
	{name: "eval and Function keep working", src: "const f = new Function('a', 'b', 'return a + b')\nreturn [eval('1 + 2'), f(2, 3), f instanceof Function, (function () {}).constructor === Function, typeof Function.prototype]", want: `[3,5,true,true,"function"]`},
	{name: "Unicode property escape that works or fails loudly", src: "return /\\p{Script=Greek}/u.test('α')", want: `true`},
	{name: "unknown Unicode property is a SyntaxError", src: "return /\\p{NoSuchProperty}/u.test('a')", kind: coderuntime.KindSyntax},
	{name: "unknown Unicode property via RegExp is a SyntaxError", src: "return new RegExp('\\\\p{NoSuchProperty}', 'u').test('a')", kind: coderuntime.KindException, msg: "SyntaxError"},
	{name: "a syntax error fails loudly", src: "return (1 +", kind: coderuntime.KindSyntax},
	{name: "an undefined name fails loudly", src: "return nope", kind: coderuntime.KindException, msg: "ReferenceError"},
	{name: "import() rejects, and the program can catch it", src: "try { await import('x'); return 'loaded' } catch (e: any) { return e instanceof Error }", want: `true`},
	{name: "BigInt arithmetic", src: "return String(2n ** 64n)", want: `"18446744073709551616"`},
	// Locale-sensitive built-ins answer as en-US does, or fail loudly: never a plausible wrong value.
	{name: "numbers in en-US", src: "return [(1234.5).toLocaleString(), (1234.5).toLocaleString('en-US'), (-0.0005).toLocaleString(), (1e21).toLocaleString(), (999.9996).toLocaleString(), (1.0005).toLocaleString(), NaN.toLocaleString(), (-Infinity).toLocaleString(), [1234, 5].toLocaleString(), (0).toLocaleString(['en'])]", want: `["1,234.5","1,234.5","-0.001","1,000,000,000,000,000,000,000","1,000","1.001","NaN","-∞","1,234,5","0"]`},
	{name: "dates in en-US", src: "const d = new Date(Date.UTC(2024, 0, 15, 13, 5, 9))\nreturn [d.toLocaleDateString('en-US', { timeZone: 'UTC' }), d.toLocaleTimeString('en-US', { timeZone: 'UTC' }), d.toLocaleString(undefined, { timeZone: 'UTC' }), new Date(NaN).toLocaleDateString(), new Date(2024, 0, 5, 0, 1, 2).toLocaleString()]", want: `["1/15/2024","1:05:09\u202fPM","1/15/2024, 1:05:09\u202fPM","Invalid Date","1/5/2024, 12:01:02\u202fAM"]`},
	{name: "other locales and options fail loudly", src: "const out: string[] = []\nconst t = (f: () => unknown) => { try { out.push(String(f())) } catch (e: any) { out.push(e.name) } }\nt(() => (1234.5).toLocaleString('de-DE'))\nt(() => (1234.5).toLocaleString('en-US', { style: 'currency', currency: 'USD' }))\nt(() => new Date(0).toLocaleDateString('en-US', { month: 'long' }))\nt(() => new Date(0).toLocaleDateString('fr'))\nt(() => new Date(0).toLocaleString('en-US', { timeZone: 'America/New_York' }))\nreturn out", want: `["RangeError","RangeError","RangeError","RangeError","RangeError"]`},
	// Case mapping, comparison and arrays took a locale or options and ignored them: Turkish "i"
	// upper-cased to "I", Swedish "ä" sorted before "z", sensitivity and numeric ignored (goja),
	// [1234.5].toLocaleString('de-DE') gave "1,234.5".
	{name: "locale case mapping, comparison and arrays fail loudly outside en-US", src: "const out: string[] = []\nconst t = (f: () => unknown) => { try { out.push(String(f())) } catch (e: any) { out.push(e.name) } }\nt(() => 'i'.toLocaleUpperCase('tr'))\nt(() => 'I'.toLocaleLowerCase('tr'))\nt(() => 'a'.localeCompare('A', undefined, { sensitivity: 'base' }))\nt(() => 'ä'.localeCompare('z', 'sv'))\nt(() => '10'.localeCompare('9', undefined, { numeric: true }))\nt(() => [1234.5].toLocaleString('de-DE'))\nt(() => [new Date(0)].toLocaleString('en-US', { timeZone: 'UTC' }))\nreturn out", want: `["RangeError","RangeError","RangeError","RangeError","RangeError","RangeError","RangeError"]`},
	{name: "locale case mapping and arrays in en-US", src: "return ['i'.toLocaleUpperCase(), 'i'.toLocaleUpperCase('en-US'), 'ß'.toLocaleUpperCase(['en']), 'İ'.toLocaleLowerCase('en').length, 'Ab'.toLocaleLowerCase(), [1234.5, 'x', null, 2].toLocaleString(), [1234.5].toLocaleString('en-US'), 'b'.localeCompare('a', 'en-US')]", want: `["I","I","SS",2,"ab","1,234.5,x,,2","1,234.5",1]`},
	{name: "localeCompare sorts as en-US", src: "return ['C', 'a', 'b', 'B', 'a1', 'a 1', '10', '9'].sort((x, y) => x.localeCompare(y))", want: `["10","9","a","a 1","a1","b","B","C"]`},
	// A WeakRef's target stays alive at least until the end of the job that made it (KeepDuringJob).
	{name: "WeakRef keeps its target during the job", src: "const w = new WeakRef({ a: 1 })\nreturn [w.deref()?.a, w instanceof WeakRef, Object.prototype.toString.call(w), WeakRef.length]", want: `[1,true,"[object WeakRef]",1]`},
}

// TestConformanceLanguageFeatures: every combination runs every feature right, or fails it loudly
// (a syntax failure or an exception, never a wrong value) where the combination documents it as
// unsupported.
func TestConformanceLanguageFeatures(t *testing.T) {
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			rt := combo.newRuntime(t, conformanceConfig(budgetNone))
			for _, tc := range featureCases {
				t.Run(tc.name, func(t *testing.T) {
					parallelIfIsolated(t, combo)
					res, err := runBounded(t, rt, coderuntime.Program{Source: tc.src}, hangLimit)
					if why, ok := combo.unsupported[tc.name]; ok {
						var f *coderuntime.Failure
						if !errors.As(err, &f) || (f.Kind != coderuntime.KindSyntax && f.Kind != coderuntime.KindException) {
							t.Fatalf("Run = %+v, %v; %s documents this feature as failing loudly (%s)", res, err, combo.name, why)
						}
						return
					}
					if tc.want == "" {
						var f *coderuntime.Failure
						if !errors.As(err, &f) || f.Kind != tc.kind || !strings.Contains(f.Message, tc.msg) {
							t.Fatalf("Run = %+v, %v; want a %s failure containing %q", res, err, tc.kind, tc.msg)
						}
						return
					}
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					var got, want any
					if err := json.Unmarshal(res.Value, &got); err != nil {
						t.Fatalf("result %s: %v", res.Value, err)
					}
					if err := json.Unmarshal([]byte(tc.want), &want); err != nil {
						t.Fatalf("want %s: %v", tc.want, err)
					}
					gb, _ := json.Marshal(got)
					wb, _ := json.Marshal(want)
					if string(gb) != string(wb) {
						t.Fatalf("result = %s, want %s", res.Value, tc.want)
					}
				})
			}
		})
	}
}

// parallelIfIsolated runs an isolated combination's case in parallel with the combination's other
// cases: its program runs in a worker process of its own, and the test mostly waits (for a worker
// to start, for a budget to pass), so cases overlap those waits. In-process cases stay sequential:
// the heap watchdog's ceiling is process-wide, and one case's allocations would count against
// another's. Under the race detector an isolated case skips (see skipIsolatedUnderRace).
func parallelIfIsolated(t *testing.T, combo conformanceCombo) {
	t.Helper()
	skipIsolatedUnderRace(t, combo)
	if combo.isolation == coderuntime.IsolationProcess {
		t.Parallel()
	}
}

// skipIsolatedUnderRace skips an isolated combination's conformance case under the race detector:
// its program runs in a worker process, which is the race-instrumented test binary, so the case
// costs seconds (a memory bomb, tens) and checks nothing the detector sees in this process (the
// parent's side of isolation is raced by the TestIsolated tests). .ci/run runs every conformance
// case, isolated ones included, in its second pass without -race.
func skipIsolatedUnderRace(t *testing.T, combo conformanceCombo) {
	t.Helper()
	if crtest.RaceDetector && combo.isolation == coderuntime.IsolationProcess {
		t.Skip("isolated conformance cases run without -race (.ci/run runs them in a second pass)")
	}
}

// settlementCase is a program that makes binding calls around its settlement: want lists, in any
// order, the n of every call that must reach the side binding (those made before the program's
// promise settled); a call made after it must be refused in the program and reach no binding.
type settlementCase struct {
	name string
	src  string
	want []int
}

// settlementCases is the settlement table: late calls from promise callbacks, finally blocks and
// timers (and a binding answering after settlement, the engines' only timer), after a return and
// after a throw; and the calls that are not late, which must still go through.
var settlementCases = []settlementCase{
	{name: "promise callbacks queued before return",
		src:  "await tools.side({ n: 0 })\nconst p = Promise.resolve()\nfor (let i = 1; i <= 5; i++) p.then(() => tools.side({ n: i }).catch(() => {}))\nreturn 'returned'",
		want: []int{0}},
	{name: "promise callbacks queued before throw",
		src:  "await tools.side({ n: 0 })\nconst p = Promise.resolve()\nfor (let i = 1; i <= 5; i++) p.then(() => tools.side({ n: i }).catch(() => {}))\nthrow new Error('thrown')",
		want: []int{0}},
	{name: "promise callbacks queued by a body that never awaits",
		src:  "const p = Promise.resolve()\nfor (let i = 1; i <= 5; i++) p.then(() => tools.side({ n: i }).catch(() => {}))\nreturn 'returned'",
		want: nil},
	{name: "callbacks chained behind the return",
		src:  "await tools.side({ n: 0 })\nPromise.resolve().then(() => null).then(() => null).then(() => tools.side({ n: 1 }).catch(() => {}))\nreturn 'returned'",
		want: []int{0}},
	{name: "finally blocks",
		src:  "await tools.side({ n: 0 })\n;(async () => { try { await null } finally { tools.side({ n: 1 }).catch(() => {}) } })()\nPromise.resolve().finally(() => tools.side({ n: 2 }).catch(() => {}))\nPromise.reject(new Error('x')).finally(() => tools.side({ n: 3 }).catch(() => {})).catch(() => {})\nreturn 'returned'",
		want: []int{0}},
	{name: "finally blocks after a throw",
		src:  "await tools.side({ n: 0 })\n;(async () => { try { await null } finally { tools.side({ n: 1 }).catch(() => {}) } })()\nthrow new Error('thrown')",
		want: []int{0}},
	{name: "timers",
		src:  "await tools.side({ n: 0 })\nif (typeof setTimeout === 'function') setTimeout(() => tools.side({ n: 1 }).catch(() => {}), 0)\nif (typeof setImmediate === 'function') setImmediate(() => tools.side({ n: 2 }).catch(() => {}))\nif (typeof queueMicrotask === 'function') queueMicrotask(() => { tools.side({ n: 3 }).catch(() => {}) })\nreturn 'returned'",
		want: []int{0}},
	{name: "a binding that answers after settlement",
		src:  "tools.slow({}).then(() => tools.side({ n: 1 }).catch(() => {}), () => tools.side({ n: 2 }).catch(() => {}))\nawait tools.side({ n: 0 })\nreturn 'returned'",
		want: []int{0}},
	{name: "a returned thenable that queues a call, then settles",
		src:  "return { then(resolve: (v: string) => void) { Promise.resolve().then(() => tools.side({ n: 1 }).catch(() => {})); resolve('returned') } }",
		want: nil},
	{name: "not late: calls made before the return",
		src:  "tools.side({ n: 0 }).catch(() => {})\ntools.side({ n: 1 }).catch(() => {})\nreturn 'returned'",
		want: []int{0, 1}},
	{name: "not late: a call chained on a returned promise",
		src:  "return tools.side({ n: 0 }).then(() => tools.side({ n: 1 }))",
		want: []int{0, 1}},
	{name: "not late: a returned thenable that calls before it settles",
		src:  "return { then(resolve: (v: unknown) => void) { resolve(tools.side({ n: 1 })) } }",
		want: []int{1}},
}

// TestConformanceNoBindingCallAfterSettlement: on every combination, once the program's promise
// has settled no binding call it makes reaches a binding (it is refused in the program, as the
// run's other rules refuse a call), whatever queued it (a promise callback, a finally block, a
// timer, a binding's late answer); every call made before settlement reaches its binding once.
func TestConformanceNoBindingCallAfterSettlement(t *testing.T) {
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			rt := combo.newRuntime(t, conformanceConfig(budgetNone))
			for _, tc := range settlementCases {
				t.Run(tc.name, func(t *testing.T) {
					parallelIfIsolated(t, combo)
					var mu sync.Mutex
					var got []int
					side := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
						var a struct{ N int }
						if err := json.Unmarshal(args, &a); err != nil {
							return nil, err
						}
						mu.Lock()
						got = append(got, a.N)
						mu.Unlock()
						return json.RawMessage(`{}`), nil
					}
					slow := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
						<-ctx.Done()
						return json.RawMessage(`{}`), nil // an answer, not an error: its callback must still not call
					}
					_, err := runBounded(t, rt, coderuntime.Program{Source: tc.src, Bindings: map[string]coderuntime.Binding{"side": side, "slow": slow}}, hangLimit)
					var f *coderuntime.Failure
					if errors.As(err, &f) && f.Kind != coderuntime.KindException {
						t.Fatalf("Run: %v", err)
					} else if err != nil && f == nil {
						t.Fatalf("Run: %v", err)
					}
					mu.Lock()
					defer mu.Unlock()
					slices.Sort(got)
					if !slices.Equal(got, tc.want) {
						t.Fatalf("calls that reached the binding: %v; want %v (Run: %v)", got, tc.want, err)
					}
				})
			}
		})
	}
}

// Binding errors whose methods are hostile: each must reject only its own call.
type (
	panicMessageErr struct{}
	panicCodeErr    struct{}
	panicNameErr    struct{}
	panicDetailsErr struct{}
	cyclicErr       struct{}
	cyclicJoinErr   struct{}
)

func (panicMessageErr) Error() string                   { panic("Error() panicked") }
func (panicCodeErr) Error() string                      { return "coded" }
func (panicCodeErr) Code() string                       { panic("Code() panicked") }
func (panicNameErr) Error() string                      { return "named" }
func (panicNameErr) Name() string                       { panic("Name() panicked") }
func (panicDetailsErr) Error() string                   { return "detailed" }
func (panicDetailsErr) ErrorDetails() map[string]string { panic("ErrorDetails() panicked") }
func (cyclicErr) Error() string                         { return "cyclic" }
func (e cyclicErr) Unwrap() error                       { return e }
func (cyclicJoinErr) Error() string                     { return "cyclic join" }
func (e cyclicJoinErr) Unwrap() []error                 { return []error{e, e} }

// panicStringer panics when formatted: a binding that panics with it.
type panicStringer struct{}

func (panicStringer) String() string { panic("String() panicked") }

// TestConformanceHostileBindingErrorsRejectOnlyTheirCall: on every combination, a binding error
// whose Error, Code, Name or ErrorDetails method panics, or whose chain is cyclic, and a binding
// panic whose value panics when formatted, reject only that call (the program catches each and
// goes on), with the same message everywhere.
func TestConformanceHostileBindingErrorsRejectOnlyTheirCall(t *testing.T) {
	failWith := func(err error) coderuntime.Binding {
		return func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, err }
	}
	bindings := map[string]coderuntime.Binding{
		"message": failWith(panicMessageErr{}),
		"code":    failWith(panicCodeErr{}),
		"name":    failWith(panicNameErr{}),
		"details": failWith(panicDetailsErr{}),
		"cyclic":  failWith(cyclicErr{}),
		"join":    failWith(cyclicJoinErr{}),
		"wrapped": failWith(fmt.Errorf("wrapped: %w", cyclicErr{})),
		"panics":  func(context.Context, json.RawMessage) (json.RawMessage, error) { panic(panicStringer{}) },
	}
	src := "const out: any[] = []\nfor (const name of ['message', 'code', 'name', 'details', 'cyclic', 'join', 'wrapped', 'panics']) {\n" +
		"  try { await (tools as any)[name]({}); out.push('resolved') } catch (e: any) { out.push([e.message, e.code ?? null, e.name]) }\n}\nreturn out"
	want := `[["an error of type isolated.panicMessageErr whose Error method panicked: Error() panicked",null,"Error"],` +
		`["coded",null,"Error"],["named",null,"Error"],["detailed",null,"Error"],["cyclic",null,"Error"],` +
		`["cyclic join",null,"Error"],["wrapped: cyclic",null,"Error"],` +
		`["binding \"panics\" panicked: %!v(PANIC=String method: String() panicked)",null,"Error"]]`
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			skipIsolatedUnderRace(t, combo)
			rt := combo.newRuntime(t, conformanceConfig(budgetNone))
			res, err := runBounded(t, rt, coderuntime.Program{Source: src, Bindings: bindings}, hangLimit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Value) != want {
				t.Fatalf("result = %s\nwant     %s", res.Value, want)
			}
		})
	}
}

// TestConformanceAmplifiersAreCappedInTotal: on every combination, Config.MaxStringLength (here
// 1 Ki) caps the result of every string amplifier (repeat, padStart, padEnd, String concat, join),
// counting all of a call's arguments, spread or not, together; Array concat is capped (at
// maxArrayLength elements) in total, not per argument. Each over-limit call throws a RangeError
// the program catches; the same call at the limit works.
func TestConformanceAmplifiersAreCappedInTotal(t *testing.T) {
	src := `const out: string[] = []
const t = (f: () => unknown) => { try { f(); out.push('ok') } catch (e: any) { out.push(e.name) } }
t(() => 'x'.repeat(1024))
t(() => 'x'.repeat(1025))
t(() => 'xy'.repeat(513))
t(() => ''.padStart(1024, 'ab'))
t(() => ''.padStart(1025, 'ab'))
t(() => 'x'.padEnd(1025))
t(() => ''.concat(...new Array(512).fill('xx')))
t(() => ''.concat(...new Array(513).fill('xx')))
t(() => 'x'.concat('y'.repeat(600), 'z'.repeat(600)))
t(() => new Array(512).fill('xx').join(''))
t(() => new Array(513).fill('xx').join(''))
t(() => new Array(1000).fill('').join('ab'))
const big = { length: 2 ** 20, [Symbol.isConcatSpreadable]: true }
t(() => [].concat(...new Array(64).fill([1, 2, 3])))
t(() => [].concat(...new Array(5).fill(big)))
t(() => [1].concat(big, big, big, big))
t(() => { const a: any = [1]; a.length = 2 ** 21; return a.concat(a, [1]) })
return out`
	want := `["ok","RangeError","RangeError","ok","RangeError","RangeError","ok","RangeError","RangeError","ok","RangeError","RangeError","ok","RangeError","RangeError","RangeError"]`
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			skipIsolatedUnderRace(t, combo)
			cfg := conformanceConfig(budgetNone)
			cfg.MaxStringLength = 1 << 10
			rt := combo.newRuntime(t, cfg)
			res, err := runBounded(t, rt, coderuntime.Program{Source: src}, hangLimit)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Value) != want {
				t.Fatalf("result = %s\nwant     %s", res.Value, want)
			}
		})
	}
}

// TestConformanceErrorPositions: on every combination, a failure is reported at the same place in
// the model's source, the place Node reports: a new expression at its new keyword, whatever comments
// stand between it and the callee (QuickJS recorded the callee); a failed property read at the
// property's name (QuickJS recorded the dot before it); a failed call at its callee (goja recorded
// its first argument or its closing parenthesis); a failed import() at its import keyword, as an
// exception on every engine (goja could not parse it: kind syntax); a failed computed member at its
// "[" and a failed call of one at its "(" (both engines fell back to the object or the "]": no
// source-map segment stood there); a failed read inside an optional chain at its dot.
func TestConformanceErrorPositions(t *testing.T) {
	tests := []struct {
		name, src string
		line, col int
		kinds     []coderuntime.FailureKind
		msg       string // a text the failure's message contains, if not empty
	}{
		{"throw new on line 3", "const a = 1\nconst b: number = 2\nthrow new Error('boom')", 3, 7, nil, ""},
		{"after await", "await null\nawait Promise.resolve()\nthrow new RangeError('late')", 3, 7, nil, ""},
		{"in a nested function", "function f(n: number): number {\n  if (n === 0) throw new Error('deep')\n  return f(n - 1)\n}\nf(3)", 2, 22, nil, ""},
		{"after wide characters", "const s = 'ééé'; throw new Error(s)", 1, 24, nil, ""},
		{"error built before the throw", "const e = new Error('x')\nthrow e", 1, 11, nil, ""},
		{"in a class constructor", "class A { constructor() { throw new Error('A') } }\nnew   A()", 1, 33, nil, ""},
		{"constructor reached through a name chain", "const ns = { E: class { constructor() { throw new Error('ns') } } }\nnew ns.E()", 1, 47, nil, ""},
		{"new and its callee on two lines", "throw new\n  Error('split')", 1, 7, nil, ""},
		{"type arguments", "throw new Error<string>('g' as any)", 1, 7, nil, ""},
		{"in a callback", "[1].map(() => { throw new Error('m') })", 1, 23, nil, ""},
		{"reference error", "return nope + 1", 1, 8, nil, ""},
		{"comment between new and the callee", "throw new /* c */ Error('x')", 1, 7, nil, ""},
		{"line comment between new and the callee", "throw new // c\n  Error('x')", 1, 7, nil, ""},
		{"property read", "const x: any = {}\nconst y = 1\nconst z = 2\nx.a.b", 4, 5, nil, ""},
		{"property read down a chain", "const o: any = { a: {} }\n  o.a.b.c.d", 2, 9, nil, ""},
		{"method that is not there", "const o: any = {}\no.f(1, 2)", 2, 3, nil, ""},
		{"JSON.parse", "const q = 1\nJSON.parse('{')", 2, 6, nil, ""},
		{"undefined function", "undefinedFn()", 1, 1, nil, ""},
		// Computed members: V8 reports a failed a[0] at its "[", and a failed call whose callee ends
		// with a bracket (o['f']()) at its "(" (a call after a name at the name); columns count
		// UTF-16 units, as Node's do. Both engines fell back to the object or the "]".
		{"computed member read", "const a: any = undefined\na[0]", 2, 2, nil, ""},
		{"computed member read down a chain", "const a: any = [[]]\na[0][1][2]", 2, 8, nil, ""},
		{"computed member on its own line", "const a: any = undefined\na\n  [ 0 ]", 3, 3, nil, ""},
		{"computed member call", "const o: any = {}\no['f']()", 2, 7, nil, ""},
		{"computed member call by a name", "const o: any = {}\nconst k = 'x'\no[k](1)", 3, 5, nil, ""},
		{"computed member call after a dotted one", "const o: any = { a: {} }\no.a[0]()", 2, 7, nil, ""},
		{"computed member call, comment before its parenthesis", "const o: any = {}\no['f'] /* c */ (1)", 2, 16, nil, ""},
		{"computed member call, parenthesis on the next line", "const o: any = {}\no['f']\n  (1)", 3, 3, nil, ""},
		{"template literal key", "const o: any = {}\no[`f`]()", 2, 7, nil, ""},
		{"computed member call after wide characters", "const s = 'ééé'; const o: any = {}; o['f']()", 1, 43, nil, ""},
		{"computed member call after an astral character", "const s = '😀'; const o: any = {}; o['f']()", 1, 42, nil, ""},
		{"new with a computed callee", "const o: any = {}\nnew o['f']()", 2, 1, nil, ""},
		// Inside an optional chain V8 reports a failed read at its dot, not the name.
		{"optional chain, computed then dotted", "const a: any = []\na?.[0].x", 2, 7, nil, ""},
		{"optional chain, dotted", "const a: any = { b: {} }\na?.b.c.d", 2, 7, nil, ""},
		{"optional chain, dot on the next line", "const a: any = {}\na?.b\n  .c", 3, 3, nil, ""},
		// ...but a call in one at the name, as outside (a guard: the dot's segment must not take it).
		{"optional chain, method that is not there", "const a: any = { b: {} }\na?.b.c()", 2, 6, nil, ""},
		// No engine loads modules: import(name) is a promise that rejects (an exception).
		{"await import", "await import('x')", 1, 7, nil, "cannot load modules"},
		{"import after a statement", "const a = 1\nconst m = await import('x')\nreturn 1", 2, 17, nil, ""},
	}
	for _, combo := range conformanceCombos {
		t.Run(combo.name, func(t *testing.T) {
			skipIsolatedUnderRace(t, combo)
			rt := combo.newRuntime(t, conformanceConfig(budgetNone))
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := runBounded(t, rt, coderuntime.Program{Source: tt.src}, hangLimit)
					var f *coderuntime.Failure
					if !errors.As(err, &f) {
						t.Fatalf("Run: %v, want a failure", err)
					}
					want := tt.kinds
					if want == nil {
						want = kinds(coderuntime.KindException)
					}
					if !slices.Contains(want, f.Kind) {
						t.Fatalf("kind %s (%s), want one of %v", f.Kind, f.Message, want)
					}
					if !strings.Contains(f.Message, tt.msg) {
						t.Fatalf("message %q, want it to contain %q", f.Message, tt.msg)
					}
					if f.Line != tt.line || f.Column != tt.col {
						t.Fatalf("position %d:%d, want %d:%d (%s)", f.Line, f.Column, tt.line, tt.col, f.Message)
					}
				})
			}
		})
	}
}
