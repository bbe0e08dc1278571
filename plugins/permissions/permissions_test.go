package permissions_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func compile(t *testing.T, c permissions.Config) *permissions.Policy {
	t.Helper()
	p, err := permissions.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecide(t *testing.T) {
	p := compile(t, permissions.Config{
		Allow:       []string{"mcp__fs__read_*", "mcp__gh", "Bash(npm run test:*)", "mcp__fs__write_file(path:/tmp/**)"},
		Ask:         []string{"mcp__fs__write_file", "mcp__db__query(sql:DROP *)"},
		Deny:        []string{"mcp__fs__write_file(path:/etc/**)", "Bash(rm:*)", "mcp__fs__move_file(source:/etc/**, destination:/tmp/**)"},
		PrimaryArgs: map[string]string{"Bash": "command"},
	})
	for _, tc := range []struct {
		name, tool, args string
		want             permissions.Verdict
		rule             string
	}{
		{"plain allow by glob", "mcp__fs__read_text_file", `{}`, permissions.Allow, "allow[0]"},
		{"server-wide rule", "mcp__gh__create_issue", `{}`, permissions.Allow, "allow[1]"},
		{"server-wide rule is not a prefix of another server", "mcp__ghost__x", `{}`, permissions.Allow, ""},
		{"deny beats allow and ask", "mcp__fs__write_file", `{"path":"/etc/passwd"}`, permissions.Deny, "deny[0]"},
		{"ask beats allow", "mcp__fs__write_file", `{"path":"/tmp/x"}`, permissions.Ask, "ask[0]"},
		{"dot-dot is cleaned", "mcp__fs__write_file", `{"path":"/tmp/../etc/shadow"}`, permissions.Deny, "deny[0]"},
		{"a case-varied key cannot dodge a deny", "mcp__fs__write_file", `{"path":"/tmp/x","PATH":"/etc/x"}`, permissions.Deny, "deny[0]"},
		{"an array element cannot dodge a deny", "mcp__fs__write_file", `{"path":["/tmp/x","/etc/x"]}`, permissions.Deny, "deny[0]"},
		{"relative path vs absolute deny pattern fails closed", "mcp__fs__write_file", `{"path":"../etc/x"}`, permissions.Deny, "deny[0]"},
		{"Claude Code prefix form", "Bash", `{"command":"npm run test -- --watch=false"}`, permissions.Allow, "allow[2]"},
		{"prefix form deny", "Bash", `{"command":"rm -rf /"}`, permissions.Deny, "deny[1]"},
		{"prefix form does not match another command", "Bash", `{"command":"npm install"}`, permissions.Allow, ""},
		{"star stops at slash", "mcp__db__query", `{"sql":"DROP TABLE a/b"}`, permissions.Allow, ""},
		{"star", "mcp__db__query", `{"sql":"DROP TABLE users"}`, permissions.Ask, "ask[1]"},
		{"two conditions: both", "mcp__fs__move_file", `{"source":"/etc/x","destination":"/tmp/y"}`, permissions.Deny, "deny[2]"},
		{"two conditions: one", "mcp__fs__move_file", `{"source":"/etc/x","destination":"/home/y"}`, permissions.Allow, ""},
		{"missing key: no match", "mcp__fs__write_file", `{}`, permissions.Ask, "ask[0]"},
		{"invalid JSON: a conditioned deny rule matches (fail closed)", "mcp__fs__write_file", `{"path":`, permissions.Deny, "deny[0]"},
		{"numbers are matched as their JSON text", "mcp__db__query", `{"sql":5}`, permissions.Allow, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(tc.tool, json.RawMessage(tc.args))
			if d.Verdict != tc.want || d.Where != tc.rule {
				t.Errorf("Decide(%s, %s) = %s %q (%s), want %s %q", tc.tool, tc.args, d.Verdict, d.Where, d.Rule, tc.want, tc.rule)
			}
		})
	}
}

