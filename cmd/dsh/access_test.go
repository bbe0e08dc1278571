package main

import (
	"encoding/json"
	"testing"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
)

// The permission rules that name a mounted server's resource or prompt
// decide its read or get, argument conditions included; a default mode of
// ask or allow does not (a read no rule names is allowed), a default of
// deny does (a closed gateway stays closed).
func TestResourceAccessFollowsTheRules(t *testing.T) {
	p, err := permissions.Compile(permissions.Config{
		Ask:         []string{"mcp__up__secret", "mcp__up__greet(who:boss)"},
		Deny:        []string{"mcp__up__files(uri:test://files/etc/**)", "mcp__up__*(uri:test://static/**)"},
		Allow:       []string{"mcp__up__open"},
		DefaultMode: permissions.Ask,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, args string
		want       mcpserver.AccessVerdict
	}{
		{"mcp__up__secret", `{"uri":"test://secret"}`, mcpserver.AccessAsk},
		{"mcp__up__greet", `{"who":"boss"}`, mcpserver.AccessAsk},
		{"mcp__up__greet", `{"who":"you"}`, mcpserver.AccessAllow},
		{"mcp__up__greet", `not json`, mcpserver.AccessDeny}, // unsure: every conditional rule matches, deny first
		{"mcp__up__files", `{"uri":"test://files/etc/passwd"}`, mcpserver.AccessDeny},
		{"mcp__up__files", `{"uri":"test://files/readme"}`, mcpserver.AccessAllow},
		{"mcp__up__open", `{"uri":"test://open"}`, mcpserver.AccessAllow},
		{"mcp__other__x", `{}`, mcpserver.AccessAllow},
		{"mcp__up__open", `{"uri":"test://static/resource/1"}`, mcpserver.AccessDeny},
	} {
		d := resourceAccess(p, c.name, json.RawMessage(c.args))
		if d.Verdict != c.want {
			t.Errorf("%s %s: %v (%s), want %v", c.name, c.args, d.Verdict, d.Reason, c.want)
		}
		if d.Verdict != mcpserver.AccessAllow && d.Reason == "" {
			t.Errorf("%s %s: no reason", c.name, c.args)
		}
	}
}

// A default of deny refuses a read or get that no rule names, and a rule
// that allows it still serves it.
func TestResourceAccessDefaultDenyRefusesUnnamed(t *testing.T) {
	p, err := permissions.Compile(permissions.Config{
		Allow:       []string{"mcp__up__open"},
		DefaultMode: permissions.Deny,
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := resourceAccess(p, "mcp__up__other", json.RawMessage(`{"uri":"test://other"}`)); d.Verdict != mcpserver.AccessDeny || d.Reason == "" {
		t.Errorf("unnamed read under defaultMode deny: %v (%q), want a deny with its reason", d.Verdict, d.Reason)
	}
	if d := resourceAccess(p, "mcp__up__open", json.RawMessage(`{"uri":"test://open"}`)); d.Verdict != mcpserver.AccessAllow {
		t.Errorf("allowed read under defaultMode deny: %v (%s), want allow", d.Verdict, d.Reason)
	}
}
