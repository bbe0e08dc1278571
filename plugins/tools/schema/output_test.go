package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestS1_AcceptsSupportedSubset(t *testing.T) {
	ok := []string{
		`{"type":"object"}`,
		`{"type":"object","title":"T","description":"d","default":{},"examples":[{}],
		  "properties":{
		    "s":{"type":"string","enum":["a","b"]},
		    "n":{"type":"number","const":1.5},
		    "i":{"type":"integer","enum":[1,2]},
		    "b":{"type":"boolean"},
		    "z":{"type":"null","const":null},
		    "any":{"description":"untyped"},
		    "mixed":{"enum":["a",1,true,null]},
		    "arr":{"type":"array","items":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"],"additionalProperties":false}}
		  },
		  "required":["s","arr"],"additionalProperties":true}`,
	}
	for _, s := range ok {
		if err := AssertSupportedOutputSchema([]byte(s)); err != nil {
			t.Errorf("AssertSupportedOutputSchema(%s) = %v", s, err)
		}
	}
}

func TestS1_RejectsEveryViolation(t *testing.T) {
	schema := `{
	  "type":"object",
	  "$schema":"x",
	  "properties":{
	    "a":{"type":["string","date"]},
	    "b":{"type":"string","pattern":"^x","format":"email"},
	    "c":{"$ref":"#/defs/c"},
	    "d":{"oneOf":[{"type":"string"}]},
	    "e":{"type":"number","exclusiveMinimum":0},
	    "f":{"type":"object","additionalProperties":3},
	    "g":{"type":"array","items":[{"type":"string"}]},
	    "h":{"enum":[]},
	    "i":{"enum":[{"x":1}]},
	    "j":{"const":[1]},
	    "k":3,
	    "l":{"type":"date"},
	    "m":{"type":"string","enum":[1]},
	    "n":{"type":"string","items":{"type":"string"}},
	    "o":{"description":1,"examples":{}},
	    "p":{"type":"object","required":["x","x",3]}
	  },
	  "required":["a","missing"]
	}`
	err := AssertSupportedOutputSchema([]byte(schema))
	var oe *OutputSchemaError
	if !errors.As(err, &oe) || !errors.Is(err, ErrUnsupportedSchema) || oe.Code() != "UNSUPPORTED_SCHEMA" {
		t.Fatalf("err = %v, want *OutputSchemaError", err)
	}
	want := []Violation{
		{"/$schema", `unsupported keyword "$schema"`},
		{"/properties/a/type/1", `unsupported type "date"`},
		{"/properties/b/format", `unsupported keyword "format"`},
		{"/properties/b/pattern", `unsupported keyword "pattern"`},
		{"/properties/c/$ref", `unsupported keyword "$ref"`},
		{"/properties/d/oneOf", `unsupported keyword "oneOf"`},
		{"/properties/e/exclusiveMinimum", `unsupported keyword "exclusiveMinimum"`},
		{"/properties/f/additionalProperties", "additionalProperties must be a boolean or a schema, got number"},
		{"/properties/g/items", "items must be a single schema; tuple arrays are not supported"},
		{"/properties/h/enum", "enum must be a non-empty array"},
		{"/properties/i/enum/0", "enum members must be strings, numbers, booleans or null, got object"},
		{"/properties/j/const", "const must be a string, number, boolean or null, got array"},
		{"/properties/k", "schema must be an object, got number"},
		{"/properties/l/type", `unsupported type "date"`},
		{"/properties/m/enum/0", "enum member is number, not string"},
		{"/properties/n/items", "items is only allowed with type array, not string"},
		{"/properties/o/description", "description must be a string, got number"},
		{"/properties/o/examples", "examples must be an array, got object"},
		{"/properties/p/required/0", `required property "x" is not declared in properties`},
		{"/properties/p/required/1", `duplicate required entry "x"`},
		{"/properties/p/required/2", "required entry must be a string, got number"},
		{"/required/1", `required property "missing" is not declared in properties`},
	}
	if !reflect.DeepEqual(oe.Violations, want) {
		t.Fatalf("violations:\n%s\nwant:\n%s", joinViolations(oe.Violations), joinViolations(want))
	}
	if !strings.HasPrefix(err.Error(), "unsupported output schema:\n- /$schema: ") {
		t.Fatalf("Error() = %q", err.Error())
	}
}

