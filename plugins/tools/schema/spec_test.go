package schema

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

func TestT1_SpecToJSONSchema(t *testing.T) {
	cases := []struct {
		name string
		spec Spec
		want string
	}{
		{"nil spec", nil, `{"type":"object","properties":{}}`},
		{"read_file", Spec{
			"path":   {Type: "string", Required: true, Description: "Absolute file path"},
			"offset": {Type: "number"},
			"limit":  {Type: "number"},
		}, `{"type":"object","properties":{"limit":{"type":"number"},"offset":{"type":"number"},"path":{"type":"string","description":"Absolute file path"}},"required":["path"]}`},
		{"enum and default", Spec{
			"mode": {Type: "string", Enum: []any{"a", "b"}, Default: "a"},
			"n":    {Type: "integer", Enum: []any{1, 2.0}, Default: 1},
		}, `{"type":"object","properties":{"mode":{"type":"string","enum":["a","b"],"default":"a"},"n":{"type":"integer","enum":[1,2],"default":1}}}`},
		{"nested object with own required", Spec{
			"opts": {Type: "object", Required: true, Properties: Spec{
				"z": {Type: "boolean", Required: true},
				"a": {Type: "boolean", Required: true},
				"o": {Type: "string"},
			}},
		}, `{"type":"object","properties":{"opts":{"type":"object","properties":{"a":{"type":"boolean"},"o":{"type":"string"},"z":{"type":"boolean"}},"required":["a","z"]}},"required":["opts"]}`},
		{"array of objects", Spec{
			"items": {Type: "array", Items: &Prop{Type: "object", Properties: Spec{"name": {Type: "string", Required: true}}}},
		}, `{"type":"object","properties":{"items":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}}}`},
		{"bare object and array", Spec{
			"any": {Type: "object", Default: map[string]any{"k": []any{}}},
			"xs":  {Type: "array"},
		}, `{"type":"object","properties":{"any":{"type":"object","default":{"k":[]}},"xs":{"type":"array"}}}`},
		{"exotic names", Spec{"a/b \"c\"": {Type: "string", Required: true}},
			`{"type":"object","properties":{"a/b \"c\"":{"type":"string"}},"required":["a/b \"c\""]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.spec.JSONSchema()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("JSONSchema() =\n%s\nwant\n%s", got, tc.want)
			}
			// Spec schemas fall inside the structured-output subset too.
			if err := AssertSupportedOutputSchema(got); err != nil {
				t.Errorf("spec schema outside the output subset: %v", err)
			}
		})
	}
}

func TestT1_SpecValidate(t *testing.T) {
	self := Spec{}
	self["me"] = Prop{Type: "object", Properties: self}
	loop := &Prop{Type: "array"}
	loop.Items = loop
	cases := []struct {
		name string
		spec Spec
		want []string
	}{
		{"unknown type", Spec{"a": {Type: "str"}}, []string{`/a: unknown type "str"`}},
		{"empty type", Spec{"a": {}}, []string{`/a: unknown type ""`}},
		{"enum on object", Spec{"a": {Type: "object", Enum: []any{"x"}}}, []string{"/a: enum is only allowed on scalar types"}},
		{"enum wrong member type", Spec{"a": {Type: "string", Enum: []any{"x", 1}}}, []string{"/a: enum member 1 (1) is not of type string"}},
		{"enum non-integer", Spec{"a": {Type: "integer", Enum: []any{1.5}}}, []string{"/a: enum member 0 (1.5) is not of type integer"}},
		{"enum not json", Spec{"a": {Type: "number", Enum: []any{make(chan int)}}}, []string{"/a: enum member 0 is not JSON"}},
		{"items on non-array", Spec{"a": {Type: "string", Items: &Prop{Type: "string"}}}, []string{`/a: items is only allowed on type array, not "string"`}},
		{"properties on non-object", Spec{"a": {Type: "array", Properties: Spec{"b": {Type: "string"}}}}, []string{`/a: properties is only allowed on type object, not "array"`}},
		{"default not json", Spec{"a": {Type: "object", Default: func() {}}}, []string{"/a: default is not JSON"}},
		{"default wrong type", Spec{"a": {Type: "boolean", Default: "yes"}}, []string{"/a: default is string, not boolean"}},
		{"empty name", Spec{"": {Type: "string"}}, []string{"(root): empty property name"}},
		{"invalid utf8 name", Spec{"a": {Type: "object", Properties: Spec{"\xff": {Type: "string"}}}}, []string{`/a/properties: property name "\xff" is not valid UTF-8`}},
		{"nested path", Spec{"a": {Type: "object", Properties: Spec{"b": {Type: "array", Items: &Prop{Type: "nope"}}}}}, []string{`/a/properties/b/items: unknown type "nope"`}},
		{"cyclic map", self, []string{"cyclic spec"}},
		{"cyclic items", Spec{"l": *loop}, []string{"cyclic spec"}},
		{"every problem listed", Spec{"a": {Type: "x"}, "b": {Type: "y"}}, []string{`/a: unknown type "x"`, `/b: unknown type "y"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.spec.Validate()
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate() = %v, want ErrInvalidSpec", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if _, err := tc.spec.JSONSchema(); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("JSONSchema() err = %v, want ErrInvalidSpec", err)
			}
		})
	}
}

