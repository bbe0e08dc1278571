package schema

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

func TestT2_ValidateArgs(t *testing.T) {
	spec := Spec{
		"path":  {Type: "string", Required: true},
		"limit": {Type: "number"},
		"n":     {Type: "integer"},
		"flag":  {Type: "boolean"},
		"mode":  {Type: "string", Enum: []any{"text", "binary"}},
		"level": {Type: "integer", Enum: []any{1, 2}},
		"opts": {Type: "object", Properties: Spec{
			"depth": {Type: "integer", Required: true},
			"inner": {Type: "object", Properties: Spec{"x": {Type: "boolean", Required: true}}},
		}},
		"items": {Type: "array", Items: &Prop{Type: "object", Properties: Spec{
			"name": {Type: "string", Required: true},
		}}},
		"anyobj":      {Type: "object"},
		"anyarr":      {Type: "array"},
		"withdefault": {Type: "string", Default: "d", Required: true},
	}
	cases := []struct {
		name string
		args string
		want []Violation
	}{
		{"valid minimal", `{"path":"/a","withdefault":"x"}`, nil},
		{"valid full", `{"path":"/a","withdefault":"x","limit":1.5,"n":3,"flag":false,"mode":"binary","level":2.0,
			"opts":{"depth":1,"inner":{"x":true}},"items":[{"name":"a"},{"name":"b","extra":1}],
			"anyobj":{"k":[1]},"anyarr":[1,"x",null],"unknown":"extra keys allowed"}`, nil},
		{"integer written as float", `{"path":"/a","withdefault":"x","n":1.0,"level":1e0}`, nil},
		{"missing required", `{}`, []Violation{
			{"/path", "required property is missing"},
			{"/withdefault", "required property is missing"},
		}},
		{"defaults not applied", `{"path":"/a"}`, []Violation{{"/withdefault", "required property is missing"}}},
		{"wrong primitive", `{"path":1,"withdefault":"x","limit":"10","flag":"true","n":null}`, []Violation{
			{"/flag", "expected boolean, got string"},
			{"/limit", "expected number, got string"},
			{"/n", "expected integer, got null"},
			{"/path", "expected string, got number"},
		}},
		{"integer with fraction", `{"path":"/a","withdefault":"x","n":1.5}`, []Violation{
			{"/n", "expected integer, got number with a fractional part"},
		}},
		{"bad enum member", `{"path":"/a","withdefault":"x","mode":"hex","level":3}`, []Violation{
			{"/level", "must be one of 1, 2, got 3"},
			{"/mode", `must be one of "text", "binary", got "hex"`},
		}},
		{"nested violations", `{"path":"/a","withdefault":"x","opts":{"depth":"deep","inner":{}}}`, []Violation{
			{"/opts/depth", "expected integer, got string"},
			{"/opts/inner/x", "required property is missing"},
		}},
		{"array items", `{"path":"/a","withdefault":"x","items":[{"name":"ok"},{},{"name":5},"str"]}`, []Violation{
			{"/items/1/name", "required property is missing"},
			{"/items/2/name", "expected string, got number"},
			{"/items/3", "expected object, got string"},
		}},
		{"object without properties only type-checks", `{"path":"/a","withdefault":"x","anyobj":[],"anyarr":{}}`, []Violation{
			{"/anyarr", "expected array, got object"},
			{"/anyobj", "expected object, got array"},
		}},
		{"root not object", `[1]`, []Violation{{"", "expected object, got array"}}},
		{"root null", `null`, []Violation{{"", "expected object, got null"}}},
		{"not json", `{"path":`, []Violation{{"", "arguments are not valid JSON: unexpected EOF"}}},
		{"trailing data", `{} {}`, []Violation{{"", "arguments are not valid JSON: unexpected data after the top-level value"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ValidateArgs(spec, []byte(tc.args))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ValidateArgs =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

func TestT2_ValidateArgsUnknownTypeReported(t *testing.T) {
	got := ValidateArgs(Spec{"a": {Type: "weird"}}, []byte(`{"a":1}`))
	want := []Violation{{"/a", `schema declares unknown type "weird"`}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A nil spec accepts any object.
	if vs := ValidateArgs(nil, []byte(`{"x":[1]}`)); vs != nil {
		t.Fatalf("nil spec: %v", vs)
	}
}

func TestT2_ArgsError(t *testing.T) {
	err := error(&ArgsError{Tool: "read_file", Violations: []Violation{
		{"/path", "required property is missing"},
		{"/limit", "expected number, got string"},
		{"", "expected object, got array"},
	}})
	want := "invalid arguments for tool \"read_file\":\n- /path: required property is missing\n- /limit: expected number, got string\n- (root): expected object, got array"
	if err.Error() != want {
		t.Fatalf("Error() =\n%s\nwant\n%s", err.Error(), want)
	}
	if !errors.Is(err, ErrInvalidArgs) {
		t.Fatal("errors.Is(ErrInvalidArgs) = false")
	}
	wrapped := errors.Join(errors.New("ctx"), err)
	var ae *ArgsError
	if !errors.As(wrapped, &ae) || ae.Code() != "INVALID_ARGS" || !errors.Is(wrapped, ErrInvalidArgs) {
		t.Fatal("wrapped ArgsError not found")
	}
	if got := (&ArgsError{}).Error(); got != "invalid arguments:" {
		t.Fatalf("empty ArgsError = %q", got)
	}
}

// FuzzValidateArgs checks ValidateArgs never panics, is deterministic and
// returns sorted violations.
func FuzzValidateArgs(f *testing.F) {
	f.Add([]byte(`{"path":"/a","n":1.5,"items":[{},{"name":1}]}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"opts":{"inner":{"x":"y"}},"mode":["a"]}`))
	f.Add([]byte(`{"level":1e400,"n":123456789012345678901234567890}`))
	f.Add([]byte(`{"a":`))
	spec := Spec{
		"path":  {Type: "string", Required: true},
		"n":     {Type: "integer", Enum: []any{1, 2}},
		"mode":  {Type: "string", Enum: []any{"a"}},
		"level": {Type: "number"},
		"opts":  {Type: "object", Properties: Spec{"inner": {Type: "object", Properties: Spec{"x": {Type: "boolean", Required: true}}}}},
		"items": {Type: "array", Items: &Prop{Type: "object", Properties: Spec{"name": {Type: "string", Required: true}}}},
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		a := ValidateArgs(spec, args)
		b := ValidateArgs(spec, args)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic: %v vs %v", a, b)
		}
		for i := 1; i < len(a); i++ {
			if a[i-1].Path > a[i].Path || (a[i-1].Path == a[i].Path && a[i-1].Message >= a[i].Message) {
				t.Fatalf("not sorted/unique: %v", a)
			}
		}
		if canon, err := canonjson.CanonicalizeObject(args, canonjson.Options{}); err == nil {
			c := ValidateArgs(spec, canon)
			if tr := strings.TrimSpace(string(args)); !reflect.DeepEqual(a, c) && tr != "" && tr != "null" {
				t.Fatalf("canonical form validates differently: %v vs %v", a, c)
			}
		}
	})
}

func BenchmarkValidateArgs(b *testing.B) {
	spec := Spec{
		"path":    {Type: "string", Required: true},
		"offset":  {Type: "integer"},
		"limit":   {Type: "integer"},
		"mode":    {Type: "string", Enum: []any{"text", "binary"}},
		"options": {Type: "object", Properties: Spec{"follow": {Type: "boolean"}, "encoding": {Type: "string"}}},
		"tags":    {Type: "array", Items: &Prop{Type: "string"}},
		"note":    {Type: "string"},
	}
	args, err := canonjson.CanonicalizeObject([]byte(benchArgs), canonjson.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(args)))
	b.ReportAllocs()
	for b.Loop() {
		if vs := ValidateArgs(spec, args); vs != nil {
			b.Fatal(vs)
		}
	}
}

// TestP3_ValidateArgsWithRejectsCaseVariants: with a Target the walk
// reports keys that encoding/json would fold onto a field of the Go type,
// at every level, and only when asked.
func TestP3_ValidateArgsWithRejectsCaseVariants(t *testing.T) {
	type opts struct {
		Mode string `json:"mode"`
	}
	type args struct {
		Path string `json:"path"`
		Opts opts   `json:"opts"`
	}
	spec := Spec{
		"path": {Type: TypeString},
		"opts": {Type: TypeObject, Properties: Spec{"mode": {Type: TypeString}}},
	}
	in := []byte(`{"path":"/safe","PATH":"/secret","opts":{"Mode":"x"},"extra":1}`)
	if v := ValidateArgs(spec, in); v != nil {
		t.Fatalf("without the option: %v", v)
	}
	v := ValidateArgsWith(spec, in, ArgsOptions{Target: TargetFor[args]()})
	if len(v) != 2 || v[0].Path != "/PATH" || v[1].Path != "/opts/Mode" || !strings.Contains(v[0].Message, `into field "path"`) {
		t.Fatalf("violations = %v", v)
	}
}

// benchArgs is a typical ~200-byte tool-call argument object.
const benchArgs = `{"path": "/home/user/project/src/main.go", "offset": 120, "limit": 400,
 "mode": "text", "options": {"follow": true, "encoding": "utf-8"}, "tags": ["a", "b", "c"], "note": "read the \"main\" file"}`
