package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

type argsEdit struct {
	Old string `json:"old"`
	New string `json:"new"`
}

type argsCovered struct {
	Path   string              `json:"path" dsh:"required"`
	Offset int                 `json:"offset,omitempty"`
	Small  int8                `json:"small,omitempty"`
	Limit  *int                `json:"limit,omitempty"`
	Mode   string              `json:"mode,omitempty" dsh:"enum=a|b"`
	Edits  []argsEdit          `json:"edits"`
	Env    map[string]argsEdit `json:"env,omitempty"`
	Data   []byte              `json:"data,omitempty"`
	When   time.Time           `json:"when,omitzero"`
	Ratio  float64             `json:"ratio,omitempty"`
	Grid   [2][]argsEdit       `json:"grid,omitzero"`
}

type argsInner struct {
	Deep string `json:"deep,omitempty"`
	N    int16  `json:"n,omitempty"`
}

// ArgsMid is exported, embedding an unexported struct whose exported
// fields encoding/json sets.
type ArgsMid struct {
	argsInner
	Mid uint8 `json:"mid,omitempty"`
}

// argsWide is a covered type with a field of every kind the fused pass
// writes itself, at offsets through embedded structs, with nested slices
// and maps.
type argsWide struct {
	ArgsMid
	I8    int8                `json:"i8,omitempty"`
	I32   int32               `json:"i32,omitempty"`
	I64   int64               `json:"i64,omitempty"`
	U     uint                `json:"u,omitempty"`
	U16   uint16              `json:"u16,omitempty"`
	U32   uint32              `json:"u32,omitempty"`
	B     bool                `json:"b,omitempty"`
	PB    *bool               `json:"pb,omitempty"`
	Grid  [][]argsEdit        `json:"grid,omitempty"`
	Tags  map[string][]string `json:"tags,omitempty"`
	Names []string            `json:"names,omitempty"`
	PS    *[]int              `json:"ps,omitempty"`
	Nums  []uint16            `json:"nums,omitempty"`
}

// argsFew is a covered type of few fields (matched by their keys'
// bytes), with names that are prefixes of others and one that is not
// ASCII, and fields of an embedded struct.
type argsFew struct {
	argsInner
	A  string         `json:"a,omitempty"`
	AB int            `json:"ab,omitempty"`
	E  []argsEdit     `json:"é,omitempty"`
	P  *int8          `json:"p,omitempty"`
	M  map[string]int `json:"m,omitempty"`
}

type argsUncovered struct {
	Path  string          `json:"path"`
	ByID  map[int]string  `json:"byID,omitempty"`
	Any   any             `json:"any,omitempty"`
	Raw   json.RawMessage `json:"raw,omitempty"`
	Inner *argsEdit       `json:"inner,omitempty"`
}

func argsCheckFor[T any](t testing.TB, wantScan bool) (*ArgsCheck, *ValueSchema, *Target) {
	t.Helper()
	js, err := InferFor[T]()
	if err != nil {
		t.Fatal(err)
	}
	vs, err := CompileValueSchema(js)
	if err != nil {
		t.Fatal(err)
	}
	tg := TargetFor[T]()
	c := vs.ForArgs(tg)
	if c.scan != wantScan {
		t.Fatalf("%T: scan %v, want %v (schema %s)", *new(T), c.scan, wantScan, js)
	}
	return c, vs, tg
}

