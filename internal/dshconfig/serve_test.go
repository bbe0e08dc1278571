package dshconfig_test

import (
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/internal/dshconfig"
)

func TestServerEntryConnectAndRetrySettings(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{"mcpServers":{
  "slow": {"command": "npx", "connectTimeout": "2m", "callTimeout": 45000, "required": true,
           "reconnect": {"maxAttempts": 3, "initialDelay": "1s", "maxDelay": "1m"}},
  "never": {"url": "http://a/mcp", "reconnect": {"maxAttempts": -1}}
}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	s, n := cfg.Servers[0], cfg.Servers[1]
	if s.ConnectTimeout != 2*time.Minute || s.Timeout != 45*time.Second || !s.Required ||
		s.Reconnect != (dshconfig.Reconnect{MaxAttempts: 3, InitialDelay: time.Second, MaxDelay: time.Minute}) {
		t.Errorf("slow %+v", s)
	}
	if n.Required || n.Reconnect.MaxAttempts != -1 {
		t.Errorf("never %+v", n)
	}
}

func TestHTTPSection(t *testing.T) {
	cfg, err := dshconfig.Parse("dsh.json", []byte(`{"mcpServers":{"a":{"command":"x"}},"http":{
  "tokens": {"alice": {"env": "ALICE_TOKEN"}, "ci": {"file": "${HOME}/tok"}},
  "jwt": {"jwksUrl": "https://id.example/jwks", "issuer": "https://id.example", "audience": "dsh", "scopes": ["mcp"]},
  "resource": "https://dsh.example/mcp",
  "allowedOrigins": ["https://App.example"], "allowedHosts": ["dsh.example:8443"],
  "limits": {"maxBodyBytes": 1048576, "bodyTimeout": "5s", "maxSessions": 3, "maxCallsPerSession": 2, "sessionIdleTimeout": "10m"}
}}`), env(map[string]string{"HOME": "/h"}))
	if err != nil {
		t.Fatal(err)
	}
	h := cfg.HTTP
	if len(h.Tokens) != 2 || h.Tokens[0] != (dshconfig.Token{Name: "alice", Env: "ALICE_TOKEN", Key: "http.tokens.alice"}) || h.Tokens[1].File != "/h/tok" {
		t.Errorf("tokens %+v", h.Tokens)
	}
	if h.JWT == nil || h.JWT.JWKSURL != "https://id.example/jwks" || h.JWT.Audience != "dsh" || h.JWT.Scopes[0] != "mcp" || h.Resource != "https://dsh.example/mcp" {
		t.Errorf("jwt %+v %q", h.JWT, h.Resource)
	}
	if h.AllowedOrigins[0] != "https://app.example" || h.AllowedHosts[0] != "dsh.example:8443" {
		t.Errorf("origins/hosts %v %v", h.AllowedOrigins, h.AllowedHosts)
	}
	l := h.Limits
	if l.MaxBodyBytes != 1<<20 || l.BodyTimeout != 5*time.Second || l.MaxSessions != 3 || l.MaxCallsPerSession != 2 || l.SessionIdleTimeout != 10*time.Minute {
		t.Errorf("limits %+v", l)
	}
}

func TestHTTPSectionProblems(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"inline token", `{"http":{"tokens":{"a":"s3cret"}}}`, "http.tokens.a: must be an object"},
		{"both sources", `{"http":{"tokens":{"a":{"env":"A","file":"/f"}}}}`, "http.tokens.a: needs exactly one"},
		{"no source", `{"http":{"tokens":{"a":{}}}}`, "http.tokens.a: needs exactly one"},
		{"bad identity", `{"http":{"tokens":{"a b":{"env":"A"}}}}`, "http.tokens.a b: an identity name"},
		{"bad env name", `{"http":{"tokens":{"a":{"env":"A-B"}}}}`, `http.tokens.a.env: "A-B" is not a variable name`},
		{"jwt without issuer", `{"http":{"resource":"http://x","jwt":{"jwksUrl":"https://i/j","audience":"a"}}}`, "http.jwt.issuer: is required"},
		{"jwt without resource", `{"http":{"jwt":{"jwksUrl":"https://i/j","issuer":"i","audience":"a"}}}`, "http.resource: is required"},
		{"jwks not a url", `{"http":{"resource":"http://x","jwt":{"jwksUrl":"file:///k","issuer":"i","audience":"a"}}}`, "http.jwt.jwksUrl: must be an http"},
		{"origin with path", `{"http":{"allowedOrigins":["https://a.example/x"]}}`, "http.allowedOrigins[0]: must be an origin"},
		{"wildcard host", `{"http":{"allowedHosts":["*"]}}`, "http.allowedHosts[0]: must be a host name"},
		{"zero limit", `{"http":{"limits":{"maxSessions":0}}}`, "http.limits.maxSessions: must be an integer from 1"},
		{"fraction limit", `{"http":{"limits":{"maxCalls":1.5}}}`, "http.limits.maxCalls: must be an integer from 1"},
		{"unknown limit", `{"http":{"limits":{"maxSession":3}}}`, "http.limits.maxSession: unknown key"},
		{"zero attempts", `{"mcpServers":{"a":{"command":"x","reconnect":{"maxAttempts":0}}}}`, "mcpServers.a.reconnect.maxAttempts: must be a positive integer, or -1"},
		{"both timeouts", `{"mcpServers":{"a":{"command":"x","timeout":"1s","callTimeout":"2s"}}}`, "mcpServers.a.timeout: is the older spelling"},
		{"required not bool", `{"mcpServers":{"a":{"command":"x","required":"yes"}}}`, "mcpServers.a.required: must be true or false"},
		{"misspelt permissions", `{"permisions":{"deny":["x"]}}`, `permisions: unknown key (did you mean "permissions"?`},
		{"capitalised", `{"MCPServers":{}}`, `MCPServers: unknown key (did you mean "mcpServers"?`},
		{"top level not an object", `[]`, `must be an object, not an array`},
		{"url secret redacted", `{"mcpServers":{"a":{"url":"ftp://u:pw@h/?key=s3cret"}}}`, `must be an http:// or https:// URL, not "ftp://***@h/?key=***"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := dshconfig.Parse("f.json", []byte(tc.body), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v\nwant it to contain %q", err, tc.want)
			}
		})
	}
}

// Other clients' top-level settings (Claude Desktop's globalShortcut) are
// ignored with a warning, while unknown keys inside a server entry and
// inside permissions stay errors.
func TestOtherClientsTopLevelKeysAreWarnings(t *testing.T) {
	cfg, err := dshconfig.Parse("f.json", []byte(`{"globalShortcut":"Ctrl+Space","$schema":"x","mcpServers":{"a":{"command":"x"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 2 || !strings.Contains(cfg.Warnings[0], "f.json: globalShortcut: ignored") || !strings.Contains(cfg.Warnings[1], "$schema") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
	for _, body := range []string{
		`{"globalShortcut":"x","mcpServers":{"a":{"command":"x","globalShortcut":1}}}`,
		`{"globalShortcut":"x","permissions":{"globalShortcut":1}}`,
	} {
		if _, err := dshconfig.Parse("f.json", []byte(body), nil); err == nil || !strings.Contains(err.Error(), "globalShortcut: unknown key") {
			t.Errorf("%s: %v", body, err)
		}
	}
}

func TestLegacySSEServerEntry(t *testing.T) {
	cfg, err := dshconfig.Parse("f.json", []byte(`{"mcpServers":{"old":{"type":"sse","url":"https://h/sse","headers":{"A":"b"}},"new":{"url":"https://h/mcp"}}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Servers[0].SSE || cfg.Servers[0].URL != "https://h/sse" || cfg.Servers[1].SSE {
		t.Errorf("servers %+v", cfg.Servers)
	}
}