func joinViolations(vs []Violation) string {
	var s []string
	for _, v := range vs {
		s = append(s, v.String())
	}
	return strings.Join(s, "\n")
}

func TestS1_RootRules(t *testing.T) {
	cases := []struct {
		name, schema string
		want         []Violation
	}{
		{"array root", `[]`, []Violation{{"", "root schema must be an object schema, got array"}}},
		{"missing type", `{"properties":{}}`, []Violation{{"/type", `root schema must have "type": "object"`}}},
		{"string root", `{"type":"string"}`, []Violation{{"/type", `root schema must have "type": "object"`}}},
		{"not json", `{"type":`, []Violation{{"/type", "schema is not lossless JSON (byte 8): unexpected end of input, expected a value"}}},
		{"duplicate key", `{"type":"object","type":"string"}`, []Violation{{"/type", "schema is not lossless JSON (byte 17): duplicate object key (readers disagree on first-wins vs last-wins)"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var oe *OutputSchemaError
			if err := AssertSupportedOutputSchema([]byte(tc.schema)); !errors.As(err, &oe) {
				t.Fatalf("err = %v", err)
			}
			if !reflect.DeepEqual(oe.Violations, tc.want) {
				t.Fatalf("got %v, want %v", oe.Violations, tc.want)
			}
		})
	}
}

func TestS2_PathQualified(t *testing.T) {
	schema := `{"type":"object","properties":{
	  "name":{"type":"string"},
	  "kind":{"enum":["a","b"]},
	  "version":{"const":2},
	  "count":{"type":"integer"},
	  "items":{"type":"array","items":{"type":"object","properties":{"id":{"type":"number"}},"required":["id"],"additionalProperties":false}},
	  "nothing":{"type":"null"}
	},"required":["name","items"]}`
	cases := []struct {
		name, value string
		want        []Violation
	}{
		{"valid", `{"name":"x","kind":"a","version":2.0,"count":3,"items":[{"id":1}],"nothing":null,"extra":1}`, nil},
		{"missing and wrong", `{"kind":"c","version":"2","count":1.5,"items":[{"id":"1"},{},{"id":1,"more":true},7],"nothing":0}`, []Violation{
			{"/count", "expected integer, got number with a fractional part"},
			{"/items/0/id", "expected number, got string"},
			{"/items/1/id", "required property is missing"},
			{"/items/2/more", "additional property is not allowed"},
			{"/items/3", "expected object, got number"},
			{"/kind", `must be one of "a", "b", got "c"`},
			{"/name", "required property is missing"},
			{"/nothing", "expected null, got number"},
			{"/version", `must be 2, got "2"`},
		}},
		{"root type", `[]`, []Violation{{"", "expected object, got array"}}},
		{"value not lossless", `{"name":"x","items":[],"count":9007199254740993}`, []Violation{{"/count", "value is not lossless JSON (byte 31): integer 9007199254740993 exceeds 2^53-1 (readers disagree: rounded vs exact)"}}},
		{"value not json", ``, []Violation{{"", "value is not lossless JSON (byte 0): unexpected end of input, expected a value"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateStructuredValue([]byte(schema), []byte(tc.value))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got\n%s\nwant\n%s", joinViolations(got), joinViolations(tc.want))
			}
		})
	}
}

func TestS2_UnsupportedSchemaIsAViolation(t *testing.T) {
	got := ValidateStructuredValue([]byte(`{"type":"object","properties":{"a":{"$ref":"#"}}}`), []byte(`{}`))
	want := []Violation{{"", `unsupported output schema: /properties/a/$ref: unsupported keyword "$ref"`}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got := ValidateStructuredValue(nil, nil); len(got) != 1 || got[0].Path != "" {
		t.Fatalf("nil schema: %v", got)
	}
}

var outputSchemaSeeds = []string{
	`{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1,"x",null]}}},"required":["a"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"$ref":"#"},"b":{"type":["string"]}},"required":["c"]}`,
	`{"type":"object","properties":{"n":{"type":"integer","const":3}}}`,
	`[]`, `{`, `{"type":"object","a":1,"a":2}`, `true`,
}

func FuzzAssertOutputSchema(f *testing.F) {
	for _, s := range outputSchemaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, schema []byte) {
		err := AssertSupportedOutputSchema(schema)
		if err == nil {
			// A supported schema validates values without panicking.
			_ = ValidateStructuredValue(schema, []byte(`{}`))
			return
		}
		var oe *OutputSchemaError
		if !errors.As(err, &oe) || len(oe.Violations) == 0 || !errors.Is(err, ErrUnsupportedSchema) {
			t.Fatalf("bad error %#v", err)
		}
		again := AssertSupportedOutputSchema(schema)
		if again.Error() != err.Error() {
			t.Fatal("not deterministic")
		}
	})
}