func TestAllowNeedsEveryValueToMatch(t *testing.T) {
	p := compile(t, permissions.Config{
		Allow:       []string{"write(path:/tmp/**)"},
		DefaultMode: permissions.Ask,
	})
	for _, tc := range []struct {
		args string
		want permissions.Verdict
	}{
		{`{"path":"/tmp/a"}`, permissions.Allow},
		{`{"path":["/tmp/a","/tmp/b"]}`, permissions.Allow},
		{`{"path":["/tmp/a","/etc/b"]}`, permissions.Ask},
		{`{"path":"/tmp/a","Path":"/etc/b"}`, permissions.Ask},
		{`{"path":"rel"}`, permissions.Ask}, // cannot be placed: no borrowing
		{`{}`, permissions.Ask},
	} {
		if d := p.Decide("write", json.RawMessage(tc.args)); d.Verdict != tc.want {
			t.Errorf("%s: %s, want %s", tc.args, d.Verdict, tc.want)
		}
	}
	withDir := compile(t, permissions.Config{Allow: []string{"write(path:/tmp/**)"}, DefaultMode: permissions.Deny, WorkDir: "/tmp/work"})
	if d := withDir.Decide("write", json.RawMessage(`{"path":"notes.txt"}`)); d.Verdict != permissions.Allow {
		t.Errorf("relative path under WorkDir: %s", d.Verdict)
	}
	if d := withDir.Decide("write", json.RawMessage(`{"path":"../../etc/x"}`)); d.Verdict != permissions.Deny {
		t.Errorf("relative path escaping WorkDir: %s", d.Verdict)
	}
}

func TestCompileNamesEveryBadEntry(t *testing.T) {
	_, err := permissions.Compile(permissions.Config{
		Allow:       []string{"ok", "bad(", "x(path:*)"},
		Deny:        []string{""},
		DefaultMode: "maybe",
		WorkDir:     "rel",
	})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"allow[1]: ", `allow[2]: `, "primaryArgs", "deny[0]: ", "defaultMode: ", "workDir: "} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if !errors.Is(err, permissions.ErrInvalidRule) {
		t.Error("not ErrInvalidRule")
	}
	var ce *permissions.ConfigError
	if !errors.As(err, &ce) {
		t.Error("not a *ConfigError")
	}
}

func TestParseRuleErrors(t *testing.T) {
	for _, s := range []string{
		"", "(x)", "a b", "a(x", "a(x)(y)", "a(x,,y)", "a(x,)", "a(p:)", `a(p:\)`, "a(p:(x))", "a\x00", strings.Repeat("a", permissions.MaxRuleLen+1),
	} {
		if _, err := permissions.ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) accepted", s)
		} else if !errors.Is(err, permissions.ErrInvalidRule) {
			t.Errorf("ParseRule(%q): %v is not ErrInvalidRule", s, err)
		}
	}
	for _, s := range []string{"a", "a()", "a(p:x)", `a(p:x\,y\))`, "mcp__*", "a(p:x, q.r:y)"} {
		if _, err := permissions.ParseRule(s); err != nil {
			t.Errorf("ParseRule(%q): %v", s, err)
		}
	}
}

func TestEscapes(t *testing.T) {
	p := compile(t, permissions.Config{Deny: []string{`t(q:a\,b\*)`}})
	if d := p.Decide("t", json.RawMessage(`{"q":"a,b*"}`)); d.Verdict != permissions.Deny {
		t.Errorf("escaped literal: %s", d.Verdict)
	}
	if d := p.Decide("t", json.RawMessage(`{"q":"a,bc"}`)); d.Verdict != permissions.Allow {
		t.Errorf("escaped star matched as a wildcard: %s", d.Verdict)
	}
}

// boot loads the registry, an echo tool and the plugin with cfg.
func boot(t *testing.T, cfg permissions.Config) (*host.Context, *tools.Registry) {
	t.Helper()
	h := host.New()
	t.Cleanup(func() { h.Close() })
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, nil)
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(root, tools.Definition{
		Name: "write", Description: "Write.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.TextOutput("written"), nil },
	}); err != nil {
		t.Fatal(err)
	}
	f, err := root.Plugin(permissions.Plugin, cfg)
	if err == nil {
		err = f.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	return root, reg
}

func TestPluginDecisionsInThePipeline(t *testing.T) {
	root, reg := boot(t, permissions.Config{
		Deny: []string{"write(path:/etc/**)"},
		Ask:  []string{"write(path:/home/**)"},
	})
	var asked []string
	if _, err := tools.ApprovalService.Provide(root, tools.ApproverFunc(func(_ context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		asked = append(asked, r.Reason)
		return tools.AllowedOnce, nil
	})); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	r := reg.Execute(ctx, tools.Call{Name: "write", Arguments: json.RawMessage(`{"path":"/etc/x"}`), Agent: "a"})
	if !r.IsError || r.Error.Code != tools.CodeDenied || !strings.Contains(r.Content[0].Text, `deny[0] "write(path:/etc/**)"`) {
		t.Errorf("deny: %+v", r)
	}
	r = reg.Execute(ctx, tools.Call{Name: "write", Arguments: json.RawMessage(`{"path":"/home/x"}`), Agent: "a"})
	if r.IsError || len(asked) != 1 || !strings.Contains(asked[0], "ask[0]") {
		t.Errorf("ask: %+v, asked %q", r, asked)
	}
	r = reg.Execute(ctx, tools.Call{Name: "write", Arguments: json.RawMessage(`{"path":"/tmp/x"}`), Agent: "a"})
	if r.IsError || len(asked) != 1 {
		t.Errorf("default allow: %+v", r)
	}
}

