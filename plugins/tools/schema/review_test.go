package schema_test

import (
	"errors"
	"strings"
	"testing"

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