// FuzzArgsCheckIsValidateArgs: for the canonical form of any arguments,
// an ArgsCheck returns exactly what ValidateArgs with its Target returns,
// for argument types whose schema covers the key checks (valid arguments
// recognized by a scan) and for types whose does not; and for any schema,
// the scan accepts exactly the canonical objects ValidateArgs accepts.
func FuzzArgsCheckIsValidateArgs(f *testing.F) {
	for _, s := range []string{
		`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"}}}`,
		`{"PATH":"/a","edits":null}`, `{"path":"x","edits":[{"OLD":"a","new":"b"}],"env":{"k":{"Old":"x"}}}`,
		`{"path":"x","edits":[],"small":300,"mode":"c","data":"!!","when":"yesterday","ratio":1.5,"grid":[[{"old":"x"}],null,[]]}`,
		`{"path":1,"byID":{"01":"a","1":"b"},"any":{"PATH":1},"raw":[1],"inner":{"Old":"x","new":"y"}}`,
		`{"path":"x","edits":[],"extra":true,"offset":1.5,"limit":null}`,
	} {
		f.Add(`{"type":"object","properties":{"a":{"type":"integer","minimum":0,"enum":[1,2,3]},"b":{"type":["null","array"],"items":{"type":"string"},"maxItems":2},"c":{"type":"object","additionalProperties":{"type":"boolean"}}},"required":["a"],"additionalProperties":false}`, s)
	}
	covered, _, _ := argsCheckFor[argsCovered](f, true)
	uncovered, _, _ := argsCheckFor[argsUncovered](f, false)
	f.Fuzz(func(t *testing.T, schema, args string) {
		canon, err := canonjson.CanonicalizeObject([]byte(args), canonjson.Options{})
		if err != nil {
			return
		}
		for _, c := range []*ArgsCheck{covered, uncovered} {
			got, want := c.Validate(canon), c.s.ValidateArgs(canon, ArgsOptions{Target: c.t})
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s against %s:\nArgsCheck    %v\nValidateArgs %v", canon, c.t.typ, got, want)
			}
		}
		vs, err := CompileValueSchema([]byte(schema))
		if err != nil || vs.root.types&kObject == 0 && vs.root.types != 0 {
			return
		}
		c := vs.ForArgs(nil)
		if got, want := c.Validate(canon), vs.ValidateArgs(canon, ArgsOptions{}); !reflect.DeepEqual(got, want) {
			t.Fatalf("%s against %s:\nArgsCheck    %v\nValidateArgs %v", canon, schema, got, want)
		}
		w := canonWalker{b: canon}
		scanOK := w.value(vs.root, 0) == len(canon) && len(w.vs) == 0
		if scanOK != (len(vs.ValidateArgs(canon, ArgsOptions{})) == 0) {
			t.Fatalf("%s against %s: the scan says valid=%v, ValidateArgs %v", canon, schema, scanOK, vs.ValidateArgs(canon, ArgsOptions{}))
		}
	})
}

// TestArgsCheckScansValidArguments: valid arguments of a covered type are
// accepted by the scan alone (no decode), and an invalid
// key the Target reports still is, with the schema's violation beside it.
func TestArgsCheckScansValidArguments(t *testing.T) {
	c, _, _ := argsCheckFor[argsCovered](t, true)
	args := []byte(`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"}}}`)
	if vs := c.Validate(args); vs != nil {
		t.Fatalf("valid arguments: %v", vs)
	}
	// The path stack only: decoding into any would allocate for every
	// map, slice and string.
	if n := testing.AllocsPerRun(20, func() { c.Validate(args) }); n > 5 {
		t.Errorf("Validate of valid arguments allocates %v times", n)
	}
	vs := c.Validate([]byte(`{"PATH":"/a","edits":[]}`))
	want := []Violation{
		{Path: "/PATH", Message: `additional property is not allowed`},
		{Path: "/PATH", Message: `not a field name, but encoding/json would decode it into field "path" (it matches names case-insensitively); write "path"`},
		{Path: "/path", Message: "required property is missing"},
	}
	if !reflect.DeepEqual(vs, want) {
		t.Errorf("PATH: %v", vs)
	}
}

type argsLevel string

func (l *argsLevel) UnmarshalText(b []byte) error {
	if string(b) == "bad" {
		return errors.New("bad level")
	}
	*l = argsLevel(strings.ToUpper(string(b)))
	return nil
}

type argsBase struct {
	ID    uint8   `json:"id"`
	Score float32 `json:"score"`
}

type argsKinds struct {
	argsBase
	PP    **int                  `json:"pp"`
	Level argsLevel              `json:"level"`
	Arr   [2]int                 `json:"arr"`
	Named map[argsLevel]int      `json:"named"`
	Deep  map[string][]*argsEdit `json:"deep"`
	Flag  bool                   `json:"flag"`
	U     uint64                 `json:"u"`
	When  *time.Time             `json:"when"`
	Bytes []byte                 `json:"bytes"`
	Any   any                    `json:"any"`
}

// decodeAgrees fails t unless DecodeCanonical and Decode (json.Unmarshal)
// give the same value and violations for canon.
func decodeAgrees[T any](t *testing.T, canon []byte) {
	t.Helper()
	tg := TargetFor[T]()
	var a, b T
	va, vb := tg.DecodeCanonical(canon, &a), tg.Decode(canon, &b)
	if !reflect.DeepEqual(va, vb) || !reflect.DeepEqual(a, b) {
		t.Fatalf("%s into %T:\nDecodeCanonical %#v %v\nDecode          %#v %v", canon, a, a, va, b, vb)
	}
	if d := capDiff(reflect.ValueOf(a), reflect.ValueOf(b), "$"); d != "" {
		t.Fatalf("%s into %T: DecodeCanonical's slice %s", canon, a, d)
	}
}

