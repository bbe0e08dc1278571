package main

import (
	"strings"
	"testing"
)

func TestParseScriptRejects(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not json", `{`, "script:"},
		{"no agent", `{"turns":[]}`, "no agent"},
		{"call without name", `{"agent":"a","turns":[{"calls":[{"id":"x"}]}]}`, "id and name are required"},
		{"duplicate id", `{"agent":"a","turns":[{"calls":[{"id":"x","name":"n"}]},{"calls":[{"id":"x","name":"n"}]}]}`, "duplicate call id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseScript([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := parseScript(defaultScript); err != nil {
		t.Fatalf("the embedded script: %v", err)
	}
}

// FuzzParseScript: the script parser never panics, and what it accepts has
// an agent and uniquely identified, named calls.
func FuzzParseScript(f *testing.F) {
	f.Add(string(defaultScript))
	f.Add(`{"agent":"a","turns":[{"say":"x","calls":[{"id":"1","name":"n","arguments":{}}]}]}`)
	f.Fuzz(func(t *testing.T, in string) {
		s, err := parseScript([]byte(in))
		if err != nil {
			return
		}
		if s.Agent == "" {
			t.Fatal("accepted a script without an agent")
		}
		ids := map[string]bool{}
		for _, turn := range s.Turns {
			for _, c := range turn.Calls {
				if c.ID == "" || c.Name == "" || ids[c.ID] {
					t.Fatalf("accepted call %+v", c)
				}
				ids[c.ID] = true
			}
		}
	})
}
