package goja

import (
	"fmt"
	"testing"
	"time"

	"github.com/dop251/goja"
)

// argGen is JavaScript that defines mk(seed, depth): a fresh value built at random from seed (the
// same value for the same seed) and the log its getters, toJSON methods, valueOf methods and Proxy
// traps append to when they run, as {v, log}. It covers what JSON.stringify treats specially:
// every primitive (lone surrogates, U+FFFD, control characters, -0, NaN, big and tiny floats,
// BigInt, symbols), wrapper objects, arrays (holes, extra properties, Proxies of arrays), getters
// (some throwing, some deleting keys), toJSON (on the object, inherited, returning anything),
// Proxies (revoked, with traps that log), JSON.rawJSON, Dates, Maps, class instances, templated
// built-ins (Math, Number.prototype, ...), shared references and cycles.
const argGen = `
function mk(seed, maxDepth) {
	var s = seed >>> 0;
	function rnd() { s = (s + 0x6D2B79F5) >>> 0; var t = s; t = Math.imul(t ^ (t >>> 15), t | 1); t ^= t + Math.imul(t ^ (t >>> 7), t | 61); return ((t ^ (t >>> 14)) >>> 0) / 4294967296; }
	function pick(a) { return a[Math.floor(rnd() * a.length)]; }
	var log = [];
	globalThis.__log = log;
	var made = [];
	var strs = ["", "a", "key", "\u00e9t\u00e9", "\ud83d\ude00", "\ud800", "\ud83d\ude00\udbff\udfff\ud800\u00e9", "x\udc00y", "\ufffd", "\u2028", "q\"b\\s", "\b\f\n\r\t\u0001\u001f\u007f", "10", "-1", "1.5", "__proto__", "toJSON", "length", "constructor"];
	function prim() {
		switch (Math.floor(rnd() * 16)) {
		case 0: return undefined;
		case 1: return null;
		case 2: return rnd() < 0.5;
		case 3: return Math.floor(rnd() * 2000) - 1000;
		case 4: return pick([0, -0, NaN, Infinity, -Infinity, 1e21, 1.5e-7, 0.1, 2 ** 53, -(2 ** 31), 123456789.125, 5e-324]);
		case 5: case 6: return pick(strs);
		case 7: return pick([1n, -5n, 0n]);
		case 8: return Symbol("s");
		case 9: return function f() {};
		default: return pick(strs) + Math.floor(rnd() * 10);
		}
	}
	function obj(d) {
		if (made.length > 0 && rnd() < 0.08) return pick(made); // shared reference, or a cycle
		var kind = Math.floor(rnd() * 23);
		var o;
		switch (kind) {
		case 0: case 1: case 2: case 3:
			o = {};
			break;
		case 4: case 5: case 6:
			o = [];
			break;
		case 7: return pick([new Number(pick([1, -0, NaN, 2.5])), new String(pick(strs)), new Boolean(rnd() < 0.5), Object(3n), Object(Symbol("w"))]);
		case 8: {
			var n = new Number(7);
			n.valueOf = function () { log.push("valueOf"); return 8; };
			var st = new String("s");
			st.toString = function () { log.push("toString"); return "t"; };
			return pick([n, st]);
		}
		case 9: return pick([new Date(0), new Date(NaN), new Map([[1, 2]]), new Set([1]), /re/g, new Error("e"), Promise.resolve(1), new (class C { constructor() { this.a = 1; } })()]);
		case 10: return pick([globalThis, Math, JSON, Reflect, Number.prototype, String.prototype, Boolean.prototype, Object.getPrototypeOf(1n), Symbol.prototype, Array.prototype, Object.prototype, Date.prototype]);
		case 11: return JSON.rawJSON(pick(["1", "\"r\"", "null", "-2.5e3"]));
		case 12: {
			var target = rnd() < 0.5 ? {a: 1, b: [2]} : [1, {c: 3}];
			var p = new Proxy(target, {
				get: function (t, k, r) { log.push("get " + String(k)); return Reflect.get(t, k, r); },
				ownKeys: function (t) { log.push("ownKeys"); return Reflect.ownKeys(t); },
				getOwnPropertyDescriptor: function (t, k) { log.push("gopd " + String(k)); return Reflect.getOwnPropertyDescriptor(t, k); },
			});
			if (rnd() < 0.3) return new Proxy(p, {});
			return p;
		}
		case 13: {
			var r = Proxy.revocable({}, {});
			r.revoke();
			return r.proxy;
		}
		case 14: return Object.create(null);
		case 16: {
			var len = pick([-1, "2", 1.7, {valueOf: function () { log.push("length valueOf"); return 2; }}]);
			return new Proxy([1, [2]], {get: function (t, k, r) { return k === "length" ? len : Reflect.get(t, k, r); }});
		}
		case 15: {
			var arr = [1, , 3];
			arr.extra = "x";
			arr.length = Math.floor(rnd() * 6);
			return arr;
		}
		default:
			o = {};
		}
		made.push(o);
		var n = Math.floor(rnd() * 5);
		for (var i = 0; i < n; i++) {
			var k = Array.isArray(o) ? i : pick(strs);
			var v = d < maxDepth && rnd() < 0.45 ? obj(d + 1) : prim();
			var how = Math.floor(rnd() * 12);
			if (how === 0) {
				(function (k, v) {
					Object.defineProperty(o, k, {enumerable: true, configurable: true, get: function () { log.push("getter " + String(k)); return v; }});
				})(k, v);
			} else if (how === 1) {
				(function (k) {
					Object.defineProperty(o, k, {enumerable: true, configurable: true, get: function () { log.push("throwing getter"); throw new RangeError("no " + String(k)); }});
				})(k);
			} else if (how === 2) {
				Object.defineProperty(o, k, {enumerable: false, configurable: true, value: v});
			} else if (how === 3) {
				(function (v) {
					o.toJSON = function (key) { log.push("toJSON " + typeof key + " " + String(key)); return v; };
				})(v);
			} else if (how === 4 && !Array.isArray(o)) {
				(function (victim) {
					Object.defineProperty(o, "z" + i, {enumerable: true, configurable: true, get: function () { log.push("deleter"); delete o[victim]; return 1; }});
				})(pick(strs));
			} else if (how === 5) {
				try { o[k] = v; } catch (e) {}
				o[Symbol("sym")] = 1;
			} else {
				try { o[k] = v; } catch (e) {} // __proto__ = an ancestor
			}
		}
		return o;
	}
	var v = rnd() < 0.85 ? obj(0) : prim();
	return {v: v, log: log};
}
`