// capDiff returns where a slice in a has another capacity than the same
// slice in b (a and b are reflect.DeepEqual), or "": a decoder must give
// the capacities encoding/json gives, which a body can see (cap, append).
func capDiff(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !a.IsNil() && !b.IsNil() {
			return capDiff(a.Elem(), b.Elem(), path)
		}
	case reflect.Struct:
		for i := range a.NumField() {
			if d := capDiff(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); d != "" {
				return d
			}
		}
	case reflect.Slice:
		if a.Cap() != b.Cap() {
			return fmt.Sprintf("%s has capacity %d, encoding/json's %d", path, a.Cap(), b.Cap())
		}
		fallthrough
	case reflect.Array:
		for i := range a.Len() {
			if d := capDiff(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); d != "" {
				return d
			}
		}
	case reflect.Map:
		for it := a.MapRange(); it.Next(); {
			if d := capDiff(it.Value(), b.MapIndex(it.Key()), fmt.Sprintf("%s[%v]", path, it.Key())); d != "" {
				return d
			}
		}
	}
	return ""
}

// FuzzDecodeCanonicalIsDecode: the one-pass decoder gives exactly what
// json.Unmarshal (Target.Decode) gives, value and violations, for the
// canonical form of any arguments, valid or not, into several types.
func FuzzDecodeCanonicalIsDecode(f *testing.F) {
	for _, s := range []string{
		`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"}}}`,
		`{"PATH":"/a","edits":null,"env":{},"limit":null}`, `{"path":"é\n\"","edits":[],"small":300,"offset":1.5,"ratio":1e400}`,
		`{"id":255,"score":3.4e38,"pp":7,"level":"warn","arr":[1,2,3],"named":{"a":1},"deep":{"x":[null,{"old":"o"}]},"flag":true,"u":18446744073709551615,"when":"2024-01-02T03:04:05Z","bytes":"AAE=","any":{"a":[1,"b"]}}`,
		`{"id":256,"score":1e39,"pp":null,"level":"bad","arr":[],"named":{"bad":1},"deep":null,"flag":null,"u":-1,"when":"x","bytes":"!","any":null}`,
		`{"path":"x","grid":[[{"old":"x"}],null],"data":"AA==","when":"2024-01-02T03:04:05Z","mode":"a"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		canon, err := canonjson.CanonicalizeObject([]byte(in), canonjson.Options{})
		if err != nil {
			return
		}
		decodeAgrees[argsCovered](t, canon)
		decodeAgrees[argsUncovered](t, canon)
		decodeAgrees[argsKinds](t, canon)
		decodeAgrees[*argsKinds](t, canon)
		decodeAgrees[map[string]argsEdit](t, canon)
		decodeAgrees[argsWide](t, canon)
	})
}

// decodeIsReference fails t unless c.Decode gives for canon exactly what
// the separate paths give: ValidateArgs's violations when there are
// some, and otherwise Target.Decode's value and violations.
func decodeIsReference[T any](t *testing.T, c *ArgsCheck, canon []byte) {
	t.Helper()
	var got, want T
	gv := c.Decode(canon, &got)
	wv := c.s.ValidateArgs(canon, ArgsOptions{Target: c.t})
	if len(wv) == 0 {
		wv = c.t.Decode(canon, &want)
	}
	if !reflect.DeepEqual(gv, wv) || len(wv) == 0 && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s into %T:\nArgsCheck.Decode %#v %v\nValidate+Decode  %#v %v", canon, got, got, gv, want, wv)
	}
	if len(wv) == 0 {
		if d := capDiff(reflect.ValueOf(got), reflect.ValueOf(want), "$"); d != "" {
			t.Fatalf("%s into %T: ArgsCheck.Decode's slice %s", canon, got, d)
		}
	}
}

// FuzzArgsDecodeIsValidateAndDecode: the fused pass (ArgsCheck.Decode)
// returns exactly ValidateArgs's violations, or Decode's value, for the
// canonical form of any arguments, against the inferred schemas and
// against fuzzed schemas (with any of their constraints) for a few types.
func FuzzArgsDecodeIsValidateAndDecode(f *testing.F) {
	for _, s := range []string{
		`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"}}}`,
		`{"PATH":"/a","edits":null}`, `{"path":"x","edits":[{"OLD":"a","new":"b"}],"env":{"k":{"Old":"x"}}}`,
		`{"path":"x","edits":[],"small":300,"mode":"c","data":"!!","when":"yesterday","ratio":1.5,"grid":[[{"old":"x"}],null,[]]}`,
		`{"path":"x","edits":[],"small":3,"mode":"a","data":"AA==","when":"2024-01-02T03:04:05Z","ratio":1.5,"grid":[[{"old":"x"}],null]}`,
		`{"path":"x","edits":[],"extra":true,"offset":1.5,"limit":null}`,
		`{"path":"é\n\"","edits":[{"old":"a"},{"new":"b","old":"c"}],"env":{},"offset":-3}`,
		`{"a":{"old":"x","new":"y"},"b":{"new":""}}`,
		`{"deep":"d","n":-300,"mid":255,"i8":-128,"i32":-2147483648,"i64":-123456789012345,"u":18446744073709551615,"u16":65535,"u32":4294967295,"b":true,"pb":false,"grid":[[{"old":"a","new":""}],[],[{"new":"b","old":""},{"old":"c","new":""},{"old":"d","new":"e"}]],"tags":{"x":["1","2","3","4","5"],"y":[]},"names":["a","b","c"],"ps":[1,2,3,4,5,6,7,8,9],"nums":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33]}`,
		`{"deep":"d","n":40000,"mid":256,"i8":128,"u16":-1,"b":false,"pb":null,"grid":null,"tags":null,"ps":null}`,
		`{"a":"x","ab":3,"deep":"d","m":{"k":1},"n":2,"p":-5,"é":[{"new":"n","old":"o"}]}`,
		`{"a":"x","ab":3,"abc":1,"A":"y","e":[],"p\u0061":1}`,
	} {
		f.Add(`{"type":"object","properties":{"path":{"type":"string","enum":["\"x\"","\"/a\""]},"offset":{"type":"integer","minimum":0,"maximum":20},"edits":{"type":["null","array"],"items":{"type":"object","properties":{"old":{"type":"string"},"new":{"type":"string"}},"required":["old"],"additionalProperties":false},"maxItems":1},"env":{"type":"object","additionalProperties":{"type":"object"}}},"required":["path"],"additionalProperties":false}`, s)
		f.Add(`{"type":"object","properties":{"a":{"type":"object","properties":{"old":{"const":"\"x\""}},"required":["new"]}},"minItems":1,"additionalProperties":{"type":"object","additionalProperties":false}}`, s)
	}
	covered, _, _ := argsCheckFor[argsCovered](f, true)
	uncovered, _, _ := argsCheckFor[argsUncovered](f, false)
	kinds, _, _ := argsCheckFor[argsKinds](f, false)
	wide, _, _ := argsCheckFor[argsWide](f, true)
	few, _, _ := argsCheckFor[argsFew](f, true)
	f.Fuzz(func(t *testing.T, schema, args string) {
		canon, err := canonjson.CanonicalizeObject([]byte(args), canonjson.Options{})
		if err != nil {
			return
		}
		decodeIsReference[argsCovered](t, covered, canon)
		decodeIsReference[argsUncovered](t, uncovered, canon)
		decodeIsReference[argsKinds](t, kinds, canon)
		decodeIsReference[argsWide](t, wide, canon)
		decodeIsReference[argsFew](t, few, canon)
		vs, err := CompileValueSchema([]byte(schema))
		if err != nil {
			return
		}
		decodeIsReference[argsCovered](t, vs.ForArgs(TargetFor[argsCovered]()), canon)
		decodeIsReference[*argsCovered](t, vs.ForArgs(TargetFor[*argsCovered]()), canon)
		decodeIsReference[map[string]argsEdit](t, vs.ForArgs(TargetFor[map[string]argsEdit]()), canon)
		decodeIsReference[map[string][]*argsEdit](t, vs.ForArgs(TargetFor[map[string][]*argsEdit]()), canon)
		decodeIsReference[argsWide](t, vs.ForArgs(TargetFor[argsWide]()), canon)
		decodeIsReference[argsFew](t, vs.ForArgs(TargetFor[argsFew]()), canon)
	})
}

