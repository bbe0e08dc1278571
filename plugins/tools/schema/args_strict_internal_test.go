package schema

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// argsDeep holds any value (decoded by json.Unmarshal after the strict
// walker's check) and maps of maps (decoded by the fused plans).
type argsDeep struct {
	V    any                          `json:"v,omitempty"`
	M    map[string]map[string][]int8 `json:"m,omitempty"`
	Name string                       `json:"name,omitempty"`
}

// argsNest nests slices deeper than canonjson accepts arrays.
type argsNest struct {
	V [][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][][]int8 `json:"v,omitempty"`
}

// ifCanonicalIsReference fails t unless c.DecodeIfCanonical, given args
// as sent (any bytes), either declines them leaving the value zero, or
// accepts exactly canonical arguments (CanonicalizeObject returns the
// same bytes) that are valid, with the value (and slice capacities) that
// the separate paths decode.
func ifCanonicalIsReference[T any](t *testing.T, c *ArgsCheck, args []byte) bool {
	t.Helper()
	var got T
	frozen := string(args)
	if !c.DecodeIfCanonical(args, frozen, &got) {
		if !reflect.ValueOf(&got).Elem().IsZero() {
			t.Fatalf("%q into %T: declined, leaving %#v", args, got, got)
		}
		return false
	}
	canon, err := canonjson.CanonicalizeObject(args, canonjson.Options{})
	if err != nil || !bytes.Equal(canon, args) {
		t.Fatalf("%q into %T: accepted, but its canonical form is %q (%v)", args, got, canon, err)
	}
	var want T
	if vs := c.s.ValidateArgs(canon, ArgsOptions{Target: c.t}); len(vs) > 0 {
		t.Fatalf("%q into %T: accepted, but ValidateArgs says %v", args, got, vs)
	}
	if vs := c.t.Decode(canon, &want); len(vs) > 0 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%q into %T:\nDecodeIfCanonical %#v\nDecode            %#v %v", args, got, got, want, vs)
	}
	if d := capDiff(reflect.ValueOf(got), reflect.ValueOf(want), "$"); d != "" {
		t.Fatalf("%q into %T: DecodeIfCanonical's slice %s", args, got, d)
	}
	return true
}

