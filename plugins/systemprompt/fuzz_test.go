package systemprompt_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// FuzzConfigValidate: Validate accepts a ToolOrder exactly when none of
// its names is empty and none appears twice, and every rejection wraps
// ErrInvalid. The input encodes the names one per line after a first,
// ignored line, so "" is no names and "\n" is one empty name.
func FuzzConfigValidate(f *testing.F) {
	for _, s := range []string{
		"", "\n", "\nbash", "\nbash\nread", "\nbash\nbash", "\nbash\n", "\n\nbash",
		"\na\nb\na", "\nA\na", "\nread\nwrite\nedit\nrun_code", "\n \n  ", "\n\x00\n\x00",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names := strings.Split(s, "\n")[1:]
		err := systemprompt.Config{ToolOrder: names}.Validate()

		valid := true
		seen := map[string]bool{}
		for _, n := range names {
			if n == "" || seen[n] {
				valid = false
			}
			seen[n] = true
		}
		switch {
		case valid && err != nil:
			t.Fatalf("Validate(%q) = %v, want nil", names, err)
		case !valid && err == nil:
			t.Fatalf("Validate(%q) accepted an empty or duplicate name", names)
		case err != nil && !errors.Is(err, systemprompt.ErrInvalid):
			t.Fatalf("Validate(%q) = %v, which does not wrap ErrInvalid", names, err)
		}
	})
}

// FuzzToolSchemaValidate: Validate accepts a schema exactly when its name
// is not empty and its parameters are empty or a JSON object (as
// encoding/json decodes them), and every rejection wraps ErrInvalid.
func FuzzToolSchemaValidate(f *testing.F) {
	for _, tc := range []struct{ name, params string }{
		{"bash", ""},
		{"bash", `{}`},
		{"bash", ` {"type":"object","properties":{"command":{"type":"string"}}}`},
		{"bash", "\t\r\n{}\n"},
		{"", `{}`},
		{"x", `[]`},
		{"x", `null`},
		{"x", `"{"`},
		{"x", `{`},
		{"x", `{} {}`},
		{"x", ` `},
		{"x", `{"a":1,"a":2}`},
		{"x", "{\"\xff\":1}"},
		{"x", "\u00a0{}"},
		{"x", `1`},
	} {
		f.Add(tc.name, "does things", []byte(tc.params))
	}
	f.Fuzz(func(t *testing.T, name, desc string, params []byte) {
		s := systemprompt.ToolSchema{Name: name, Description: desc, Parameters: params}
		err := s.Validate()

		valid := name != ""
		if len(params) > 0 {
			var v any
			isObject := json.Unmarshal(params, &v) == nil
			if isObject {
				_, isObject = v.(map[string]any)
			}
			valid = valid && isObject
		}
		switch {
		case valid && err != nil:
			t.Fatalf("Validate(%q, %q) = %v, want nil", name, params, err)
		case !valid && err == nil:
			t.Fatalf("Validate(%q, %q) accepted a schema with an empty name or parameters that are not a JSON object", name, params)
		case err != nil && !errors.Is(err, systemprompt.ErrInvalid):
			t.Fatalf("Validate(%q, %q) = %v, which does not wrap ErrInvalid", name, params, err)
		}
	})
}
