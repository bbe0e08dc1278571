package main

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rewrite replaces the config file at p with cfg whole (write and
// rename, as editors do), so the watcher never reads half a file.
func rewrite(t *testing.T, p string, cfg any) {
	t.Helper()
	b, ok := cfg.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(cfg); err != nil {
			t.Fatal(err)
		}
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, p); err != nil {
		t.Fatal(err)
	}
}

// With --watch, a changed rule decides the next call of a session opened
// before the change; an invalid file is refused whole (its errors
// logged) and the running rules stay; a removed server's tools go and an
// added server's tools come, in the same session.
func TestServe_WatchReloadsRulesAndServers(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := testServerConfig(t, nil)
	s := startServe(t, cfg, "127.0.0.1:0", "--watch")
	changed := make(chan struct{}, 16)
	cs, err := connect(t, s.url, testToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, cs, "before"); r.IsError || resultText(r) != "before" {
		t.Fatalf("before the change: %+v", r)
	}

	// A deny rule: the next call is denied.
	rewrite(t, cfg, map[string]any{
		"mcpServers":  map[string]any{"t": testServerEntry()},
		"permissions": map[string]any{"deny": []string{"mcp__t__echo(text:secret*)"}},
	})
	s.stderr.waitFor(t, regexp.MustCompile(`reloaded `+regexp.QuoteMeta(cfg)), s.exited)
	if out := s.stderr.String(); strings.Contains(out, "mcpServers.t:") || strings.Contains(out, "invalid") {
		t.Errorf("an unchanged server was touched, or a half file read:\n%s", out)
	}
	if r := callEcho(t, cs, "secret-1"); !r.IsError || !strings.Contains(resultText(r), "deny") {
		t.Fatalf("the new deny rule did not decide the call: %+v %q", r.IsError, resultText(r))
	}
	if r := callEcho(t, cs, "public"); r.IsError || resultText(r) != "public" {
		t.Fatalf("a call the rule does not match: %+v %q", r.IsError, resultText(r))
	}

	// An invalid file (an unknown verdict key and a broken rule): refused
	// whole, logged, the deny rule stays.
	rewrite(t, cfg, []byte(`{"mcpServers": {"t": {"command": "`+os.Args[0]+`"}}, "permissions": {"deny": ["mcp__t__echo(text:"]}}`))
	s.stderr.waitFor(t, regexp.MustCompile(`is invalid; the running config stays:\ndsh: `+regexp.QuoteMeta(cfg)+`: permissions.deny\[0\]`), s.exited)
	if r := callEcho(t, cs, "secret-2"); !r.IsError {
		t.Fatalf("after an invalid file the old rule no longer applies: %q", resultText(r))
	}

	// Rename the server (t removed, u added): same session, new tools.
	rewrite(t, cfg, map[string]any{
		"mcpServers":  map[string]any{"u": testServerEntry()},
		"permissions": map[string]any{"deny": []string{"mcp__u__echo(text:secret*)"}},
	})
	s.stderr.waitFor(t, regexp.MustCompile(`mcpServers.u: added(?s:.*)reloaded `), s.exited)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	for {
		l, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tl := range l.Tools {
			names = append(names, tl.Name)
		}
		n := strings.Join(names, " ")
		if strings.Contains(n, "mcp__u__echo") && !strings.Contains(n, "mcp__t__") {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("tools after the rename: %s\n%s", n, s.stderr.String())
		}
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__u__echo", Arguments: map[string]any{"text": "secret-3"}})
	if err != nil || !r.IsError {
		t.Fatalf("the renamed server's call: %v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__u__echo", Arguments: map[string]any{"text": "hello"}})
	if err != nil || r.IsError || resultText(r) != "hello" {
		t.Fatalf("the renamed server's call: %v %+v", err, r)
	}
}