// TestArgsDecodeOnePass: valid arguments of a covered type are checked and
// decoded by the fused pass alone, with one allocation per Go value the
// result needs (the state, the map, its entry, the slice, the strings,
// the pointer) and none per field.
func TestArgsDecodeOnePass(t *testing.T) {
	c, _, tg := argsCheckFor[argsCovered](t, true)
	args := []byte(`{"edits":[{"new":"b","old":"a"}],"env":{"HOME":{"new":"/u","old":"/root"}},"limit":200,"offset":10,"path":"/a"}`)
	if c.fused == nil {
		t.Fatal("no fused plan for a covered type")
	}
	var a, want argsCovered
	if !c.fusedDecode(args, "", unsafe.Pointer(&a), false) {
		t.Fatal("the fused pass declined valid arguments")
	}
	if vs := tg.Decode(args, &want); vs != nil || !reflect.DeepEqual(a, want) {
		t.Fatalf("fused %#v, Decode %#v %v", a, want, vs)
	}
	n := testing.AllocsPerRun(50, func() {
		var a argsCovered
		if vs := c.Decode(args, &a); vs != nil {
			t.Fatal(vs)
		}
	})
	// a itself (it escapes) 1, state 1, limit 1, edits 1 + 2 strings,
	// env map 2 + key + 2 strings, path 1: 12.
	if n > 12 {
		t.Errorf("Decode of valid arguments allocates %v times, want ≤ 12", n)
	}
}