type readArgs struct {
	Path    string   `json:"path" desc:"Absolute file path" dsh:"required"`
	Offset  *float64 `json:"offset,omitempty"`
	Limit   float64  `json:"limit"`
	Mode    string   `json:"mode" dsh:"enum=text|binary,default=text"`
	Count   int      `json:"count" dsh:"enum=1|2|3,required"`
	Opts    *options `json:"opts" dsh:"required"`
	Tags    []string `json:"tags" desc:"Labels"`
	Meta    map[string]int
	Any     any       `json:"any"`
	When    time.Time `json:"when"`
	Blob    []byte    `json:"blob"`
	Ignored string    `json:"-"`
	hidden  string    //lint:ignore U1000 FromStruct must skip unexported fields
	Embedded
}

type options struct {
	Follow   bool      `json:"follow" dsh:"required,default=true"`
	Encoding string    `json:"encoding" desc:"Text encoding, e.g. \"utf-8\""`
	Points   [][2]int8 `json:"points"`
	Extra    struct {
		N uint `json:"n" dsh:"default=3"`
	} `json:"extra" dsh:"default={\"n\":3}"`
}

type Embedded struct {
	Inline bool `json:"inline"`
}

func f64(f float64) *float64 { return &f }

func readArgsSpec() Spec {
	const safe = 1<<53 - 1
	return Spec{
		"path":   {Type: "string", Required: true, Description: "Absolute file path"},
		"offset": {Type: "number"},
		"limit":  {Type: "number"},
		"mode":   {Type: "string", Enum: []any{"text", "binary"}, Default: "text"},
		"count":  {Type: "integer", Enum: []any{1, 2, 3}, Required: true, Minimum: f64(-safe), Maximum: f64(safe)},
		"opts": {Type: "object", Required: true, Properties: Spec{
			"follow":   {Type: "boolean", Required: true, Default: true},
			"encoding": {Type: "string", Description: `Text encoding, e.g. "utf-8"`},
			"points":   {Type: "array", Items: &Prop{Type: "array", Items: &Prop{Type: "integer", Minimum: f64(-128), Maximum: f64(127)}}},
			"extra": {Type: "object", Default: map[string]any{"n": 3}, Properties: Spec{
				"n": {Type: "integer", Default: 3, Minimum: f64(0), Maximum: f64(safe)},
			}},
		}},
		"tags":   {Type: "array", Description: "Labels", Items: &Prop{Type: "string"}},
		"Meta":   {Type: "object"},
		"any":    {Type: "object"},
		"when":   {Type: "string", Format: FormatDateTime},
		"blob":   {Type: "string", ContentEncoding: EncodingBase64},
		"inline": {Type: "boolean"},
	}
}

