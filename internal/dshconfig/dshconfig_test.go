package dshconfig_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestParseAClaudeDesktopStyleConfig(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${HOME}/data"], "env": {"DEBUG": "${DEBUG:-0}"}, "timeout": "20s"},
    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}, "trusted": true},
    "off": {"command": "x", "disabled": true}
  },
  "permissions": {"allow": ["mcp__fs__read_*"], "deny": ["mcp__fs__write_file(path:/etc/**)"], "defaultMode": "ask"},
  "timeouts": {"mcp__fs__read_*": 1500, "mcp__*": "1m"},
  "mode": "both"
}`), env(map[string]string{"HOME": "/home/u", "TOKEN": "t0k$"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 {
		t.Fatalf("servers %+v", cfg.Servers)
	}
	fs, remote := cfg.Servers[0], cfg.Servers[1]
	if fs.Name != "fs" || !fs.Stdio() || fs.Args[2] != "/home/u/data" || fs.Env["DEBUG"] != "0" || fs.Timeout != 20*time.Second {
		t.Errorf("fs %+v", fs)
	}
	if remote.Stdio() || remote.URL != "https://example.com/mcp" || remote.Headers["Authorization"] != "Bearer t0k$" || !remote.Trusted {
		t.Errorf("remote %+v", remote)
	}
	if cfg.Permissions.DefaultMode != permissions.Ask || len(cfg.Permissions.Deny) != 1 {
		t.Errorf("permissions %+v", cfg.Permissions)
	}
	if len(cfg.Timeouts) != 2 || cfg.Timeouts[0].Budget != 1500*time.Millisecond || cfg.Timeouts[1].Tool != "mcp__*" {
		t.Errorf("timeouts %+v", cfg.Timeouts)
	}
	if !cfg.Timeouts[0].Matches("mcp__fs__read_file") || cfg.Timeouts[0].Matches("mcp__fs__write_file") || !cfg.Timeouts[1].Matches("mcp__x") {
		t.Error("timeout patterns")
	}
	// One grammar with permission rules: "mcp__fs" names the server's tools.
	if !(dshconfig.Timeout{Tool: "mcp__fs"}).Matches("mcp__fs__write_file") || (dshconfig.Timeout{Tool: "mcp__fs"}).Matches("mcp__fsx__write_file") {
		t.Error("timeout patterns")
	}
	if cfg.Mode != tools.Both {
		t.Errorf("mode %q", cfg.Mode)
	}
}

func TestEveryProblemIsNamedByFileAndKey(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"empty command", `{"mcpServers":{"fs":{"command":""}}}`, []string{"f.json: mcpServers.fs.command: must be a non-empty string"}},
		{"command not a string", `{"mcpServers":{"fs":{"command":5}}}`, []string{"f.json: mcpServers.fs.command: must be a string, not a number"}},
		{"unknown keys everywhere", `{"mcpServer":{},"mcpServers":{"fs":{"command":"x","argz":[]}},"permissions":{"alow":[]}}`, []string{
			"f.json: mcpServer: unknown key", "f.json: mcpServers.fs.argz: unknown key", "f.json: permissions.alow: unknown key"}},
		{"both transports", `{"mcpServers":{"fs":{"command":"x","url":"http://a"}}}`, []string{"mcpServers.fs: has both"}},
		{"no transport", `{"mcpServers":{"fs":{}}}`, []string{"mcpServers.fs: needs"}},
		{"sse with a command", `{"mcpServers":{"fs":{"type":"sse","command":"x"}}}`, []string{`mcpServers.fs.type: is "sse" but the server has a "command"`}},
		{"stdio keys on http", `{"mcpServers":{"fs":{"url":"http://a","args":[]}}}`, []string{"mcpServers.fs.args: belongs to a stdio server"}},
		{"bad url", `{"mcpServers":{"fs":{"url":"ftp://a"}}}`, []string{"mcpServers.fs.url: must be an http"}},
		{"bad name", `{"mcpServers":{"a b":{"command":"x"}}}`, []string{"mcpServers.a b: a server name"}},
		{"separator in name", `{"mcpServers":{"a__b":{"command":"x"}}}`, []string{`mcpServers.a__b: a server name must not contain "__"`}},
		{"args element", `{"mcpServers":{"fs":{"command":"x","args":["a",1]}}}`, []string{"mcpServers.fs.args[1]: must be a string"}},
		{"env value", `{"mcpServers":{"fs":{"command":"x","env":{"A":true}}}}`, []string{"mcpServers.fs.env.A: must be a string, not a boolean"}},
		{"undefined variable", `{"mcpServers":{"fs":{"command":"x","args":["${NOPE}"]}}}`, []string{"mcpServers.fs.args[0]: environment variable NOPE is not set"}},
		{"bad rule", `{"permissions":{"deny":["ok","bad("]}}`, []string{"permissions.deny[1]: invalid permission rule"}},
		{"bad mode", `{"permissions":{"defaultMode":"yes"}}`, []string{"permissions.defaultMode: must be"}},
		{"bad timeout", `{"timeouts":{"x":"soon","y":-1}}`, []string{"timeouts.x: must be a duration", "timeouts.y: must be positive"}},
		{"bad tools mode", `{"mode":"fast"}`, []string{`mode: must be "native"`}},
		{"top level not an object", `[]`, []string{"f.json: must be an object, not an array"}},
		{"duplicate key", "{\"mcpServers\":{},\n \"mcpServers\":{}}", []string{`f.json: line 2, column 2: duplicate key "mcpServers"`}},
		{"syntax", "{\n  \"mcpServers\": {,}\n}", []string{"f.json: line 2"}},
		{"trailing data", `{} {}`, []string{"unexpected data after the top-level value"}},
		{"empty", ``, []string{"f.json: empty file"}},
		{"invalid UTF-8", "{\"mode\":\"\xff\"}", []string{"f.json: not valid UTF-8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dshconfig.Parse("f.json", []byte(tc.body), env(nil))
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error:\n%v\nlacks %q", err, w)
				}
			}
			var ce *dshconfig.Error
			if !errors.As(err, &ce) || ce.File != "f.json" {
				t.Errorf("not a *dshconfig.Error naming the file: %#v", err)
			}
		})
	}
}

func TestRulesAreLiteral(t *testing.T) {
	cfg, err := dshconfig.Parse("f.json", []byte(`{"permissions":{"deny":["a(p:${X}*)"]}}`), env(map[string]string{"X": "y"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Permissions.Deny[0] != "a(p:${X}*)" {
		t.Errorf("rule %q", cfg.Permissions.Deny[0])
	}
}

func TestLoad(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dsh.json")
	if _, err := dshconfig.Load(p); err == nil || !strings.HasPrefix(err.Error(), p+": ") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(p, []byte(`{"mcpServers":{"a":{"command":"x"}}}`), 0o600)
	cfg, err := dshconfig.Load(p)
	if err != nil || cfg.File != p || cfg.Servers[0].Command != "x" {
		t.Errorf("Load: %+v %v", cfg, err)
	}
	os.WriteFile(p, make([]byte, dshconfig.MaxFileSize+1), 0o600)
	if _, err := dshconfig.Load(p); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("huge file: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers":{"fs":{"command":"npx","args":["-y","x"],"env":{"A":"${B:-c}"}}},"permissions":{"allow":["a(p:x)"]},"timeouts":{"a*":"1s"},"mode":"code"}`,
		`{"mcpServers":{"r":{"url":"https://x","headers":{"h":"$${x}"}}}}`,
		`{"mcpServers":{"fs":{"command":""}}}`, `[]`, `{`, `{"a":1}`, `{"timeouts":{"x":1e400}}`, `{"mcpServers":{"x":{"command":"${"}}}`,
		`{"globalShortcut":"x","permisions":{},"http":{"tokens":{"a":{"env":"B"},"c":{"file":"/f"}},"jwt":{"jwksUrl":"https://i/j","issuer":"i","audience":"a","scopes":["s"]},"resource":"https://r/mcp","allowedOrigins":["https://o"],"allowedHosts":["h:1"],"limits":{"maxSessions":3,"bodyTimeout":"1s"}}}`,
		`{"mcpServers":{"s":{"command":"x","callTimeout":"1s","connectTimeout":5,"required":true,"reconnect":{"maxAttempts":-1,"initialDelay":"1ms","maxDelay":"1s"}}}}`,
		`{"http":{"tokens":{"a":{"env":"B"}},"jwt":{"jwksUrl":"https://i/j","issuer":"i","audience":"a"},"resource":"https://r/mcp","unmapped":"refuse"},"profiles":{"p":{"match":[{"token":"a"},{"sub":"s"},{"claim":"groups","value":"g"}],"permissions":{"allow":["x(k:v)"],"defaultMode":"deny"},"tools":{"mode":"code"}},"q":{"match":[{"token":"a"}],"permissions":{}}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := dshconfig.Parse("f.json", data, env(map[string]string{"B": "b"}))
		if err != nil {
			for _, e := range unjoin(err) {
				var ce *dshconfig.Error
				if !errors.As(e, &ce) || ce.File != "f.json" || ce.Msg == "" {
					t.Fatalf("error %q is not a *dshconfig.Error with a message", e)
				}
			}
			return
		}
		if _, err := permissions.Compile(cfg.Permissions); err != nil {
			t.Fatalf("accepted permissions that do not compile: %v", err)
		}
		tokens := map[string]bool{}
		for _, p := range cfg.Profiles {
			if _, err := permissions.Compile(p.Permissions); err != nil {
				t.Fatalf("accepted a profile %q whose permissions do not compile: %v", p.Name, err)
			}
			if len(p.Match) == 0 || p.Name == dshconfig.DefaultProfile {
				t.Fatalf("accepted profile %+v", p)
			}
			for _, m := range p.Match {
				if m.Token != "" && tokens[m.Token] {
					t.Fatalf("token %q mapped twice", m.Token)
				}
				tokens[m.Token] = m.Token != ""
				if m.Token == "" && (m.Claim == "" || m.Value == "" || cfg.HTTP.JWT == nil) {
					t.Fatalf("accepted match %+v", m)
				}
			}
		}
		for _, s := range cfg.Servers {
			if (s.Command == "") == (s.URL == "") {
				t.Fatalf("server %q has neither or both transports", s.Name)
			}
		}
		for _, to := range cfg.Timeouts {
			if to.Budget <= 0 {
				t.Fatalf("non-positive budget %v", to.Budget)
			}
		}
	})
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func TestClaudeCodeRuleFormsLoadWithTheDefaultPrimaryArgs(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{"permissions": {
		"allow": ["Bash(npm run test:*)", "Read(/src/**)"],
		"deny": ["Tool(x)"],
		"primaryArgs": {"Tool": "target"}
	}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	pol, err := permissions.Compile(cfg.Permissions)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tool, args string
		want       permissions.Verdict
	}{
		{"Bash", `{"command":"npm run test -- -v"}`, permissions.Allow},
		{"Read", `{"file_path":"/src/a/b.go"}`, permissions.Allow},
		{"Tool", `{"target":"x"}`, permissions.Deny},
	} {
		if got := pol.Decide(c.tool, json.RawMessage(c.args)).Verdict; got != c.want {
			t.Errorf("Decide(%s, %s) = %v, want %v", c.tool, c.args, got, c.want)
		}
	}
	if _, err := dshconfig.Parse("dsh.json", []byte(`{"permissions": {"primaryArgs": {"Bash": 3}}}`), env(nil)); err == nil || !strings.Contains(err.Error(), "permissions.primaryArgs.Bash") {
		t.Fatalf("a non-string primary argument: err = %v, want one naming permissions.primaryArgs.Bash", err)
	}
}

// The README's gateway example, which shows one rule of each kind, loads.
func TestReadmeGatewayExampleLoads(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start := strings.Index(s, "```json\n{\n  \"mcpServers\": {\"fs\"")
	if start < 0 {
		t.Fatal("the README's gateway example is gone")
	}
	body := s[start+len("```json\n"):]
	body = body[:strings.Index(body, "```")]
	cfg, err := dshconfig.Parse("/srv/dsh.json", []byte(body), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Permissions.Allow) < 8 || len(cfg.Permissions.Deny) < 7 || len(cfg.Permissions.PostBlock) != 1 {
		t.Fatalf("rules not read: %+v", cfg.Permissions)
	}
}
