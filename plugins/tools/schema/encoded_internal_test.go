package schema

import (
	"encoding/json"
	"math"
	"math/rand/v2"
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

// encScalars has a field of every scalar kind the encoder writes in its
// loops, each also with omitempty, and containers with omitempty.
type encScalars struct {
	I    int              `json:"i"`
	I8   int8             `json:"i8"`
	I16  int16            `json:"i16"`
	I32  int32            `json:"i32"`
	I64  int64            `json:"i64"`
	U    uint             `json:"u"`
	U8   uint8            `json:"u8"`
	U16  uint16           `json:"u16"`
	U32  uint32           `json:"u32"`
	U64  uint64           `json:"u64"`
	F    float64          `json:"f"`
	B    bool             `json:"b"`
	S    string           `json:"s"`
	N    encName          `json:"n"`
	OI   int              `json:"oi,omitempty"`
	OI8  int8             `json:"oi8,omitempty"`
	OU16 uint16           `json:"ou16,omitempty"`
	OF   float64          `json:"of,omitempty"`
	OB   bool             `json:"ob,omitempty"`
	OS   string           `json:"os,omitempty"`
	OL   []int32          `json:"ol,omitempty"`
	OM   map[string]bool  `json:"om,omitempty"`
	OP   *string          `json:"op,omitempty"`
	OA   [2]uint8         `json:"oa,omitempty"`
	OZ   [0]int           `json:"oz,omitempty"`
	OT   time.Time        `json:"ot,omitempty"`
	A    [3]int16         `json:"a"`
	Bs   []byte           `json:"bs"`
	PP   **int            `json:"pp"`
	Ts   []time.Time      `json:"ts"`
	Ns   []encName        `json:"ns"`
	Ms   map[encName]bool `json:"ms"`
}

type encName string

// EncLeaf and EncMid are embedded through two levels of pointers (their
// fields omitempty: a field behind a pointer may be missing, so the
// schema must not require it for a TypeCheck).
type EncLeaf struct {
	Leaf string `json:"leaf,omitempty"`
	Deep int    `json:"deep,omitempty"`
}

type EncMid struct {
	*EncLeaf
	Mid string `json:"mid,omitempty"`
}

type encEmbeds struct {
	*EncMid
	encInner
	Own int `json:"own"`
}

// encCase is one Out type: its check, a fresh value to decode into, and
// EncodeValue of a value of the type.
type encCase struct {
	name  string
	check *TypeCheck
	new   func() any // a pointer to a zero value of the type
	root  reflect.Type
	typed func(v any) ([]byte, string, bool)
}

// mkEncCase is the encCase of T.
func mkEncCase[T any](t testing.TB, name string) encCase {
	t.Helper()
	c := mkEncCaseOf(t, name, reflect.TypeFor[T]())
	c.typed = func(v any) ([]byte, string, bool) {
		x := v.(T)
		return EncodeValue(c.check, &x)
	}
	return c
}

func encCases(t testing.TB) []encCase {
	t.Helper()
	return []encCase{
		mkEncCase[encListing](t, "listing"),
		mkEncCase[*encListing](t, "*listing"),
		mkEncCase[encNested](t, "nested"),
		mkEncCase[map[string][]float64](t, "map"),
		mkEncCase[[]string](t, "list"),
		mkEncCase[string](t, "string"),
		mkEncCase[encScalars](t, "scalars"),
		mkEncCase[*encEmbeds](t, "*embeds"),
		mkEncCase[[2][]*encInner](t, "array"),
		mkEncCase[map[string]encScalars](t, "scalarmap"),
	}
}

func mkEncCaseOf(t testing.TB, name string, typ reflect.Type) encCase {
	{
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
	value, text, typedOK := c.typed(v)
	if typedOK != ok || string(value) != string(fast) || text != string(value) || cap(value) != len(value) {
		t.Fatalf("%s: EncodeValue(%#v) = %s %q %v (cap %d), Encode %s %v", c.name, v, value, text, typedOK, cap(value), fast, ok)
	}
	if ok {
		// The text never changes with the value its caller owns.
		before := text
		before = strings.Clone(before)
		for i := range value {
			value[i] = 'x'
		}
		_ = append(value, 'y')
		if text != before {
			t.Fatalf("%s: writing the value changed the text to %q", c.name, text)
		}
	}
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
		`{"i":-9007199254740991,"i8":-128,"u64":9007199254740992,"f":-0.0,"oi":0,"of":1e-7,"ob":true,"os":"\"","ol":[],"om":{},"op":"","oa":[0,0],"ot":"0001-01-01T00:00:00Z","a":[1,2,3],"bs":"","pp":5,"ts":["2024-01-02T03:04:05.999999999-07:30"],"ns":["q"],"ms":{"z":true,"a":false}}`,
		`{"leaf":"l","deep":3,"mid":"m","seq":2,"own":-1}`, `{"mid":"m","own":0,"note":"n"}`,
		`[[{"seq":1},null],null]`, `{"x":{"i":1},"\u00e9":{"s":"\ud83d\ude00"},"a":{}}`,
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

// TestEncodeRandomValues: for values of every test type filled at random
// (edge integers and floats, strings with escapes and invalid UTF-8, nil
// and empty lists and maps, nil and set pointers, times out of range and
// in odd zones), the typed encoders agree with json.Marshal then the
// generic validator (see checkEncAgrees).
func TestEncodeRandomValues(t *testing.T) {
	cases := encCases(t)
	r := rand.New(rand.NewPCG(1, 2))
	accepted := map[string]int{}
	for range 1000 {
		for _, c := range cases {
			v := reflect.New(c.root).Elem()
			randValue(r, v, 0)
			checkEncAgrees(t, c, v.Interface())
			if _, ok := c.check.Encode(v.Interface()); ok {
				accepted[c.name]++
			}
		}
	}
	// Each type's fast path is taken, not only declined.
	for _, c := range cases {
		if accepted[c.name] < 10 {
			t.Errorf("%s: the fast path took %d of 1000 values", c.name, accepted[c.name])
		}
	}
}

// randValue sets v (settable) to a random value of its type; unsettable
// parts keep their zero value.
func randValue(r *rand.Rand, v reflect.Value, depth int) {
	if !v.CanSet() {
		return
	}
	pick := func(n int) int { return r.IntN(n) }
	if v.Type() == reflect.TypeFor[time.Time]() {
		zones := []*time.Location{time.UTC, time.FixedZone("", -(7*3600 + 1800)), time.FixedZone("x", 3600*14), time.FixedZone("", 61)}
		years := []int{1, 1970, 2024, 9999, 10000, -1}
		tm := time.Date(years[pick(len(years))], time.Month(1+pick(12)), 1+pick(28), pick(24), pick(60), pick(60), []int{0, 1, 123000000, 999999999}[pick(4)], zones[pick(len(zones))])
		if pick(8) == 0 {
			tm = time.Time{}
		}
		v.Set(reflect.ValueOf(tm))
		return
	}
	switch v.Kind() {
	case reflect.Bool:
		v.SetBool(pick(2) == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		edges := []int64{0, 1, -1, 9007199254740991, -9007199254740991, 9007199254740992, -9007199254740992, math.MaxInt64, math.MinInt64, 127, -128, 32767, -32768, 1 << 31}
		var n int64
		switch pick(10) {
		case 0, 1:
			n = edges[pick(len(edges))]
		case 2:
			n = int64(r.Uint64())
		default:
			n = r.Int64N(2e6) - 1e6
		}
		v.SetInt(n) // truncated to the type's size
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		edges := []uint64{0, 1, 255, 65535, 9007199254740991, 9007199254740992, math.MaxUint64}
		var n uint64
		switch pick(10) {
		case 0, 1:
			n = edges[pick(len(edges))]
		case 2:
			n = r.Uint64()
		default:
			n = r.Uint64N(1e6)
		}
		v.SetUint(n)
	case reflect.Float64:
		edges := []float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1), 1e21, 1e20, 9007199254740991, 9007199254740993, 5e-324, 0.1, 1e-7, -1.5, math.MaxFloat64}
		var f float64
		switch pick(10) {
		case 0:
			f = edges[pick(len(edges))]
		case 1:
			f = math.Float64frombits(r.Uint64())
		default:
			f = r.NormFloat64() * math.Pow(10, float64(pick(30)-15))
		}
		v.SetFloat(f)
	case reflect.String:
		pieces := []string{"", "a", "é", "\x00", "\"", "\\", "\u2028", "<&>", "\t\n\r\b\f", "\x1f", "\U0001F600", "\uFFFD", "\x7f", "file.go"}
		invalid := []string{"\xff", "\xed\xa0\x80", "\xe2\x82"}
		var b strings.Builder
		for range pick(4) {
			if pick(30) == 0 {
				b.WriteString(invalid[pick(len(invalid))])
			} else {
				b.WriteString(pieces[pick(len(pieces))])
			}
		}
		v.SetString(b.String())
	case reflect.Pointer:
		if pick(3) == 0 || depth > 6 {
			return
		}
		p := reflect.New(v.Type().Elem())
		randValue(r, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		switch pick(4) {
		case 0:
			return // nil
		case 1:
			v.Set(reflect.MakeSlice(v.Type(), 0, 0))
			return
		}
		n := 1 + pick(3)
		if depth > 6 {
			n = 0
		}
		s := reflect.MakeSlice(v.Type(), n, n)
		for i := range n {
			randValue(r, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Array:
		for i := range v.Len() {
			randValue(r, v.Index(i), depth+1)
		}
	case reflect.Map:
		if pick(4) == 0 {
			return // nil
		}
		m := reflect.MakeMap(v.Type())
		n := pick(4)
		if depth > 6 {
			n = 0
		}
		for range n {
			k := reflect.New(v.Type().Key()).Elem()
			randValue(r, k, depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			randValue(r, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			randValue(r, v.Field(i), depth+1)
		}
	}
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

// TestAppendDigits: the encoder's integer writer is strconv's, around
// each of its branches.
func TestAppendDigits(t *testing.T) {
	for _, n := range []uint64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 1009, 9999, 10000, 10001, 123456789, 9007199254740991} {
		for _, m := range []uint64{n, n + 1} {
			if got, want := string(appendDigits([]byte("x"), m)), "x"+strconv.FormatUint(m, 10); got != want {
				t.Errorf("appendDigits(%d) = %q, want %q", m, got, want)
			}
		}
	}
	for n := range uint64(20000) {
		if got := string(appendDigits(nil, n)); got != strconv.FormatUint(n, 10) {
			t.Fatalf("appendDigits(%d) = %q", n, got)
		}
	}
	for _, n := range []int64{0, -1, -9, -10, -9999, -9007199254740991, 42} {
		if got, ok := appendInt(nil, n); !ok || string(got) != strconv.FormatInt(n, 10) {
			t.Errorf("appendInt(%d) = %q %v", n, got, ok)
		}
	}
}
