package goja

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dop251/goja"

	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
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

// randomJSON appends a random JSON value of at most depth levels to b: the shapes decodeJSON takes
// (objects with repeated, duplicate, index-like and __proto__ keys, arrays, short and long strings with
// escapes and non-ASCII text, numbers) and some it declines (surrogate escapes, big numbers).
func randomJSON(b []byte, rng *rand.Rand, depth int) []byte {
	keys := []string{`"name"`, `"size"`, `"__proto__"`, `"constructor"`, `"toString"`, `"0"`, `"1"`, `"10"`, `"-1"`,
		`"4294967295"`, `""`, `"é"`, `"a\"b"`, `"k\u0041"`, `"length"`, `"` + strings.Repeat("k", 70) + `"`, `"x"`}
	strs := []string{`""`, `"f1"`, `"abc"`, `"é中😀"`, `"a\nb\\c\/"`, `"\u00e9\u0041"`, `"\ud83d\ude00"`,
		`"` + strings.Repeat("y", 64) + `"`, `"` + strings.Repeat("z", 65) + `"`, `"` + strings.Repeat("é", 40) + `"`}
	nums := []string{`0`, `-0`, `7`, `255`, `256`, `123456789012345`, `1234567890123456`, `-12`, `1.5`, `1e3`, `-2.5E-3`, `9007199254740993`}
	n := rng.IntN(10)
	if depth <= 0 {
		n = rng.IntN(6)
	}
	switch n {
	case 0:
		return append(b, []string{"null", "true", "false"}[rng.IntN(3)]...)
	case 1, 2:
		return append(b, nums[rng.IntN(len(nums))]...)
	case 3, 4, 5:
		return append(b, strs[rng.IntN(len(strs))]...)
	case 6, 7:
		b = append(b, '[')
		for i := range rng.IntN(6) {
			if i > 0 {
				b = append(b, ',')
			}
			b = randomJSON(b, rng, depth-1)
		}
		return append(b, ']')
	default:
		b = append(b, '{')
		for i := range rng.IntN(6) {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, keys[rng.IntN(len(keys))]...)
			b = append(b, ':')
			b = randomJSON(b, rng, depth-1)
		}
		return append(b, '}')
	}
}

// TestDecodeJSONRandomMatchesJSONParse: decodeJSON makes the value JSON.parse makes (same
// prototypes, own keys in order, attributes and values) for random documents, in a VM whose
// Object.prototype and Array.prototype have setters (for __proto__, keys and indexes) that must never run.
func TestDecodeJSONRandomMatchesJSONParse(t *testing.T) {
	o := newJSONOracle(t)
	if _, err := o.vm.RunString(`
globalThis.setterCalls = 0;
for (const k of ["__proto__", "name", "size", "0", "1", "x", "constructor", "length", ""]) {
	Object.defineProperty(Object.prototype, k, {set(v) { setterCalls++ }, get() { return undefined }, configurable: true});
}
for (const k of ["0", "1", "2"]) {
	Object.defineProperty(Array.prototype, k, {set(v) { setterCalls++ }, get() { return undefined }, configurable: true});
}`); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	accepted := 0
	var b []byte
	for range 3000 {
		b = randomJSON(b[:0], rng, 5)
		if o.check(t, b) {
			accepted++
		}
	}
	if calls := o.vm.Get("setterCalls").ToInteger(); calls != 0 {
		t.Fatalf("a setter on a prototype ran %d times", calls)
	}
	if accepted < 1000 {
		t.Fatalf("decodeJSON accepted only %d of 3000 documents", accepted)
	}
}

// TestDecodeJSONProtoKeyIsOwnData: a "__proto__" key is an own data property; the prototype of the
// object is Object.prototype, and no setter on Object.prototype runs.
func TestDecodeJSONProtoKeyIsOwnData(t *testing.T) {
	vm := goja.New()
	if _, err := vm.RunString(`globalThis.hit = 0; Object.defineProperty(Object.prototype, "name", {set(v) { hit++ }, configurable: true})`); err != nil {
		t.Fatal(err)
	}
	v, ok := decodeJSON(vm, []byte(`[{"__proto__":{"polluted":1},"name":"n"},{"name":"m","__proto__":[]}]`))
	if !ok {
		t.Fatal("declined")
	}
	vm.Set("v", v)
	r, err := vm.RunString(`JSON.stringify([v.map(o => [Object.getPrototypeOf(o) === Object.prototype, Object.keys(o),
		Object.getOwnPropertyDescriptor(o, "name").value, o.polluted === undefined, Object.prototype.hasOwnProperty.call(o, "__proto__")]), hit])`)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.String(), `[[[true,["__proto__","name"],"n",true,true],[true,["name","__proto__"],"m",true,true]],0]`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// BenchmarkDecodeJSON: decodeJSON of the 1,000-object array of BenchmarkTypedSubCallRatio
// (plugins/codemode), the typed side's JS value.
func BenchmarkDecodeJSON(b *testing.B) {
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"name":"f` + strconv.Itoa(i) + `","size":` + strconv.Itoa(i*37) + `}`)
	}
	sb.WriteByte(']')
	doc := []byte(sb.String())
	vm := goja.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := decodeJSON(vm, doc); !ok {
			b.Fatal("declined")
		}
	}
}

// TestDecodeShortStringAllocations: a short ASCII string (the common tool result "ok", a name, a
// path) is decoded with the string's own allocations only (goja's copy and its String value); its
// UTF-16 units are staged on the stack (before, in a slice allocated for every decode: 3).
func TestDecodeShortStringAllocations(t *testing.T) {
	if crtest.RaceDetector {
		t.Skip("the race detector changes allocation counts")
	}
	vm := goja.New()
	doc := []byte(`"ok"`)
	allocs := testing.AllocsPerRun(100, func() {
		if v, ok := decodeJSON(vm, doc); !ok || v.String() != "ok" {
			t.Fatalf("decodeJSON = %v, %v", v, ok)
		}
	})
	if allocs > 2 {
		t.Fatalf("decoding a short string allocates %.0f objects, want at most 2", allocs)
	}
}
