package mcpclient_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestConfigValidate(t *testing.T) {
	dial := func(context.Context) (mcp.Transport, error) { return nil, nil }
	for _, tc := range []struct {
		name string
		cfg  mcpclient.Config
		want string // substring of the error; "" = valid
	}{
		{"stdio", mcpclient.Config{Name: "fs", Command: "srv", Args: []string{"a"}, Env: map[string]string{"K": "v"}, Cwd: "/"}, ""},
		{"http", mcpclient.Config{Name: "web", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{"dial", mcpclient.Config{Name: "mem", Dial: dial}, ""},
		{"no name", mcpclient.Config{Command: "srv"}, "name: empty"},
		{"long name", mcpclient.Config{Name: strings.Repeat("n", 48), Command: "srv"}, "longer than 47"},
		{"longest name", mcpclient.Config{Name: strings.Repeat("n", 47), Command: "srv"}, ""},
		{"dashes", mcpclient.Config{Name: "my-srv_2", Command: "srv"}, ""},
		// The server-name rule of permissions.CheckServerName: no server's
		// tool names can pass for another's (a_ and a collide).
		{"trailing underscore", mcpclient.Config{Name: "a_", Command: "srv"}, `must not end in "_"`},
		{"separator", mcpclient.Config{Name: "a__b", Command: "srv"}, `must not contain "__"`},
		{"dot", mcpclient.Config{Name: "a.b", Command: "srv"}, "[A-Za-z0-9_-]"},
		{"space", mcpclient.Config{Name: "a b", Command: "srv"}, "[A-Za-z0-9_-]"},
		{"non-ASCII", mcpclient.Config{Name: "café", Command: "srv"}, "[A-Za-z0-9_-]"},
		{"control", mcpclient.Config{Name: "a\nb", Command: "srv"}, "control character"},
		{"bad utf8", mcpclient.Config{Name: "a\xffb", Command: "srv"}, "UTF-8"},
		{"no transport", mcpclient.Config{Name: "x"}, "no transport"},
		{"two transports", mcpclient.Config{Name: "x", Command: "srv", URL: "http://h/"}, "several transports"},
		{"ftp", mcpclient.Config{Name: "x", URL: "ftp://h/"}, "http or https"},
		{"args without command", mcpclient.Config{Name: "x", URL: "http://h/", Args: []string{"a"}}, "need a command"},
		{"headers without url", mcpclient.Config{Name: "x", Command: "srv", Headers: map[string]string{"A": "b"}}, "need a url"},
		{"bad env", mcpclient.Config{Name: "x", Command: "srv", Env: map[string]string{"A=B": "c"}}, "env: invalid"},
		{"bad header", mcpclient.Config{Name: "x", URL: "http://h/", Headers: map[string]string{"A": "b\r\nX: y"}}, "headers: invalid"},
		{"negative timeout", mcpclient.Config{Name: "x", Command: "srv", CallTimeout: -1}, "callTimeout: negative"},
		{"negative delay", mcpclient.Config{Name: "x", Command: "srv", Reconnect: mcpclient.Reconnect{MaxDelay: -1}}, "reconnect.maxDelay"},
		{"negative size", mcpclient.Config{Name: "x", Command: "srv", MaxMessageBytes: -1}, "maxMessageBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid config rejected: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestConfigIsJSON(t *testing.T) {
	src := `{"name":"fs","command":"npx","args":["-y","server"],"env":{"A":"1"},"cwd":"/tmp",
		"trusted":true,"callTimeout":"1m30s","connectTimeout":2500,"failOnStartError":true,
		"reconnect":{"maxAttempts":3,"initialDelay":"250ms","maxDelay":"10s"},"maxMessageBytes":1024}`
	dec := json.NewDecoder(strings.NewReader(src))
	dec.DisallowUnknownFields()
	var c mcpclient.Config
	if err := dec.Decode(&c); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if time.Duration(c.CallTimeout) != 90*time.Second || time.Duration(c.ConnectTimeout) != 2500*time.Millisecond ||
		time.Duration(c.Reconnect.InitialDelay) != 250*time.Millisecond || c.Reconnect.MaxAttempts != 3 || !c.Trusted {
		t.Fatalf("decoded %+v", c)
	}
	out, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var back mcpclient.Config
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back.CallTimeout != c.CallTimeout || back.ConnectTimeout != c.ConnectTimeout || back.Reconnect != c.Reconnect {
		t.Fatalf("round trip %s -> %+v", out, back)
	}
}

func TestDurationRejectsBadValues(t *testing.T) {
	for _, in := range []string{`"-1s"`, `-5`, `"soon"`, `true`, `1e300`, `"1x"`, `NaN`} {
		var d mcpclient.Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%s accepted as %v", in, d)
		}
	}
}

func FuzzDuration(f *testing.F) {
	for _, s := range []string{`"30s"`, `30000`, `0`, `"1h2m3.5s"`, `1.5`, `-1`, `"-1s"`, `9.3e15`, `"9999999h"`, `null`, `"\u0031s"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		var d mcpclient.Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("%q decoded to negative %v", in, d)
		}
		// What decodes re-encodes to the same duration.
		out, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		var back mcpclient.Duration
		if err := json.Unmarshal(out, &back); err != nil || back != d {
			t.Fatalf("%q -> %v -> %s -> %v (%v)", in, d, out, back, err)
		}
	})
}

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ server, tool, want string }{
		{"fs", "read_file", "mcp__fs__read_file"},
		{"fs", "read-file", "mcp__fs__read-file"},
		{"my server", "x", ""},
		{"fs", "a.b", ""},
		{"fs", strings.Repeat("t", 55), "mcp__fs__" + strings.Repeat("t", 55)}, // exactly 64
		{"fs", strings.Repeat("t", 56), ""},
		{"fs", "日本", ""},
	} {
		got := mcpclient.ToolName(tc.server, tc.tool)
		if tc.want != "" && got != tc.want {
			t.Errorf("ToolName(%q, %q) = %q, want %q", tc.server, tc.tool, got, tc.want)
		}
		if tc.want == "" {
			// Normalized: model-safe, hashed, stable.
			if !modelSafe(got) || got[len(got)-9] != '_' || got != mcpclient.ToolName(tc.server, tc.tool) {
				t.Errorf("ToolName(%q, %q) = %q", tc.server, tc.tool, got)
			}
		}
	}
	if mcpclient.ToolName("fs", "a.b") == mcpclient.ToolName("fs", "a,b") {
		t.Error("a.b and a,b got the same name")
	}
}

func modelSafe(s string) bool {
	if s == "" || len(s) > mcpclient.MaxToolNameLen {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}

func FuzzToolNames(f *testing.F) {
	f.Add("fs", "read", "read.file", "mcp__fs__read")
	f.Add("s", "a.b", "a,b", "a_b_00000000")
	f.Add("日本", "\x00", "\xff", strings.Repeat("z", 100))
	f.Fuzz(func(t *testing.T, server, a, b, c string) {
		if !utf8.ValidString(server) {
			server = strings.ToValidUTF8(server, "?")
		}
		tools := []string{a, b, c}
		names := mcpclient.ToolNames(server, tools)
		seen := map[string]string{}
		for _, tool := range tools {
			n, ok := names[tool]
			if !ok {
				t.Fatalf("no name for %q", tool)
			}
			if !modelSafe(n) {
				t.Fatalf("name %q for %q is not model-safe", n, tool)
			}
			if other, dup := seen[n]; dup && other != tool {
				t.Fatalf("%q and %q both named %q", other, tool, n)
			}
			seen[n] = tool
			// The set's names do not depend on order.
			if again := mcpclient.ToolNames(server, []string{c, b, a})[tool]; again != n {
				t.Fatalf("order changed the name of %q: %q vs %q", tool, n, again)
			}
		}
	})
}