// FuzzDecodeIfCanonical: for any bytes sent as arguments (canonical or
// not, valid or not), the strict one pass accepts only canonical, valid
// arguments, decoded into exactly what the separate paths decode, for the
// inferred schemas of several types and for fuzzed schemas.
func FuzzDecodeIfCanonical(f *testing.F) {
	for _, s := range []string{
		`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"}}}`,
		`{"path":"/a","edits":[],"path":"/b"}`, `{"path":"/a", "edits":[]}`, `{"path":"/a","edits":[]} `,
		`{"path":"/a","edits":[],"offset":007}`, `{"path":"/a","edits":[],"offset":-0}`, `{"path":"/a","edits":[],"offset":1.0}`,
		"{\"path\":\"a\tb\",\"edits\":[]}", `{"path":"\u0061","edits":[]}`, `{"path":"\n","edits":[]}`, "{\"path\":\"\xff\",\"edits\":[]}",
		`{"path":"/a","edits":[],"env":{"K":{"old":"a","new":"b"},"K":{"old":"c","new":"d"}}}`,
		`{"path":"/a","edits":[],"limit":null,"offset":9007199254740993}`, `{"path":"/a","edits":[{"old":"a","new":"b","old":"c"}]}`,
		`{"deep":"d","n":-300,"mid":255,"i8":-128,"i32":-2147483648,"i64":-123456789012345,"u":18446744073709551615,"u16":65535,"u32":4294967295,"b":true,"pb":false,"grid":[[{"old":"a","new":""}],[],[{"new":"b","old":""}]],"tags":{"x":["1","2"],"y":[]},"names":["a","b","c"],"ps":[1,2,3],"nums":[1,2,3]}`,
		`{"a":"x","ab":3,"deep":"d","m":{"k":1},"n":2,"p":-5,"é":[{"new":"n","old":"o"}]}`, `{"a":"x","a":"y"}`, `{"m":{"k":1,"k":2}}`,
		`{"v":{"b":1,"a":[true,null,"x",1.5,{}]},"m":{"a":{"x":[1,2]},"b":{}},"name":"n"}`, `{"v":{"a":1,"a":2}}`, `{"m":{"a":{"x":[01]}}}`,
		`{"v":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
	} {
		f.Add(`{"type":"object","properties":{"path":{"type":"string","enum":["\"x\"","\"/a\""]},"offset":{"type":"integer","minimum":0,"maximum":20},"edits":{"type":["null","array"],"items":{"type":"object","properties":{"old":{"type":"string"},"new":{"type":"string"}},"required":["old"],"additionalProperties":false},"maxItems":1},"env":{"type":"object","additionalProperties":{"type":"object"}}},"required":["path"],"additionalProperties":false}`, s)
		f.Add(`{"type":"object","additionalProperties":{"type":"object","additionalProperties":false}}`, s)
	}
	covered, _, _ := argsCheckFor[argsCovered](f, true)
	wide, _, _ := argsCheckFor[argsWide](f, true)
	few, _, _ := argsCheckFor[argsFew](f, true)
	deep, _, _ := argsCheckFor[argsDeep](f, true)
	kinds, _, _ := argsCheckFor[argsKinds](f, false)
	f.Fuzz(func(t *testing.T, schema, args string) {
		in := []byte(args)
		ifCanonicalIsReference[argsCovered](t, covered, in)
		ifCanonicalIsReference[argsWide](t, wide, in)
		ifCanonicalIsReference[argsFew](t, few, in)
		ifCanonicalIsReference[argsDeep](t, deep, in)
		ifCanonicalIsReference[argsKinds](t, kinds, in)
		vs, err := CompileValueSchema([]byte(schema))
		if err != nil {
			return
		}
		ifCanonicalIsReference[argsCovered](t, vs.ForArgs(TargetFor[argsCovered]()), in)
		ifCanonicalIsReference[*argsCovered](t, vs.ForArgs(TargetFor[*argsCovered]()), in)
		ifCanonicalIsReference[map[string]argsEdit](t, vs.ForArgs(TargetFor[map[string]argsEdit]()), in)
		ifCanonicalIsReference[map[string][]*argsEdit](t, vs.ForArgs(TargetFor[map[string][]*argsEdit]()), in)
		ifCanonicalIsReference[argsWide](t, vs.ForArgs(TargetFor[argsWide]()), in)
		ifCanonicalIsReference[argsDeep](t, vs.ForArgs(TargetFor[argsDeep]()), in)
	})
}

// TestDecodeIfCanonical: the strict one pass accepts canonical, valid
// arguments (decoded) and declines, leaving the value zero, every
// argument canonjson would rewrite or refuse that the lenient pass
// (DecodeShared, for arguments canonicalized already) reads as it is:
// duplicate keys of a struct or a map, whitespace, integers with a
// leading zero or "-0", numbers not in their shortest form, raw control
// characters and escapes in strings, invalid UTF-8, nesting deeper than
// canonjson's limit.
func TestDecodeIfCanonical(t *testing.T) {
	covered, _, _ := argsCheckFor[argsCovered](t, true)
	few, _, _ := argsCheckFor[argsFew](t, true)
	deep, _, _ := argsCheckFor[argsDeep](t, true)
	for _, s := range []string{
		`{"path":"/a","offset":10,"limit":200,"edits":[{"old":"a","new":"b"}],"env":{"HOME":{"old":"/root","new":"/u"},"X":{"old":"","new":""}}}`,
		`{"edits":[],"path":"é","limit":null,"offset":-7}`,
	} {
		if !ifCanonicalIsReference[argsCovered](t, covered, []byte(s)) {
			t.Errorf("%s: declined", s)
		}
	}
	if s := `{"a":"x","ab":3,"m":{"k":1,"l":-1},"p":0}`; !ifCanonicalIsReference[argsFew](t, few, []byte(s)) {
		t.Errorf("%s: declined", s)
	}
	if s := `{"m":{"a":{"x":[1,-2]},"b":{}},"name":"n","v":1.5}`; !ifCanonicalIsReference[argsDeep](t, deep, []byte(s)) {
		t.Errorf("%s: declined", s)
	}
	declined := func(c *ArgsCheck, s string) {
		t.Helper()
		var v argsCovered
		var w argsFew
		var d argsDeep
		ok := false
		switch c {
		case covered:
			ok = c.DecodeIfCanonical([]byte(s), "", &v)
		case few:
			ok = c.DecodeIfCanonical([]byte(s), "", &w)
		default:
			ok = c.DecodeIfCanonical([]byte(s), "", &d)
		}
		if ok {
			t.Errorf("%q: accepted", s)
		}
		// Each is one the lenient pass reads as it is (so the strict
		// checks are what declines it), or canonjson refuses.
		if canon, err := canonjson.CanonicalizeObject([]byte(s), canonjson.Options{}); err == nil && string(canon) == s {
			t.Errorf("%q is canonical", s)
		}
	}
	for _, s := range []string{
		`{"path":"/a","edits":[],"path":"/b"}`,
		`{"path":"/a","edits":[{"old":"a","new":"b","old":"c"}]}`,
		`{"path":"/a","edits":[],"env":{"K":{"old":"a","new":"b"},"K":{"old":"c","new":"d"}}}`,
		`{"path":"/a", "edits":[]}`, `{"path":"/a","edits":[] }`, `{"path":"/a","edits":[ ]}`,
		`{"path":"/a","edits":[],"offset":007}`, `{"path":"/a","edits":[],"offset":-0}`, `{"path":"/a","edits":[],"offset":-01}`,
		`{"path":"/a","edits":[],"offset":1.0}`, `{"path":"/a","edits":[],"offset":1e1}`, `{"path":"/a","edits":[],"offset":9007199254740993}`,
		"{\"path\":\"a\tb\",\"edits\":[]}", "{\"path\":\"/a\",\"edits\":[],\"env\":{\"k\x01\":{\"old\":\"\",\"new\":\"\"}}}",
		`{"path":"\u0061","edits":[]}`, `{"path":"\/","edits":[]}`, "{\"path\":\"\xff\",\"edits\":[]}", "{\"path\":\"\xed\xa0\x80\",\"edits\":[]}",
	} {
		declined(covered, s)
	}
	for _, s := range []string{`{"a":"x","a":"y"}`, `{"m":{"k":1,"k":2}}`, `{"p":00}`, `{"ab":-0}`} {
		declined(few, s)
	}
	for _, s := range []string{`{"v":{"a":1,"a":2}}`, `{"v":{"b":1, "a":2}}`, `{"m":{"a":{"x":[01]}}}`, `{"m":{"a":{},"a":{}}}`, `{"m":{"a":{"x":[],"x":[]}}}`} {
		declined(deep, s)
	}
	// Nesting: canonjson's limit (64 arrays and objects, the root
	// included), beyond what an inferred schema can describe (a schema
	// nests no deeper than 64 levels either): a schema built here.
	leafNode := &node{types: kInteger, minItems: -1, maxItems: -1}
	for range 70 {
		leafNode = &node{types: kArray, items: leafNode, minItems: -1, maxItems: -1}
	}
	root := &node{types: kObject, props: map[string]*node{"v": leafNode}, closed: true, minItems: -1, maxItems: -1}
	nest := (&ValueSchema{root: root}).ForArgs(TargetFor[argsNest]())
	if nest.fused == nil {
		t.Fatal("no fused plan for argsNest")
	}
	for depth := 60; depth <= 66; depth++ {
		s := `{"v":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		_, err := canonjson.CanonicalizeObject([]byte(s), canonjson.Options{})
		var n argsNest
		if ok := nest.DecodeIfCanonical([]byte(s), "", &n); ok != (err == nil) {
			t.Errorf("depth %d: accepted %v, canonjson: %v", depth, ok, err)
		}
		n = argsNest{}
		if !nest.fusedDecode([]byte(s), "", unsafe.Pointer(&n), false) {
			t.Errorf("depth %d: the lenient pass declined", depth)
		}
	}
	// More keys in one map than the pass compares: declined (canonical
	// all the same: the separate paths take them).
	var sb strings.Builder
	sb.WriteString(`{"m":{`)
	for k := range maxStrictKeys + 1 {
		if k > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`"` + string(rune('a'+k)) + `":{}`)
	}
	sb.WriteString(`}}`)
	var d argsDeep
	if deep.DecodeIfCanonical([]byte(sb.String()), "", &d) {
		t.Errorf("%d keys of a map accepted", maxStrictKeys+1)
	}
	if vs := deep.Decode([]byte(sb.String()), &d); vs != nil || len(d.M) != maxStrictKeys+1 {
		t.Errorf("%d keys of a map: %v %v", maxStrictKeys+1, d, vs)
	}
}

