package schema

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The Out types of the differential fuzz test: what typed tools return
// (structs, lists, maps with and without omitempty, pointers, embedded
// structs, times, bytes, nesting) and roots that are not objects.

type encInner struct {
	Note string `json:"note,omitempty"`
	Seq  uint16 `json:"seq"`
}

type encEntry struct {
	Name  string            `json:"name"`
	Size  int64             `json:"size"`
	Mode  uint32            `json:"mode"`
	Small int8              `json:"small"`
	Ratio float64           `json:"ratio"`
	Mod   time.Time         `json:"mod"`
	Data  []byte            `json:"data"`
	Tags  map[string]string `json:"tags,omitempty"`
	Ptr   *int              `json:"ptr"`
	Set   [2]bool           `json:"set"`
}

// encOpt is embedded through a pointer: its fields are omitted when nil.
type encOpt struct {
	Extra string `json:"extra,omitempty"`
}

type encListing struct {
	encInner
	*encOpt
	Entries []encEntry        `json:"entries"`
	Total   int               `json:"total"`
	Counts  map[string]uint64 `json:"counts"` // a nil map is null: the schema refuses it
	Opt     *encEntry         `json:"opt,omitempty"`
}

type encNested struct {
	Levels [][]map[string]*encInner `json:"levels"`
}

// encCase is one Out type: its check, and a fresh value to decode into.
type encCase struct {
	name  string
	check *TypeCheck
	new   func() any // a pointer to a zero value of the type
	root  reflect.Type
}

func encCases(t testing.TB) []encCase {
	t.Helper()
	mk := func(name string, typ reflect.Type) encCase {
		js, err := Infer(typ)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		vs, err := CompileValueSchema(js)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		c := vs.ForType(typ)
		if c == nil || c.enc == nil {
			t.Fatalf("%s: no fast path for %s (schema %s)", name, typ, js)
		}
		return encCase{name: name, check: c, root: typ, new: func() any { return reflect.New(typ).Interface() }}
	}
	return []encCase{
		mk("listing", reflect.TypeFor[encListing]()),
		mk("*listing", reflect.TypeFor[*encListing]()),
		mk("nested", reflect.TypeFor[encNested]()),
		mk("map", reflect.TypeFor[map[string][]float64]()),
		mk("list", reflect.TypeFor[[]string]()),
		mk("string", reflect.TypeFor[string]()),
	}
}

// marshalAsDefine encodes v as tools.Define's body does: a nil root
// pointer as its element's zero value.
func marshalAsDefine(v any, root reflect.Type) ([]byte, error) {
	if root.Kind() == reflect.Pointer && reflect.ValueOf(v).IsNil() {
		v = reflect.Zero(root.Elem()).Interface()
	}
	return json.Marshal(v)
}

// checkEncAgrees fails t unless c's fast paths agree with the generic
// validator on v (a value of c's type): Encode returns exactly the
// canonical bytes json.Marshal then ValidateEncoded return, or declines;
// it never accepts what they refuse; TypeCheck.ValidateEncoded returns
// what ValueSchema.ValidateEncoded returns.
func checkEncAgrees(t *testing.T, c encCase, v any) {
	t.Helper()
	fast, ok := c.check.Encode(v)
	b, err := marshalAsDefine(v, c.root)
	if err != nil {
		if ok {
			t.Fatalf("%s: Encode accepted %#v, json.Marshal refuses it: %v", c.name, v, err)
		}
		return
	}
	canon, vs := c.check.s.ValidateEncoded(b)
	if ok && (len(vs) > 0 || string(fast) != string(canon)) {
		t.Fatalf("%s: Encode %s, but json.Marshal %s validates to %s %v", c.name, fast, b, canon, vs)
	}
	c2, vs2 := c.check.ValidateEncoded(b)
	if string(c2) != string(canon) || !reflect.DeepEqual(vs, vs2) {
		t.Fatalf("%s: TypeCheck.ValidateEncoded(%s) = %s %v, ValueSchema's %s %v", c.name, b, c2, vs2, canon, vs)
	}
	if c.check.Canonical(b) && (len(vs) > 0 || string(canon) != string(b)) {
		t.Fatalf("%s: Canonical(%s) but it validates to %s %v", c.name, b, canon, vs)
	}
}