func TestADenyHoldsAgainstAnEarlierListenerThatAllows(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, nil)
	reg, _ := tools.Service.Get(root)
	reg.Register(root, tools.Definition{
		Name: "write", Description: "Write.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.TextOutput("written"), nil },
	})
	// An outer listener that ignores what comes after it and allows.
	host.OnWaterfall(root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		next(ctx)
		return tools.Allowed(), nil
	})
	if _, err := root.Plugin(permissions.Plugin, permissions.Config{Deny: []string{"write"}}); err != nil {
		t.Fatal(err)
	}
	r := reg.Execute(context.Background(), tools.Call{Name: "write", Agent: "a"})
	if !r.IsError || r.Error.Code != tools.CodeDenied || r.Error.Name != permissions.ErrorName {
		t.Errorf("the guard did not hold the deny: %+v", r)
	}
}

func TestAnInvalidConfigFailsThePlugin(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	root.Plugin(systemprompt.Plugin, nil)
	root.Plugin(tools.Plugin, nil)
	f, err := root.Plugin(permissions.Plugin, permissions.Config{Deny: []string{"bad("}})
	if err == nil && f.Err() == nil {
		t.Fatal("an invalid rule loaded")
	}
}

func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		"a", "a()", "mcp__fs", "mcp__fs__*", "Bash(npm run test:*)", "w(path:/tmp/**)", `x(a:b\,c, d.e:f?g*)`, "a(p:(x))", "a(k::*)", `a(\`, "a(p:x\\)",
		"Read(./.env)", "Read(//etc/**)", "Edit(/src/**/*.ts)", "Read(~/.ssh/**)", "Read(*.[ch])", "Bash(git * main)", "Bash(ls *)",
		"WebFetch(domain:*.example.com)", "Agent(Explore)", "WebSearch", "w(path:**/.env)", "w(url:https://x.io/*)",
	} {
		f.Add(s, `{"path":"/tmp/x","a":["b",1,null,true],"d":{"e":"fgh"}}`)
	}
	f.Fuzz(func(t *testing.T, rule, args string) {
		r, err := permissions.ParseRule(rule)
		if err != nil {
			if !errors.Is(err, permissions.ErrInvalidRule) {
				t.Fatalf("error %v is not ErrInvalidRule", err)
			}
			return
		}
		if r.String() != rule {
			t.Fatalf("String() = %q, want %q", r.String(), rule)
		}
		for _, list := range [][]string{{rule}} {
			p, err := permissions.Compile(permissions.Config{Deny: list, PrimaryArgs: map[string]string{strings.SplitN(rule, "(", 2)[0]: "path"}, WorkDir: "/w", ConfigDir: "/c", Home: "/h"})
			if err != nil {
				continue
			}
			d := p.Decide(strings.SplitN(rule, "(", 2)[0], json.RawMessage(args))
			switch d.Verdict {
			case permissions.Deny, permissions.Allow:
			default:
				t.Fatalf("verdict %q", d.Verdict)
			}
		}
	})
}

// Matching is bounded whatever the model sends: a pattern has at most
// MaxWildcards wildcards, and a value longer than MaxValueLen is not
// matched but treated cautiously (deny and ask hold, allow does not).
func TestMatchingCostIsBounded(t *testing.T) {
	if _, err := permissions.ParseRule("t(p:" + strings.Repeat("a*", permissions.MaxWildcards+1) + ")"); err == nil {
		t.Error("a pattern with too many wildcards was accepted")
	}
	if _, err := permissions.ParseRule("t(p:" + strings.Repeat("*", 1000) + ")"); err != nil {
		t.Errorf("a run of stars is one wildcard: %v", err)
	}
	huge, _ := json.Marshal(map[string]string{"p": strings.Repeat("a", permissions.MaxValueLen+1)})
	deny := compile(t, permissions.Config{Deny: []string{"t(p:/etc/*)"}})
	if d := deny.Decide("t", huge); d.Verdict != permissions.Deny {
		t.Errorf("deny on a huge value: %s", d.Verdict)
	}
	allow := compile(t, permissions.Config{Allow: []string{"t(p:**)"}, DefaultMode: permissions.Ask})
	if d := allow.Decide("t", huge); d.Verdict != permissions.Ask {
		t.Errorf("allow on a huge value: %s", d.Verdict)
	}
}