// TestArgsDecodeEmptyArrayAllocatesNothing: [] decodes into an empty,
// non-nil slice (as encoding/json decodes it) that shares MakeSlice's
// data pointer for no element instead of allocating one per call.
func TestArgsDecodeEmptyArrayAllocatesNothing(t *testing.T) {
	c, _, _ := argsCheckFor[argsCovered](t, true)
	args := []byte(`{"edits":[],"path":"/a"}`)
	same := unsafe.String(unsafe.SliceData(args), len(args))
	a := new(argsCovered)
	if vs := c.DecodeShared(args, same, a); vs != nil || a.Edits == nil || len(a.Edits) != 0 || cap(a.Edits) != 0 || a.Path != "/a" {
		t.Fatalf("decoded %#v %v", a, vs)
	}
	if raceEnabled {
		return // sync.Pool drops items at random: the counts vary
	}
	if n := testing.AllocsPerRun(50, func() {
		*a = argsCovered{}
		c.DecodeShared(args, same, a)
	}); n != 0 {
		t.Errorf("DecodeShared of an empty array allocates %v times", n)
	}
}

// TestArgsDecodeWideOnePass: the fused pass itself decodes a value with
// every kind it writes at an offset (integers of each size at their
// limits, bools, pointers, fields of embedded structs, slices of slices
// beyond a few elements, maps of slices) into what encoding/json decodes,
// with the same slice capacities; and declines values out of a field's
// range, which the separate paths report.
func TestArgsDecodeWideOnePass(t *testing.T) {
	c, _, _ := argsCheckFor[argsWide](t, true)
	doc := `{"b":true,"deep":"d","grid":[[{"new":"","old":"a"}],[],[{"new":"b","old":""},{"new":"","old":"c"},{"new":"e","old":"d"}]],"i32":-2147483648,"i64":-123456789012345,"i8":-128,` +
		`"mid":255,"n":-32768,"names":["a","b","c"],"nums":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,33],` +
		`"pb":false,"ps":[1,2,3,4,5,6,7,8,9],"tags":{"x":["1","2","3","4","5"],"y":[]},"u":123456789012345,"u16":65535,"u32":4294967295}`
	args := []byte(doc)
	var got, want argsWide
	if !c.fusedDecode(args, "", unsafe.Pointer(&got), false) {
		t.Fatal("the fused pass declined valid arguments")
	}
	if err := json.Unmarshal(args, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fused %#v\njson  %#v", got, want)
	}
	if d := capDiff(reflect.ValueOf(got), reflect.ValueOf(want), "$"); d != "" {
		t.Fatalf("slice %s", d)
	}
	for _, bad := range []string{`{"i8":128}`, `{"i8":-129}`, `{"n":32768}`, `{"mid":256}`, `{"u16":65536}`, `{"u32":4294967296}`, `{"i32":2147483648}`, `{"u":-1}`} {
		var v argsWide
		if c.fusedDecode([]byte(bad), "", unsafe.Pointer(&v), false) {
			t.Errorf("the fused pass accepted %s: %#v", bad, v)
		}
		if vs := c.Decode([]byte(bad), new(argsWide)); len(vs) == 0 {
			t.Errorf("%s: no violation", bad)
		}
		decodeIsReference[argsWide](t, c, []byte(bad))
	}
}

