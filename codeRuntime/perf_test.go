package coderuntime

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dop251/goja"
)

// jsonOracle compares decodeJSON with the JSON.parse it stands in for.
type jsonOracle struct {
	vm          *goja.Runtime
	parse, same goja.Callable
}

func newJSONOracle(t testing.TB) *jsonOracle {
	vm := goja.New()
	v, err := vm.RunString(`[JSON.parse, function same(a, b) {
	if (typeof a !== typeof b) return false;
	if (a === null || typeof a !== "object") return Object.is(a, b);
	if (b === null || Array.isArray(a) !== Array.isArray(b)) return false;
	if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
	var ka = Reflect.ownKeys(a), kb = Reflect.ownKeys(b);
	if (ka.length !== kb.length) return false;
	for (var i = 0; i < ka.length; i++) {
		if (ka[i] !== kb[i]) return false;
		var da = Object.getOwnPropertyDescriptor(a, ka[i]), db = Object.getOwnPropertyDescriptor(b, kb[i]);
		if (da.writable !== db.writable || da.enumerable !== db.enumerable || da.configurable !== db.configurable) return false;
		if (!same(da.value, db.value)) return false;
	}
	return true;
}]`)
	if err != nil {
		t.Fatal(err)
	}
	o := v.(*goja.Object)
	parse, _ := goja.AssertFunction(o.Get("0"))
	same, _ := goja.AssertFunction(o.Get("1"))
	return &jsonOracle{vm: vm, parse: parse, same: same}
}

// check fails when decodeJSON accepts data and disagrees with JSON.parse, or accepts what JSON.parse
// rejects. Declining (ok == false) is always allowed: the caller then uses JSON.parse.
func (o *jsonOracle) check(t testing.TB, data []byte) (accepted bool) {
	t.Helper()
	fast, ok := decodeJSON(o.vm, data)
	want, err := o.parse(goja.Undefined(), o.vm.ToValue(string(data)))
	if !ok {
		return false
	}
	if err != nil {
		t.Fatalf("decodeJSON accepted %q, which JSON.parse rejects: %v", data, err)
	}
	same, err := o.same(goja.Undefined(), fast, want)
	if err != nil {
		t.Fatal(err)
	}
	if !same.ToBoolean() {
		t.Fatalf("decodeJSON(%q) differs from JSON.parse", data)
	}
	return true
}

var jsonSeeds = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.5`, `1e3`, `1E+3`, `1e-3`, `123456789012345`, `1234567890123456789`,
	`9007199254740993`, `1e400`, `-1e400`, `4.9e-324`, `1e-400`, `01`, `1.`, `.1`, `+1`, `-`, `1e`, `0x10`, `NaN`, `Infinity`,
	`""`, `"abc"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0041\u00e9\u4e2d\u003c"`, `"\ud83d\ude00"`, `"\ud800"`, `"\udc00x"`, `"\u12"`,
	`"\x"`, "\"tab\there\"", "\"\xff\"", "\"é中😀\"", `"unterminated`, `{}`, `[]`, ` { "a" : [ 1 , 2 ] } `, `{"a":1,"a":2}`,
	`{"__proto__":{"x":1}}`, `{"2":"b","1":"a","x":0,"0":"z"}`, `[1,[2,[3,[4]]]]`, `{"a":}`, `{"a" 1}`, `{,}`, `[1,]`, `[,1]`,
	`{"a":1,}`, `{a:1}`, `[1 2]`, `1 2`, `{} x`, "\n\t 7 \r\n", `"` + strings.Repeat("x", 40) + `"`, `{"n":1,"s":"x","b":true,"z":null}`,
	strings.Repeat("[", 300) + strings.Repeat("]", 300), strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `[]]`, `{}}`,
	"\ufeff1", `nul`, `tru`, `falsey`,
}

func TestDecodeJSONMatchesJSONParse(t *testing.T) {
	o := newJSONOracle(t)
	accepted := 0
	for _, s := range jsonSeeds {
		if o.check(t, []byte(s)) {
			accepted++
		}
	}
	// The fast path must actually take the common shapes.
	for _, s := range []string{`{"n":1}`, `[1,"a",{"b":[true,false,null]}]`, `"a\u003cb"`, `-0`, `1.25e2`, `"é"`} {
		if _, ok := decodeJSON(o.vm, []byte(s)); !ok {
			t.Errorf("decodeJSON declined %s", s)
		}
	}
	if accepted == 0 {
		t.Fatal("nothing accepted")
	}
}

func FuzzDecodeJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	o := newJSONOracle(f)
	f.Fuzz(func(t *testing.T, data []byte) { o.check(t, data) })
}

func TestCompileCache(t *testing.T) {
	g := newTestRuntime(t)
	// The same source from many runs at once: the cached program is shared, the runtimes are not.
	src := "(globalThis as any).n = ((globalThis as any).n ?? 0) + 1\nconst r = await tools.echo({ n: (globalThis as any).n })\nif (r.n !== 1) throw new Error('state leaked')\nthrow new Error('pos')"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				_, err := g.Run(context.Background(), Program{Source: src, Bindings: map[string]Binding{"echo": echo}})
				f, ok := err.(*Failure)
				if !ok || f.Message != "Error: pos" || f.Line != 4 || f.Column != 7 {
					t.Errorf("err = %v, want Error: pos at 4:7", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := g.programs.len(); n != 1 {
		t.Fatalf("cache holds %d programs, want 1", n)
	}
	t.Run("bounded", func(t *testing.T) {
		for i := range cacheMaxEntries + 10 {
			mustRun(t, g, Program{Source: fmt.Sprintf("return %d", i)})
		}
		if n := g.programs.len(); n != cacheMaxEntries {
			t.Fatalf("cache holds %d programs, want %d", n, cacheMaxEntries)
		}
		big := "return '" + strings.Repeat("x", cacheMaxSource) + "'.length"
		mustRun(t, g, Program{Source: big})
		if g.programs.get(big) != nil {
			t.Fatal("an over-long source was cached")
		}
		var c programCache
		for i := range 40 {
			c.put(fmt.Sprintf("%d%s", i, strings.Repeat(" ", cacheMaxSource-8)), nil)
		}
		if c.bytes > cacheMaxBytes || c.len() != cacheMaxBytes/cacheMaxSource {
			t.Fatalf("cache holds %d programs, %d bytes", c.len(), c.bytes)
		}
	})
	t.Run("syntax errors are not cached", func(t *testing.T) {
		before := g.programs.len()
		mustFail(t, g, Program{Source: "const = 1"}, KindSyntax)
		mustFail(t, g, Program{Source: "const = 1"}, KindSyntax)
		if g.programs.get("const = 1") != nil || g.programs.len() != before {
			t.Fatal("a failed compilation was cached")
		}
	})
}

// TestWorkersAreReused pins the per-run worker pool: awaited calls in sequence reuse one goroutine,
// concurrent calls never exceed MaxConcurrentCalls, and every worker is gone when Run returns
// (goleak checks the last part for the whole package).
func TestWorkersAreReused(t *testing.T) {
	g := newTestRuntime(t, func(c *Config) { c.MaxConcurrentCalls = 3 })
	var mu sync.Mutex
	active, peak := 0, 0
	slowEcho := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		active++
		peak = max(peak, active)
		mu.Unlock()
		defer func() { mu.Lock(); active--; mu.Unlock() }()
		return args, nil
	}
	src := "let s = 0\nfor (let i = 0; i < 20; i++) s += (await tools.e({ n: i })).n\nconst all = await Promise.all([...Array(10).keys()].map((n) => tools.e({ n })))\nreturn s + all.reduce((a, r) => a + r.n, 0)"
	res := mustRun(t, g, Program{Source: src, Bindings: map[string]Binding{"e": slowEcho}})
	if string(res.Value) != "235" {
		t.Fatalf("value = %s", res.Value)
	}
	if peak > 3 {
		t.Fatalf("%d calls ran at once, over MaxConcurrentCalls 3", peak)
	}
}

// BenchmarkRunEmptyUncached is BenchmarkRunEmpty with a different program each time, so every run
// pays for the esbuild transform and goja compile (the cache never hits).
func BenchmarkRunEmptyUncached(b *testing.B) {
	g, _ := New(Config{})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := g.Run(ctx, Program{Source: fmt.Sprintf("// %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRun1000BindingsObject is BenchmarkRun1000Bindings with a typical tool result: a small
// object with strings, numbers and an array.
func BenchmarkRun1000BindingsObject(b *testing.B) {
	g, _ := New(Config{})
	ctx := context.Background()
	result := json.RawMessage(`{"path":"src/main.go","size":1234,"lines":["package main","","func main() {}"],"ok":true}`)
	tool := func(context.Context, json.RawMessage) (json.RawMessage, error) { return result, nil }
	p := Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.read({ path: 'f' + i })).lines.length\nreturn s", Bindings: map[string]Binding{"read": tool}}
	for b.Loop() {
		if _, err := g.Run(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
