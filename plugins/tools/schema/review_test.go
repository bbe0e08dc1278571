package schema_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// TestT1_SpecRejectsInvalidUTF8InsteadOfReplacingIt: encoding/json writes
// invalid UTF-8 as U+FFFD, so an enum member, default or description that
// is not valid UTF-8 would silently reach the model as something else.
// Like a tool's own description, the spec must reject it.
func TestT1_SpecRejectsInvalidUTF8InsteadOfReplacingIt(t *testing.T) {
	for name, s := range map[string]schema.Spec{
		"enum":        {"mode": {Type: schema.TypeString, Enum: []any{"ok", "bad\xff"}}},
		"default":     {"mode": {Type: schema.TypeString, Default: "bad\xff"}},
		"description": {"mode": {Type: schema.TypeString, Description: "bad\xff"}},
		"object key":  {"o": {Type: schema.TypeObject, Default: map[string]any{"k\xff": 1}}},
	} {
		if _, err := s.JSONSchema(); !errors.Is(err, schema.ErrInvalidSpec) {
			t.Errorf("%s: JSONSchema err = %v, want ErrInvalidSpec", name, err)
		}
	}
	if _, err := schema.CanonicalizeValue([]any{"x\xfe"}); !errors.Is(err, schema.ErrNotLossless) {
		t.Errorf("CanonicalizeValue(invalid UTF-8) err = %v, want ErrNotLossless", err)
	}
	if b, err := schema.CanonicalizeValue(map[string]any{"a": []string{"é", "\ufffd"}}); err != nil || string(b) != `{"a":["é","`+"\ufffd"+`"]}` {
		t.Errorf("valid value: %s, %v", b, err)
	}
}

// TestC4_DescriptionsCannotCloseTheFence: a description holding a run of
// backticks cannot end the fenced block the SDK declaration is shown in.
func TestC4_DescriptionsCannotCloseTheFence(t *testing.T) {
	out := schema.DeclareTools([]schema.ToolDecl{{Name: "x", Description: "Use ```bash fences``` here.", Parameters: []byte(`{"type":"object"}`)}})
	if strings.Contains(out, "```") {
		t.Fatalf("declaration contains a fence:\n%s", out)
	}
}

// TestS2_ViolationMessagesStayValidUTF8: a long non-ASCII value quoted in a
// violation is shortened on a rune boundary. A message cut inside a
// multi-byte character is invalid UTF-8, so the INVALID_ARGS result that
// carries it would itself be rejected as an invalid tool result and the
// model would never see its violations.
func TestS2_ViolationMessagesStayValidUTF8(t *testing.T) {
	long := strings.Repeat("é", 100)
	var vs []schema.Violation
	vs = append(vs, schema.ValidateStructuredValue(
		[]byte(`{"type":"object","properties":{"n":{"enum":["a"]},"c":{"const":"b"}}}`),
		[]byte(`{"n":"`+long+`","c":"`+long+`"}`))...)
	vs = append(vs, schema.ValidateArgs(schema.Spec{"n": {Type: schema.TypeString, Enum: []any{"a"}}}, []byte(`{"n":"`+long+`"}`))...)
	err := schema.AssertSupportedOutputSchema([]byte(`{"type":"object","properties":{"a":{"type":"x` + long + `"}},"required":["x` + long + `"]}`))
	var oe *schema.OutputSchemaError
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
	got := schema.ValidateStructuredValue(
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
		if vs := schema.ValidateStructuredValue([]byte(`{"type":"object","properties":{"n":{"type":"integer"}}}`), []byte(`{"n":`+n+`}`)); vs != nil {
			t.Errorf("%s is an integer: %v", n, vs)
		}
	}
}

// TestC4_LongBacktickRunsCannotCloseTheFence: the fence guard also holds
// for runs of four or more backticks, whose leftover after one replacement
// would otherwise still be a fence.
func TestC4_LongBacktickRunsCannotCloseTheFence(t *testing.T) {
	for _, d := range []string{"````", "`````", "a``````b", "x\n````\ny"} {
		out := schema.DeclareTools([]schema.ToolDecl{{Name: "x", Description: d, Parameters: []byte(`{"type":"object","properties":{"p":{"type":"string","description":"` + strings.ReplaceAll(d, "\n", `\n`) + `"}}}`)}})
		if strings.Contains(out, "```") {
			t.Errorf("description %q: declaration contains a fence:\n%s", d, out)
		}
	}
	// Quoted keys and string literals keep their value, with the
	// backticks escaped.
	out := schema.DeclareTools([]schema.ToolDecl{{Name: "x", Parameters: []byte(`{"type":"object","properties":{"` + "```" + `":{"enum":["` + "```" + `sh","b"]},"c":{"const":"` + "````" + `"}}}`)}})
	want := `x(args: { "\u0060\u0060\u0060"?: "\u0060\u0060\u0060sh" | "b"; c?: "\u0060\u0060\u0060\u0060"; }): Promise<unknown>;`
	if strings.Contains(out, "```") || !strings.Contains(out, want) {
		t.Errorf("declaration:\n%s\nwant line %s", out, want)
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
	spec := schema.Spec{
		"path": {Type: schema.TypeString},
		"opts": {Type: schema.TypeObject, Properties: schema.Spec{"mode": {Type: schema.TypeString}}},
	}
	in := []byte(`{"path":"/safe","PATH":"/secret","opts":{"Mode":"x"},"extra":1}`)
	if v := schema.ValidateArgs(spec, in); v != nil {
		t.Fatalf("without the option: %v", v)
	}
	v := schema.ValidateArgsWith(spec, in, schema.ArgsOptions{Target: schema.TargetFor[args]()})
	if len(v) != 2 || v[0].Path != "/PATH" || v[1].Path != "/opts/Mode" || !strings.Contains(v[0].Message, `into field "path"`) {
		t.Fatalf("violations = %v", v)
	}
}