// TestArgsDecodeFewOnePass: a struct of few fields matches each key by
// its bytes ("name":): a key that is a prefix of another, or has it as a
// prefix, is that key only; one that is not ASCII matches; any other key
// declines to the separate paths, which report it.
func TestArgsDecodeFewOnePass(t *testing.T) {
	c, _, _ := argsCheckFor[argsFew](t, true)
	args := []byte(`{"a":"x","ab":3,"deep":"d","m":{"k":1},"n":2,"p":-5,"é":[{"new":"n","old":"o"}]}`)
	var got, want argsFew
	if !c.fusedDecode(args, "", unsafe.Pointer(&got), false) {
		t.Fatal("the fused pass declined valid arguments")
	}
	if err := json.Unmarshal(args, &want); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("fused %#v, json %#v %v", got, want, err)
	}
	for _, bad := range []string{`{"abc":1}`, `{"A":"x"}`, `{"e":[]}`, `{"p\u0061":1}`, `{"":1}`, `{"a":"x","ab":3,"é":[{"new":"n"}]}`} {
		var v argsFew
		if c.fusedDecode([]byte(bad), "", unsafe.Pointer(&v), false) {
			t.Errorf("the fused pass accepted %s: %#v", bad, v)
		}
		if vs := c.Decode([]byte(bad), new(argsFew)); len(vs) == 0 {
			t.Errorf("%s: no violation", bad)
		}
		decodeIsReference[argsFew](t, c, []byte(bad))
	}
}

// TestArgsDecodeShared: given the arguments as an immutable string too,
// the one pass decodes the same value, its strings (values and map keys)
// slices of that string: one allocation fewer than Decode, which copies
// the bytes. A string that is not the arguments is not used.
func TestArgsDecodeShared(t *testing.T) {
	c, _, _ := argsCheckFor[argsCovered](t, true)
	args := []byte(`{"edits":[{"new":"b","old":"a"}],"env":{"HOME":{"new":"/u","old":"/root"}},"limit":200,"offset":10,"path":"/a"}`)
	frozen := string(args)
	var a, want argsCovered
	if vs := c.DecodeShared(args, frozen, &a); vs != nil {
		t.Fatal(vs)
	}
	if vs := c.Decode(args, &want); vs != nil || !reflect.DeepEqual(a, want) {
		t.Fatalf("DecodeShared %#v, Decode %#v %v", a, want, vs)
	}
	in := func(s string) bool {
		lo := uintptr(unsafe.Pointer(unsafe.StringData(frozen)))
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		return lo <= p && p+uintptr(len(s)) <= lo+uintptr(len(frozen))
	}
	var key string
	for k := range a.Env {
		key = k
	}
	for _, s := range []string{a.Path, a.Edits[0].Old, a.Env["HOME"].New, key} {
		if !in(s) {
			t.Errorf("%q is not a slice of the frozen arguments", s)
		}
	}
	// The arguments' own memory as the string (as an execution holds
	// them): shared without a comparison.
	same := unsafe.String(unsafe.SliceData(args), len(args))
	var c2 argsCovered
	if vs := c.DecodeShared(args, same, &c2); vs != nil || !reflect.DeepEqual(c2, want) || unsafe.StringData(c2.Path) != unsafe.StringData(same[strings.Index(same, "/a"):]) {
		t.Fatalf("with the arguments' memory: %#v %v", c2, vs)
	}
	var b argsCovered
	other := strings.Clone(frozen)
	other = strings.Replace(other, "/a", "/b", 1)
	if vs := c.DecodeShared(args, other, &b); vs != nil || !reflect.DeepEqual(b, want) || b.Path != "/a" {
		t.Fatalf("with another string: %#v %v", b, vs)
	}
	if raceEnabled {
		return // sync.Pool drops items at random: the counts vary
	}
	shared := testing.AllocsPerRun(50, func() {
		var a argsCovered
		c.DecodeShared(args, frozen, &a)
	})
	copied := testing.AllocsPerRun(50, func() {
		var a argsCovered
		c.Decode(args, &a)
	})
	if shared != copied-1 {
		t.Errorf("DecodeShared allocates %v times, Decode %v", shared, copied)
	}
}

