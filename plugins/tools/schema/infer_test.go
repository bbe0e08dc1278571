package schema_test

import (
	"encoding/json"
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

type inferLeaves struct {
	B    []byte          `json:"b"`
	Raw  json.RawMessage `json:"raw,omitempty"`
	Addr netip.Addr      `json:"addr"`
	IDs  map[int]string  `json:"ids,omitempty"`
	Req  string          `json:"req,omitempty" dsh:"required,enum=a|b"`
	Desc string          `json:"desc,omitempty" desc:"via the alias"`
	Yaml string          `json:"yaml,omitempty" yaml:"y"`
}

// TestOUT8_InferIsJSONSchemaGoCorrectedWhereEncodingJSONDisagrees: Infer is
// jsonschema-go's inference, except that []byte is base64 text, a
// json.RawMessage any value, a text marshaler a string, integer map keys
// are allowed, and the desc/dsh aliases apply.
func TestOUT8_InferIsJSONSchemaGoCorrectedWhereEncodingJSONDisagrees(t *testing.T) {
	got, err := schema.InferFor[inferLeaves]()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"type":"object","properties":{"addr":{"type":"string"},"b":{"type":["null","string"],"contentEncoding":"base64"},"desc":{"type":"string","description":"via the alias"},"ids":{"type":"object","additionalProperties":{"type":"string"}},"raw":true,"req":{"type":"string","enum":["a","b"]},"yaml":{"type":"string"}},"required":["b","addr","req"],"additionalProperties":false}`
	var a, b any
	if json.Unmarshal(got, &a) != nil || json.Unmarshal([]byte(want), &b) != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// For plain structs it is jsonschema-go's schema exactly.
	type plain struct {
		A string   `json:"a" jsonschema:"the a"`
		B *int     `json:"b,omitempty"`
		C []string `json:"c,omitzero"`
	}
	js, _ := jsonschema.For[plain](nil)
	sdk, _ := json.Marshal(js)
	ours, _ := schema.InferFor[plain]()
	json.Unmarshal(sdk, &a)
	json.Unmarshal(ours, &b)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("go-sdk %s\n  ours %s", sdk, ours)
	}
	// The value schema validates what it says.
	vs, err := schema.CompileValueSchema(got)
	if err != nil {
		t.Fatal(err)
	}
	if v := vs.ValidateArgs([]byte(`{"b":"!!","addr":"::1","req":"c","ids":{"1":2},"x":1}`), schema.ArgsOptions{}); len(v) != 4 {
		t.Fatalf("violations %v", v)
	}
}

type badMarshaler struct{ X int }

func (badMarshaler) MarshalJSON() ([]byte, error) { return []byte(`1`), nil }

// TestOUT9_InferRefusesWhatItCannotDescribe: an unknown struct tag (the
// silent required:"true" of old), a desc beside a jsonschema tag, a
// custom json.Marshaler, the ",string" option at any depth and fields
// that jsonschema-go and encoding/json name differently are errors, for
// Infer and for FromStruct.
func TestOUT9_InferRefusesWhatItCannotDescribe(t *testing.T) {
	type unknownTag struct {
		A string `json:"a" required:"true"`
	}
	type both struct {
		A string `json:"a" jsonschema:"x" desc:"y"`
	}
	type marshaler struct {
		M badMarshaler `json:"m"`
	}
	type quoted struct {
		M map[string]struct {
			N int `json:"n,string"`
		} `json:"m"`
	}
	type Named struct {
		X string `json:"x"`
	}
	type embeddedNamed struct {
		Named `json:"named"`
	}
	for name, c := range map[string]struct {
		typ  reflect.Type
		want string
	}{
		"unknown tag": {reflect.TypeFor[unknownTag](), `unknown struct tag "required"`},
		"both":        {reflect.TypeFor[both](), "both a jsonschema and a desc tag"},
		"marshaler":   {reflect.TypeFor[marshaler](), "custom json.Marshaler"},
		"quoted":      {reflect.TypeFor[quoted](), `",string" option`},
		"embedded":    {reflect.TypeFor[embeddedNamed](), "encoding/json reads"},
	} {
		_, err := schema.Infer(c.typ)
		if !errors.Is(err, schema.ErrInvalidSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Infer = %v", name, err)
		}
	}
	if _, err := schema.FromStruct[unknownTag](); err == nil || !strings.Contains(err.Error(), `unknown struct tag "required"`) {
		t.Errorf("FromStruct: %v", err)
	}
}

// TestOUT10_ValueSubsetKeywords: the structured-output subset checks type
// arrays, boolean schemas, additionalProperties schemas, bounds, item
// counts and base64.
func TestOUT10_ValueSubsetKeywords(t *testing.T) {
	s := `{"type":"object","properties":{
	  "n":{"type":["null","integer"],"minimum":1,"maximum":3},
	  "l":{"type":"array","minItems":1,"maxItems":2},
	  "m":{"type":"object","additionalProperties":{"type":"number"}},
	  "b":{"type":"string","contentEncoding":"base64"},
	  "never":false,"any":true}}`
	got := schema.ValidateStructuredValue([]byte(s), []byte(`{"n":4,"l":[],"m":{"x":"1"},"b":"!","never":1,"any":{"y":[]}}`))
	want := []string{
		"/b: must be standard base64 (contentEncoding base64): illegal base64 data at input byte 0",
		"/l: must have at least 1 items, got 0",
		"/m/x: expected number, got string",
		"/n: must be at most 3, got 4",
		"/never: no value is allowed here (schema false)",
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("%d: %q, want %q", i, got[i].String(), want[i])
		}
	}
	if vs := schema.ValidateStructuredValue([]byte(s), []byte(`{"n":null,"l":[1,2],"m":{},"b":"aGk="}`)); vs != nil {
		t.Errorf("valid value: %v", vs)
	}
	if vs := schema.ValidateStructuredValue([]byte(`{"type":"string"}`), []byte(`"x"`)); vs != nil {
		t.Errorf("a string root is a value schema: %v", vs)
	}
}
