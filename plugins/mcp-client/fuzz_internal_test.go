package mcpclient

import (
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// FuzzFittingOutputSchema: whatever output schema a server declares, the
// check never panics, and a schema it keeps is in the subset, without a
// root $schema.
func FuzzFittingOutputSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object"}`,
		`{"$schema":1,"type":"object"}`,
		`{"type":"object","properties":{"n":{"minimum":3}}}`,
		`{"type":["object","null"]}`, `[]`, `"x"`, `null`, `{"$schema":"a","$schema":"b"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var v any
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		vs := fittingOutputSchema(v)
		if vs == nil {
			return
		}
		out := vs.JSON()
		if err := schema.AssertSupportedOutputSchema(out); err != nil {
			t.Fatalf("kept %s: %v", out, err)
		}
		var root map[string]json.RawMessage
		if json.Unmarshal(out, &root) == nil {
			if d, ok := root["$schema"]; ok && len(d) > 0 && d[0] == '"' {
				t.Fatalf("kept a root $schema: %s", out)
			}
		}
		_ = needsInput(v) // total on any schema
	})
}

func TestNeedsInput(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   bool
	}{
		{`null`, false},
		{`{"type":"object","properties":{}}`, false},
		{`{"type":"object","required":[]}`, false},
		{`{"type":"object","required":["name"]}`, true},
		{`{"required":"name"}`, true}, // unreadable: assume input is needed
		{`[1]`, true},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.schema), &v); err != nil {
			t.Fatal(err)
		}
		if got := needsInput(v); got != tc.want {
			t.Errorf("needsInput(%s) = %v, want %v", tc.schema, got, tc.want)
		}
	}
}