// BenchmarkArgsDecode: valid arguments of a covered type checked and
// decoded by the fused pass, against the scan followed by the one-pass
// decoder (what typed tools ran before).
func BenchmarkArgsDecode(b *testing.B) {
	c, _, tg := argsCheckFor[argsCovered](b, true)
	args := []byte(`{"edits":[{"new":"b","old":"a"},{"new":"log.Print","old":"fmt.Println"}],"env":{"HOME":{"new":"/home/u","old":"/root"}},"limit":200,"offset":10,"path":"/src/main.go"}`)
	b.Run("fused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a argsCovered
			if c.Decode(args, &a) != nil {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("scan+decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var a argsCovered
			if c.Validate(args) != nil || tg.DecodeCanonical(args, &a) != nil {
				b.Fatal("invalid")
			}
		}
	})
}

// TestShortInt: the fused integer reader reads what the decoder's
// strconv.ParseInt of the token reads, or leaves the token to it.
func TestShortInt(t *testing.T) {
	for _, tok := range []string{"0", "-0", "7", "-7", "42", "007", "123456789012345", "-123456789012345",
		"1234567890123456", "1.5", "1e3", "-", "", "12,", "12}", "12]", "12:", "12 ", "12x", "9007199254740991"} {
		for _, signed := range []bool{true, false} {
			b := []byte(tok)
			n, end := shortInt(b, 0, signed)
			if end < 0 {
				continue // declined: the decoder reads it
			}
			se := scalarEnd(b, 0)
			var want int64
			var err error
			if signed {
				want, err = strconv.ParseInt(tok[:se], 10, 64)
			} else {
				var u uint64
				u, err = strconv.ParseUint(tok[:se], 10, 64)
				want = int64(u)
			}
			if err != nil || end != se || n != want {
				t.Errorf("shortInt(%q, %v) = %d %d; ParseInt of %q: %d %v", tok, signed, n, end, tok[:se], want, err)
			}
		}
	}
	if _, end := shortInt([]byte("42,"), 0, true); end != 2 {
		t.Errorf("shortInt declined 42")
	}
}

// fusedTree is a map type that holds itself, for a plan that re-enters
// itself.
type fusedTree map[string]fusedTree