// argsLists has slices of elements of several sizes.
type argsLists struct {
	Names []string     `json:"names,omitempty"`
	Edits []argsEdit   `json:"edits,omitempty"`
	Nums  []int8       `json:"nums,omitempty"`
	Empty []struct{}   `json:"empty,omitempty"`
	Grid  [][]argsEdit `json:"grid,omitempty"`
}

// TestArgsDecodeSliceAllocatesOnce: a slice is decoded with one
// allocation, its array, of the capacity encoding/json's growth reaches
// (before: one per growth step, 1, 2, 4, ... elements), for elements of
// several sizes; beyond the capacities measured up front (1024 elements
// or 16 KB) with a few more, the steps from there; with none for
// size-zero elements. The values and capacities are encoding/json's.
func TestArgsDecodeSliceAllocatesOnce(t *testing.T) {
	c, _, _ := argsCheckFor[argsLists](t, true)
	for _, n := range []int{1, 2, 3, 5, 9, 17, 100, 600, 1100} {
		for _, field := range []string{"names", "edits", "nums", "empty", "grid"} {
			var sb strings.Builder
			sb.WriteString(`{"` + field + `":[`)
			for k := range n {
				if k > 0 {
					sb.WriteByte(',')
				}
				switch field {
				case "names":
					sb.WriteString(`"n"`)
				case "edits":
					sb.WriteString(`{"new":"b","old":"a"}`)
				case "nums":
					sb.WriteString(`7`)
				case "empty":
					sb.WriteString(`{}`)
				case "grid":
					sb.WriteString(`[]`)
				}
			}
			sb.WriteString(`]}`)
			args := []byte(sb.String())
			same := unsafe.String(unsafe.SliceData(args), len(args))
			a := new(argsLists)
			if !ifCanonicalIsReference[argsLists](t, c, args) {
				t.Fatalf("%s of %d: declined", field, n)
			}
			decodeIsReference[argsLists](t, c, args)
			if raceEnabled {
				continue // sync.Pool drops items at random: the counts vary
			}
			want := 1.0
			switch size := reflect.ValueOf(a).Elem().FieldByName(strings.ToUpper(field[:1]) + field[1:]).Type().Elem().Size(); {
			case size == 0:
				want = 0
			case n > 1024 || uintptr(n)*size > capsBytes:
				want = 4
			}
			if allocs := testing.AllocsPerRun(5, func() {
				*a = argsLists{}
				c.DecodeShared(args, same, a)
			}); allocs > want || want > 0 && allocs < 1 {
				t.Errorf("%s of %d: %v allocations, want %v", field, n, allocs, want)
			}
		}
	}
}