// referenceJSON is the guarded stringify argJSON replaced: goja's JSON.stringify through a Go
// replacer that checks the interrupt and refuses values nested more than maxDepth levels.
func referenceJSON(r *run, v goja.Value) (out string, defined bool, thrown goja.Value, err error) {
	return newReferenceJSON(r)(v)
}

// newReferenceJSON is referenceJSON with its replacer made once (as the run made it once).
func newReferenceJSON(r *run) func(v goja.Value) (out string, defined bool, thrown goja.Value, err error) {
	var stack []*goja.Object
	guard := r.vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		if r.interrupted.Load() {
			r.throwRange("the run was interrupted")
		}
		v := fc.Argument(1)
		o, ok := v.(*goja.Object)
		if !ok {
			return v
		}
		if _, fn := goja.AssertFunction(o); fn {
			return v
		}
		holder, _ := fc.This.(*goja.Object)
		for n := len(stack); n > 0 && stack[n-1] != holder; n-- {
			stack = stack[:n-1]
		}
		stack = append(stack, o)
		if len(stack) > r.maxDepth {
			r.throwRange(fmt.Sprintf("JSON.stringify: the value is nested more than %d levels deep", r.maxDepth))
		}
		return v
	})
	return func(v goja.Value) (out string, defined bool, thrown goja.Value, err error) {
		stack = stack[:0]
		s, err := r.h.nativeStringify(goja.Undefined(), v, guard)
		if err != nil {
			if ex, ok := err.(*goja.Exception); ok {
				return "", false, ex.Value(), nil
			}
			return "", false, nil, err
		}
		if goja.IsUndefined(s) {
			return "", false, nil, nil
		}
		return s.String(), true, nil, nil
	}
}