// TestFusedMapPlanReentered: a map plan that runs inside itself (a
// schema node that is its own additionalProperties, which only a cyclic
// node makes) takes scratch of its own at each depth, so the outer
// entry's key and value survive the inner map's decoding, and a pooled
// state keeps no decoded value.
func TestFusedMapPlanReentered(t *testing.T) {
	vs, err := CompileValueSchema([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	n := vs.root
	n.addl = n // cyclic: every value is an object of the same schema
	b := &fusedBuilder{dec: &decoders{built: map[reflect.Type]*argDecoder{}}, built: map[fusedKey]*fusedPlan{}}
	p := b.of(reflect.TypeFor[fusedTree](), n)
	args := []byte(`{"a":{"b":{},"c":{"d":{"e":{}}}},"f":{},"g":{"h":{}}}`)
	want := fusedTree{"a": {"b": {}, "c": {"d": {"e": {}}}}, "f": {}, "g": {"h": {}}}
	f := &fusedState{w: canonWalker{b: args}, d: decState{b: args}}
	for range 2 { // the second run on the same state reuses its scratch
		var got fusedTree
		if end := (*p)(f, 0, unsafe.Pointer(&got)); end != len(args) {
			t.Fatalf("plan ended at %d, want %d", end, len(args))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %#v, want %#v", got, want)
		}
		scratchIsZero(t, f)
	}
}

// scratchIsZero fails t unless every scratch of f is free and zero (a
// pooled state keeps no decoded value alive): a slice plan's elements
// have length 0 and every element of their array is zero.
func scratchIsZero(t *testing.T, f *fusedState) {
	t.Helper()
	for i, m := range f.scratch {
		ev := m.ev
		if ev.Kind() == reflect.Slice && ev.Len() == 0 {
			ev = ev.Slice(0, ev.Cap())
			for k := range ev.Len() {
				if !ev.Index(k).IsZero() {
					t.Fatalf("scratch %d after the call: element %d of the array is %v", i, k, ev.Index(k))
				}
			}
		} else if !ev.IsZero() {
			t.Fatalf("scratch %d after the call: value %v", i, m.ev)
		}
		if m.busy || m.kv.IsValid() && !m.kv.IsZero() {
			t.Fatalf("scratch %d after the call: busy %v, key %v", i, m.busy, m.kv)
		}
	}
}

// fusedNest is a slice type that holds itself, for a slice plan that
// re-enters itself.
type fusedNest []fusedNest

// TestFusedSlicePlanReentered: a slice plan that runs inside itself (a
// schema node that is its own items) grows a scratch slice of its own at
// each depth, so the outer elements survive the inner slices' decoding;
// the capacities are encoding/json's, and a pooled state keeps no
// decoded value.
func TestFusedSlicePlanReentered(t *testing.T) {
	vs, err := CompileValueSchema([]byte(`{"type":"array"}`))
	if err != nil {
		t.Fatal(err)
	}
	n := vs.root
	n.items = n // cyclic: every element is an array of the same schema
	b := &fusedBuilder{dec: &decoders{built: map[reflect.Type]*argDecoder{}}, built: map[fusedKey]*fusedPlan{}}
	p := b.of(reflect.TypeFor[fusedNest](), n)
	args := []byte(`[[[],[[],[],[]]],[],[[[[]]]],[],[]]`)
	var want fusedNest
	if err := json.Unmarshal(args, &want); err != nil {
		t.Fatal(err)
	}
	f := &fusedState{w: canonWalker{b: args}, d: decState{b: args}}
	for range 2 { // the second run on the same state reuses its scratch
		var got fusedNest
		if end := (*p)(f, 0, unsafe.Pointer(&got)); end != len(args) {
			t.Fatalf("plan ended at %d, want %d", end, len(args))
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("decoded %#v, want %#v", got, want)
		}
		if d := capDiff(reflect.ValueOf(got), reflect.ValueOf(want), "$"); d != "" {
			t.Fatalf("slice %s", d)
		}
		scratchIsZero(t, f)
	}
	// A declined value leaves the scratch zero too.
	bad := []byte(`[[[],[[],[],[]]],[],[[[[]]]],1]`)
	f = &fusedState{w: canonWalker{b: bad}, d: decState{b: bad}}
	var got fusedNest
	if end := (*p)(f, 0, unsafe.Pointer(&got)); end >= 0 {
		t.Fatalf("plan accepted %s", bad)
	}
	scratchIsZero(t, f)
}

// TestMapIsOnePointer: the map plan stores a map made by reflect as the
// one pointer word Value.UnsafePointer returns; the variable is then that
// map.
func TestMapIsOnePointer(t *testing.T) {
	if unsafe.Sizeof(map[string]int(nil)) != unsafe.Sizeof(unsafe.Pointer(nil)) {
		t.Fatal("a map value is not one word")
	}
	m := reflect.MakeMap(reflect.TypeFor[map[string]argsEdit]())
	m.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(argsEdit{Old: "o"}))
	var got map[string]argsEdit
	*(*unsafe.Pointer)(unsafe.Pointer(&got)) = m.UnsafePointer()
	got["l"] = argsEdit{New: "n"}
	if len(got) != 2 || got["k"].Old != "o" || m.Len() != 2 || m.MapIndex(reflect.ValueOf("l")).Interface() != (argsEdit{New: "n"}) {
		t.Fatalf("the variable is not the map: %v, %v", got, m)
	}
}

// scribbler is a type whose own UnmarshalJSON writes into the bytes it is
// given (legal for json.Unmarshaler, which must only copy what it keeps).
type scribbler struct{ S string }

func (s *scribbler) UnmarshalJSON(b []byte) error {
	s.S = string(b)
	for i := range b {
		b[i] = 'X'
	}
	return nil
}

type argsWithScribbler struct {
	Name string    `json:"name"`
	Note scribbler `json:"note"`
}

// TestArgsDecodeSharedNeverLendsTheArguments: a type's own UnmarshalJSON
// gets a copy, so it cannot write into the arguments' memory, which an
// execution holds as an immutable string that observers and the decoded
// strings share. Fails when the decoder hands it the arguments themselves.
func TestArgsDecodeSharedNeverLendsTheArguments(t *testing.T) {
	c, _, _ := argsCheckFor[argsWithScribbler](t, true)
	for _, doc := range []string{
		`{"name":"a","note":{"S":"x"}}`,
		`{"name":"a","note":{"S":"x y \" z"}}`,
	} {
		args := []byte(doc)
		same := unsafe.String(unsafe.SliceData(args), len(args))
		var v argsWithScribbler
		vs := c.DecodeShared(args, same, &v)
		if string(args) != doc {
			t.Fatalf("the arguments were written to: %s (violations %v)", args, vs)
		}
		if vs != nil || v.Name != "a" || v.Note.S == "" {
			t.Fatalf("decoded %#v", v)
		}
	}
}
