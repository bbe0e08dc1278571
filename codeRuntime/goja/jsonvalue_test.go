package goja

import (
	"strings"
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