func FuzzValidateStructuredValue(f *testing.F) {
	for _, s := range outputSchemaSeeds {
		f.Add([]byte(s), []byte(`{"a":[1,"x",null,{}],"n":3.0}`))
	}
	f.Add([]byte(`{"type":"object"}`), []byte(`{"a":1,"a":2}`))
	f.Add([]byte(`{"type":"object"}`), []byte(`[`))
	f.Fuzz(func(t *testing.T, schema, value []byte) {
		a := ValidateStructuredValue(schema, value)
		b := ValidateStructuredValue(schema, value)
		if !reflect.DeepEqual(a, b) {
			t.Fatal("not deterministic")
		}
		for i := 1; i < len(a); i++ {
			if a[i-1].Path > a[i].Path || (a[i-1].Path == a[i].Path && a[i-1].Message >= a[i].Message) {
				t.Fatalf("not sorted/unique: %v", a)
			}
		}
	})
}

// TestS2_ViolationMessagesStayValidUTF8: a long non-ASCII value quoted in a
// violation is shortened on a rune boundary. A message cut inside a
// multi-byte character is invalid UTF-8, so the INVALID_ARGS result that
// carries it would itself be rejected as an invalid tool result and the
// model would never see its violations.
func TestS2_ViolationMessagesStayValidUTF8(t *testing.T) {
	long := strings.Repeat("é", 100)
	var vs []Violation
	vs = append(vs, ValidateStructuredValue(
		[]byte(`{"type":"object","properties":{"n":{"enum":["a"]},"c":{"const":"b"}}}`),
		[]byte(`{"n":"`+long+`","c":"`+long+`"}`))...)
	vs = append(vs, ValidateArgs(Spec{"n": {Type: TypeString, Enum: []any{"a"}}}, []byte(`{"n":"`+long+`"}`))...)
	err := AssertSupportedOutputSchema([]byte(`{"type":"object","properties":{"a":{"type":"x` + long + `"}},"required":["x` + long + `"]}`))
	var oe *OutputSchemaError
	if !errors.As(err, &oe) {
		t.Fatalf("AssertSupportedOutputSchema = %v", err)
	}
	vs = append(vs, oe.Violations...)
	if len(vs) != 5 {
		t.Fatalf("want 5 violations, got %v", vs)
	}
	for _, v := range vs {
		if !utf8.ValidString(v.String()) {
			t.Errorf("violation is not valid UTF-8: %q", v.String())
		}
	}
}

// TestS2_PathsEscapeSlashAndTilde: violation paths are RFC 6901 pointers,
// so "/" and "~" in property names are escaped (as ~1 and ~0).
func TestS2_PathsEscapeSlashAndTilde(t *testing.T) {
	got := ValidateStructuredValue(
		[]byte(`{"type":"object","properties":{"a/b~c":{"type":"integer"},"m~1":{"type":"string"}},"required":["m~1"],"additionalProperties":false}`),
		[]byte(`{"a/b~c":1.5,"x/~":1}`))
	want := []string{"/a~1b~0c: expected integer, got number with a fractional part", "/m~01: required property is missing", "/x~1~0: additional property is not allowed"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("violation %d = %q, want %q", i, got[i].String(), want[i])
		}
	}
	for _, n := range []string{"1.0", "1e2", "-0", "1e300"} {
		if vs := ValidateStructuredValue([]byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`), []byte(`{"n":`+n+`}`)); vs != nil {
			t.Errorf("%s is an integer: %v", n, vs)
		}
	}
}