func TestT1_StructTagsMatchSpec(t *testing.T) {
	fromStruct, err := FromStruct[readArgs]()
	if err != nil {
		t.Fatal(err)
	}
	got, err := fromStruct.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	want, err := readArgsSpec().JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("struct schema\n%s\ndiffers from hand-written\n%s", got, want)
	}
	// Pointer type parameter works too.
	if p, err := FromStruct[*readArgs](); err != nil || len(p) != len(fromStruct) {
		t.Fatalf("FromStruct[*T] = %v, %v", p, err)
	}
}

type cyclic struct {
	Next *cyclic `json:"next"`
}

type cyclicSlice struct {
	Kids []cyclicSlice `json:"kids"`
}

type customJSON struct{}

func (customJSON) MarshalJSON() ([]byte, error) { return []byte("1"), nil }

func TestT1_StructTagErrors(t *testing.T) {
	check := func(name string, f func() (Spec, error), want string) {
		t.Run(name, func(t *testing.T) {
			_, err := f()
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want ErrInvalidSpec containing %q", err, want)
			}
		})
	}
	check("not a struct", FromStruct[int], "needs a struct")
	check("cycle via pointer", FromStruct[cyclic], "recursive type")
	check("cycle via slice", FromStruct[cyclicSlice], "recursive type")
	check("channel", FromStruct[struct {
		C chan int `json:"c"`
	}], "unsupported Go kind chan")
	check("custom marshaler", FromStruct[struct {
		X customJSON `json:"x"`
	}], "custom json.Marshaler")
	check("unknown option", FromStruct[struct {
		X string `dsh:"requird"`
	}], `unknown dsh tag option "requird"`)
	check("bad enum member", FromStruct[struct {
		X int `json:"x" dsh:"enum=1|two"`
	}], `/x: enum member "two"`)
	check("enum on array", FromStruct[struct {
		X []int `dsh:"enum=1"`
	}], "enum is only allowed on scalar types")
	check("bad default", FromStruct[struct {
		X bool `dsh:"default=maybe"`
	}], "default")
	check("string option", FromStruct[struct {
		X int `json:"x,string"`
	}], `",string"`)
	check("duplicate name", FromStruct[struct {
		A int `json:"inline"`
		Embedded
	}], "duplicate property name")
}

// FuzzSpecJSONSchema builds a Spec from fuzz bytes and checks that
// Validate and JSONSchema agree, never panic, and produce canonical,
// deterministic JSON Schema inside the output subset (minus defaults).
func FuzzSpecJSONSchema(f *testing.F) {
	f.Add([]byte("\x00path\x01\x02"), []byte(`"x"`))
	f.Add([]byte("\x05a\x04\x06b\x00\x03"), []byte(`[1,2]`))
	f.Add([]byte("\x07\x07\x07"), []byte(`{"k":1}`))
	f.Add([]byte{}, []byte(`nope`))
	f.Add([]byte("\x01a\x01\x01"), []byte(`1e17`))
	f.Add([]byte("\x01a\x00\x04"), []byte(`"2024-01-01T00:00:00Z"`))
	f.Add([]byte("\x01a\x42\x05"), []byte(`"!!"`))
	f.Fuzz(func(t *testing.T, shape, value []byte) {
		s := specFromBytes(&shape, value, 0)
		err := s.Validate()
		out, jerr := s.JSONSchema()
		if (err == nil) != (jerr == nil) {
			t.Fatalf("Validate = %v but JSONSchema err = %v", err, jerr)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("error %v does not wrap ErrInvalidSpec", err)
			}
			return
		}
		canon, cerr := canonjson.Canonicalize(out, canonjson.Options{MaxDepth: canonjson.HardMaxDepth})
		if cerr != nil || string(canon) != string(out) {
			t.Fatalf("JSONSchema output not canonical: %s (%v)", out, cerr)
		}
		refined := strings.Contains(string(out), `"minimum"`) || strings.Contains(string(out), `"maximum"`) ||
			strings.Contains(string(out), `"format"`) || strings.Contains(string(out), `"contentEncoding"`)
		if aerr := AssertSupportedOutputSchema(out); aerr != nil && !strings.Contains(aerr.Error(), "not lossless") && !refined {
			t.Fatalf("JSONSchema output %s outside the output subset: %v", out, aerr)
		}
		again, _ := s.JSONSchema()
		if string(again) != string(out) {
			t.Fatalf("JSONSchema not deterministic")
		}
		_ = ValidateArgs(s, value)
	})
}