// argJSONRun is a prepared run with argGen defined, its maxDepth lowered to depth.
func argJSONRun(t testing.TB, depth int) (*run, goja.Callable) {
	t.Helper()
	g := newTestRuntime(t)
	r := g.newRun()
	r.maxDepth = depth
	r.cpuLeft = time.Hour
	r.cpuTimer = time.AfterFunc(time.Hour, func() {})
	t.Cleanup(func() { r.cpuTimer.Stop() })
	if err := r.prepare(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.vm.RunString(argGen); err != nil {
		t.Fatal(err)
	}
	mk, ok := goja.AssertFunction(r.vm.Get("mk"))
	if !ok {
		t.Fatal("no mk")
	}
	return r, mk
}

// outcome is what serializing a value yields, as the program can observe it.
type outcome struct {
	json    string
	defined bool
	thrown  string // the thrown value, described
	log     string // what the value's code did, in order
}

func serializeBoth(t testing.TB, r *run, mk goja.Callable, seed uint32, maxNest int) (want, got outcome) {
	t.Helper()
	build := func() (goja.Value, *goja.Object) {
		res, err := mk(goja.Undefined(), r.vm.ToValue(seed), r.vm.ToValue(maxNest))
		if err != nil {
			t.Fatalf("seed %d: mk: %v", seed, err)
		}
		o := res.(*goja.Object)
		return o.Get("v"), o.Get("log").(*goja.Object)
	}
	describe := func(v goja.Value) string {
		if v == nil {
			return ""
		}
		msg, _, err := r.describe(v)
		if err != nil {
			t.Fatalf("seed %d: describe: %v", seed, err)
		}
		return msg
	}
	logText := func(l *goja.Object) string { return fmt.Sprint(l.Export()) }

	v, l := build()
	s, defined, thrown, err := referenceJSON(r, v)
	if err != nil {
		t.Fatalf("seed %d: reference: %v", seed, err)
	}
	want = outcome{s, defined, describe(thrown), logText(l)}

	v, l = build()
	b, defined, thrown := r.argumentJSON(v)
	got = outcome{string(b), defined, describe(thrown), logText(l)}
	return want, got
}

// TestArgJSONMatchesStringify pins that a binding argument is serialized as the guarded
// JSON.stringify serialized it: the same JSON, the same refusal, and the same getters, toJSON
// methods and Proxy traps run in the same order, for thousands of values built at random, from
// the ordinary to the hostile.
func TestArgJSONMatchesStringify(t *testing.T) {
	r, mk := argJSONRun(t, 6)
	seeds := uint32(3000)
	if testing.Short() {
		seeds = 500
	}
	for seed := uint32(0); seed < seeds; seed++ {
		want, got := serializeBoth(t, r, mk, seed, 4+int(seed%5))
		if want != got {
			t.Fatalf("seed %d:\n got %+v\nwant %+v", seed, got, want)
		}
	}
}

// TestArgJSONHostilePrototypes is TestArgJSONMatchesStringify with getters on the prototypes
// JSON.stringify reads toJSON through (Object.prototype, and BigInt's, which a getter must see as
// the primitive) and an Array.prototype element, as a hostile program installs them.
func TestArgJSONHostilePrototypes(t *testing.T) {
	r, mk := argJSONRun(t, 6)
	if _, err := r.vm.RunString(`
		Object.defineProperty(Object.getPrototypeOf(1n), "toJSON", {configurable: true, get: function () {
			__log.push("bigint toJSON getter " + typeof this);
			return function (k) { __log.push("bigint toJSON " + typeof this + " " + k); return typeof this === "bigint" ? String(this) + "n" : 1n; };
		}});
		Object.defineProperty(Object.prototype, "toJSON", {configurable: true, get: function () {
			__log.push("toJSON getter");
			var calls = __log.length;
			if (calls % 7 === 0) throw new TypeError("no toJSON " + calls);
			return calls % 3 === 0 ? function (k) { __log.push("inherited toJSON " + k); return [k]; } : undefined;
		}});
		Object.defineProperty(Array.prototype, "1", {configurable: true, get: function () { __log.push("hole getter"); return "h"; },
			set: function (v) { Object.defineProperty(this, "1", {value: v, writable: true, enumerable: true, configurable: true}); }});
	`); err != nil {
		t.Fatal(err)
	}
	for seed := uint32(0); seed < 500; seed++ {
		want, got := serializeBoth(t, r, mk, seed, 4)
		if want != got {
			t.Fatalf("seed %d:\n got %+v\nwant %+v", seed, got, want)
		}
	}
}

// FuzzArgJSON is TestArgJSONMatchesStringify's property over fuzzed seeds.
func FuzzArgJSON(f *testing.F) {
	for _, s := range []uint32{0, 1, 7, 42, 1234, 99999} {
		f.Add(s)
	}
	r, mk := argJSONRun(f, 6)
	f.Fuzz(func(t *testing.T, seed uint32) {
		want, got := serializeBoth(t, r, mk, seed, 4+int(seed%5))
		if want != got {
			t.Fatalf("seed %d:\n got %+v\nwant %+v", seed, got, want)
		}
	})
}

// TestArgJSONEdges pins argJSON on the values a model's program plausibly passes and the guards'
// edges: the nesting limit (the deepest accepted value and one level more), a cycle, a BigInt, the
// interrupt, and a binding called from a toJSON of the argument being serialized.
func TestArgJSONEdges(t *testing.T) {
	r, _ := argJSONRun(t, 5)
	run := func(src string) outcome {
		t.Helper()
		v, err := r.vm.RunString(src)
		if err != nil {
			t.Fatal(err)
		}
		b, defined, thrown := r.argumentJSON(v)
		o := outcome{json: string(b), defined: defined}
		if thrown != nil {
			o.thrown, _, _ = r.describe(thrown)
		}
		return o
	}
	for _, tt := range []struct {
		src  string
		want outcome
	}{
		{`({x: 1, s: "a\u00e9\ud83d\ude00", f: 1.5, n: null, t: true, a: [1, "b", undefined, () => 1]})`, outcome{json: `{"x":1,"s":"aé😀","f":1.5,"n":null,"t":true,"a":[1,"b",null,null]}`, defined: true}},
		{`[[[[{}]]]]`, outcome{json: `[[[[{}]]]]`, defined: true}},
		{`[[[[[{}]]]]]`, outcome{thrown: "RangeError: JSON.stringify: the value is nested more than 5 levels deep"}},
		{`var c = {}; c.c = [c]; c`, outcome{thrown: "TypeError: Converting circular structure to JSON"}},
		{`({b: 1n})`, outcome{thrown: "TypeError: Do not know how to serialize a BigInt"}},
		{`(function () {})`, outcome{}},
		{`Symbol()`, outcome{}},
		{`"\ud800"`, outcome{json: `"\ud800"`, defined: true}},
	} {
		if got := run(tt.src); got != tt.want {
			t.Errorf("%s: got %+v, want %+v", tt.src, got, tt.want)
		}
	}
	r.interrupted.Store(true)
	if got, want := run(`({a: 1})`), (outcome{thrown: "RangeError: the run was interrupted"}); got != want {
		t.Errorf("interrupted: got %+v, want %+v", got, want)
	}
	r.interrupted.Store(false)
	// A toJSON that serializes another argument while the first is being serialized (as a binding
	// call from it does) leaves the first intact.
	r.vm.Set("nested", func(fc goja.FunctionCall) goja.Value {
		b, _, _ := r.argumentJSON(fc.Argument(0))
		return r.vm.ToValue(string(b))
	})
	if got, want := run(`({a: [1, {toJSON() { return nested({b: [2, 3]}) }}], c: 4})`), (outcome{json: `{"a":[1,"{\"b\":[2,3]}"],"c":4}`, defined: true}); got != want {
		t.Errorf("nested: got %+v, want %+v", got, want)
	}
}

// BenchmarkArgumentJSON compares argJSON with the guarded stringify it replaced on a small tool
// argument of five keys (sub-benchmarks "go" and "stringify").
func BenchmarkArgumentJSON(b *testing.B) {
	r, _ := argJSONRun(b, 10000)
	v, err := r.vm.RunString(`({path: "src/main.go", line: 10, content: "a \"quoted\" line\n", recursive: true, tags: ["a", "b"]})`)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, ok, _ := r.argumentJSON(v); !ok {
				b.Fatal("undefined")
			}
		}
	})
	b.Run("stringify", func(b *testing.B) {
		ref := newReferenceJSON(r)
		b.ReportAllocs()
		for b.Loop() {
			if s, ok, _, _ := ref(v); !ok || len([]byte(s)) == 0 {
				b.Fatal("undefined")
			}
		}
	})
}

// TestArgJSONToLengthIsGojas: a Proxy's length is clamped as goja's ToLength clamps it (to 2^53-1),
// not to the int64 range.
func TestArgJSONToLengthIsGojas(t *testing.T) {
	vm := goja.New()
	for _, c := range []struct {
		in   goja.Value
		want int64
	}{
		{vm.ToValue(-5), 0},
		{vm.ToValue(7.9), 7},
		{vm.ToValue(float64(1 << 53)), 1<<53 - 1},
		{vm.ToValue(1e300), 1<<53 - 1},
		{vm.ToValue(float64(1<<53 - 1)), 1<<53 - 1},
		{nil, 0},
	} {
		if got := toLength(c.in); got != c.want {
			t.Errorf("toLength(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}