// FuzzTypeCheckIsValidate: for values of a few Out types (decoded from the
// fuzz input with encoding/json, so with any strings, numbers up to the
// types' ranges, nil and empty lists and maps), the typed
// fast paths accept exactly what json.Marshal then the generic validator
// accept, with the same bytes, and decline or agree otherwise.
func FuzzTypeCheckIsValidate(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"entries":[{"name":"a","size":2,"tags":{"x":"y"},"data":"AAE=","ptr":3,"set":[true,false]}],"total":5,"counts":{"b":1,"a":2}}`,
		`{"entries":null,"counts":null}`, `{"note":"<&>\u2028","seq":7,"counts":{},"extra":"e"}`,
		`{"entries":[{"size":9007199254740993,"ratio":1e300,"mod":"2024-01-02T03:04:05.123+02:00"}],"counts":{"\u00e9":18446744073709551615}}`,
		`{"levels":[[{"a":{"seq":1},"b":null},null],null,[]]}`,
		`{"a":[1.5,-0,1e21,123456789012345678,0.1],"b":null,"c":[]}`, `["a","\u0000\b"]`, `"x"`, `null`,
	} {
		f.Add(s)
	}
	cases := encCases(f)
	f.Fuzz(func(t *testing.T, in string) {
		for _, c := range cases {
			p := c.new()
			if json.Unmarshal([]byte(in), p) != nil {
				continue
			}
			checkEncAgrees(t, c, reflect.ValueOf(p).Elem().Interface())
		}
	})
}

// TestTypeCheckValues: values the fuzz input cannot produce (invalid
// UTF-8, NaN, -0, big floats, nil roots) take the full path
// with the same result.
func TestTypeCheckValues(t *testing.T) {
	cases := encCases(t)
	byName := map[string]encCase{}
	for _, c := range cases {
		byName[c.name] = c
	}
	one := 1
	for _, tc := range []struct {
		c string
		v any
	}{
		{"listing", encListing{}},
		{"listing", encListing{Counts: map[string]uint64{}, Entries: []encEntry{{Name: "a\xff", Ptr: &one}}}},
		{"listing", encListing{Counts: map[string]uint64{"\xfe": 1, "\xff": 2}}},
		{"listing", encListing{Counts: map[string]uint64{}, Entries: []encEntry{{Ratio: math.NaN()}}}},
		{"listing", encListing{Counts: map[string]uint64{}, Entries: []encEntry{{Ratio: math.Copysign(0, -1)}}}},
		{"listing", encListing{Counts: map[string]uint64{}, Entries: []encEntry{{Ratio: 1e17}, {Ratio: 1e21}, {Ratio: 5e-324}, {Size: 1 << 60}}}},
		{"listing", encListing{Counts: map[string]uint64{}, Entries: []encEntry{{Mod: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}},
		{"listing", encListing{Counts: map[string]uint64{"<b>": 1 << 54}, encInner: encInner{Note: "a<b"}, encOpt: &encOpt{Extra: "x"}}},
		{"*listing", (*encListing)(nil)},
		{"*listing", &encListing{Counts: map[string]uint64{}}},
		{"nested", encNested{Levels: [][]map[string]*encInner{{nil, {"x": nil, "y": {Seq: 3}}}}}},
		{"map", map[string][]float64(nil)},
		{"map", map[string][]float64{"a": nil, "b": {math.Inf(1)}}},
		{"list", []string(nil)},
		{"string", strings.Repeat("é", 3) + "\u2028\x00"},
	} {
		checkEncAgrees(t, byName[tc.c], tc.v)
	}
	// The common case takes the fast path.
	if _, ok := byName["listing"].check.Encode(encListing{Counts: map[string]uint64{"a": 1}, Entries: []encEntry{{Name: "x", Tags: map[string]string{"k": "v"}}}}); !ok {
		t.Error("Encode declined a plain listing")
	}
	if _, ok := byName["listing"].check.Encode(encListing{}); ok {
		t.Error("Encode accepted a nil map the schema refuses")
	}
}

// TestForTypeDeclines: a type that leaves part of its schema open gets no
// TypeCheck (every value is validated in full).
func TestForTypeDeclines(t *testing.T) {
	type enum struct {
		Kind string `json:"kind" dsh:"enum=a|b"`
	}
	type omitRequired struct {
		Name string `json:"name,omitempty" dsh:"required"`
	}
	type iface struct {
		Any any `json:"any"`
	}
	type raw struct {
		R json.RawMessage `json:"r"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[enum](), reflect.TypeFor[omitRequired](), reflect.TypeFor[iface](), reflect.TypeFor[raw]()} {
		js, err := Infer(typ)
		if err != nil {
			t.Fatal(err)
		}
		vs, err := CompileValueSchema(js)
		if err != nil {
			t.Fatal(err)
		}
		if c := vs.ForType(typ); c != nil {
			t.Errorf("%s (schema %s): a TypeCheck", typ, js)
		}
	}
	// A schema tighter than the type (an item bound) is not the type's.
	vs, err := CompileValueSchema([]byte(`{"type":"array","items":{"type":"string"},"maxItems":2}`))
	if err != nil {
		t.Fatal(err)
	}
	if c := vs.ForType(reflect.TypeFor[[]string]()); c != nil {
		t.Error("[]string under maxItems: a TypeCheck")
	}
}

type benchEncEntry struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

type benchEncListing struct {
	Entries []benchEncEntry `json:"entries"`
	Total   int             `json:"total"`
}

// BenchmarkTypeCheckEncode: the typed encoder on the listing of
// BenchmarkTypedOutputExecute (10 entries, ~350 bytes of JSON).
func BenchmarkTypeCheckEncode(b *testing.B) {
	typ := reflect.TypeFor[benchEncListing]()
	js, err := Infer(typ)
	if err != nil {
		b.Fatal(err)
	}
	vs, err := CompileValueSchema(js)
	if err != nil {
		b.Fatal(err)
	}
	c := vs.ForType(typ)
	var l benchEncListing
	for i := range 10 {
		l.Entries = append(l.Entries, benchEncEntry{Name: "file" + strconv.Itoa(i) + ".go", Size: 1000 + i})
		l.Total += 1000 + i
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, ok := EncodeValue(c, &l); !ok {
			b.Fatal("declined")
		}
	}
}