var fuzzTypes = []string{"string", "number", "integer", "boolean", "object", "array", "bogus"}

// specFromBytes consumes shape to build a small Spec.
func specFromBytes(shape *[]byte, value []byte, depth int) Spec {
	next := func() byte {
		if len(*shape) == 0 {
			return 0
		}
		b := (*shape)[0]
		*shape = (*shape)[1:]
		return b
	}
	s := Spec{}
	n := int(next() % 4)
	for i := 0; i < n; i++ {
		nameLen := int(next() % 4)
		name := ""
		for j := 0; j < nameLen; j++ {
			name += string(rune('a' + next()%27))
		}
		s[name] = propFromBytes(shape, value, depth+1, next)
	}
	return s
}

func propFromBytes(shape *[]byte, value []byte, depth int, next func() byte) Prop {
	c := next()
	p := Prop{Type: fuzzTypes[int(c)%len(fuzzTypes)], Required: c&0x10 != 0}
	if c&0x20 != 0 {
		p.Description = string(value)
	}
	if c&0x40 != 0 {
		var v any
		if json.Unmarshal(value, &v) == nil {
			p.Default = v
			p.Enum = []any{v, "x"}
		}
	}
	// Refinements: bounds from the value's number (or a lossy one),
	// formats and encodings, valid or not.
	switch r := next(); r % 8 {
	case 1:
		var f float64
		if json.Unmarshal(value, &f) == nil {
			p.Minimum = &f
		}
	case 2:
		f := float64(int64(r)-128) * 1e15
		p.Maximum = &f
	case 3:
		lo, hi := float64(r%5), float64(r%3)
		p.Minimum, p.Maximum = &lo, &hi
	case 4:
		p.Format = FormatDateTime
	case 5:
		p.ContentEncoding = EncodingBase64
	case 6:
		p.Format = string(value)
	}
	if c&0x80 != 0 && depth < 6 {
		if p.Type == "array" || c&0x08 != 0 {
			it := propFromBytes(shape, value, depth+1, next)
			p.Items = &it
		} else {
			p.Properties = specFromBytes(shape, value, depth+1)
		}
	}
	return p
}

// TestT1_SpecRejectsInvalidUTF8InsteadOfReplacingIt: encoding/json writes
// invalid UTF-8 as U+FFFD, so an enum member, default or description that
// is not valid UTF-8 would silently reach the model as something else.
// Like a tool's own description, the spec must reject it.
func TestT1_SpecRejectsInvalidUTF8InsteadOfReplacingIt(t *testing.T) {
	for name, s := range map[string]Spec{
		"enum":        {"mode": {Type: TypeString, Enum: []any{"ok", "bad\xff"}}},
		"default":     {"mode": {Type: TypeString, Default: "bad\xff"}},
		"description": {"mode": {Type: TypeString, Description: "bad\xff"}},
		"object key":  {"o": {Type: TypeObject, Default: map[string]any{"k\xff": 1}}},
	} {
		if _, err := s.JSONSchema(); !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("%s: JSONSchema err = %v, want ErrInvalidSpec", name, err)
		}
	}
}
