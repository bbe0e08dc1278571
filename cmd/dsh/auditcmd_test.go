package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/audit"
)

// dsh audit query and tail read the record the gateway writes.
func TestAuditCommands_QueryAndTailReadTheRecord(t *testing.T) {
	s, console, cfg := consoleServe(t, map[string]any{"approval": map[string]any{}}) // no routing: the client is asked
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The client declared no elicitation: the ask is unavailable, denied.
	if r := callEcho(t, cs, "first"); !r.IsError {
		t.Fatalf("ask without a channel: %+v", r)
	}

	tailOut := newSyncBuf()
	tctx, stop := context.WithCancel(context.Background())
	tailDone := make(chan int, 1)
	go func() {
		tailDone <- run(tctx, []string{"audit", "tail", "--config", cfg, "--json", "--tool", "mcp__t__*"}, strings.NewReader(""), tailOut, newSyncBuf())
	}()
	defer func() {
		stop()
		if code := <-tailDone; code != 0 {
			t.Errorf("tail exited %d", code)
		}
	}()
	_ = console
	var line []string
	for i := 0; line == nil; i++ {
		callEcho(t, cs, "tailed")
		line = tailOut.waitForOrNil(regexp.MustCompile(`(?m)^(\{.*"args":"\{\\"text\\":\\"tailed\\"\}".*\})$`))
		if i > 100 {
			t.Fatalf("tail printed nothing:\n%s", tailOut.String())
		}
	}
	var c audit.Call
	if err := json.Unmarshal([]byte(line[1]), &c); err != nil || c.Tool != "mcp__t__echo" || c.Code != "APPROVAL_UNAVAILABLE" || c.Identity != "token:default" {
		t.Fatalf("tailed record: %+v %v", c, err)
	}

	out := newSyncBuf()
	if code := run(context.Background(), []string{"audit", "query", "--config", cfg, "--json", "--code", "APPROVAL_UNAVAILABLE"}, strings.NewReader(""), out, newSyncBuf()); code != 0 {
		t.Fatalf("query exited %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 2 {
		t.Fatalf("query: %q", out.String())
	}
	for _, l := range lines {
		var c audit.Call
		if err := json.Unmarshal([]byte(l), &c); err != nil || c.Code != "APPROVAL_UNAVAILABLE" || len(c.Decisions) < 2 || c.Decisions[1].Channel != "client" {
			t.Fatalf("query line %q: %+v %v", l, c, err)
		}
	}
	out = newSyncBuf()
	if code := run(context.Background(), []string{"audit", "query", "--config", cfg, "--tool", "mcp__t__echo", "--limit", "1"}, strings.NewReader(""), out, newSyncBuf()); code != 0 {
		t.Fatalf("query exited %d", code)
	}
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "mcp__t__echo") || !strings.Contains(got, "APPROVAL_UNAVAILABLE") || !strings.Contains(got, "by rule mcp__t__echo") {
		t.Fatalf("text query: %q", got)
	}
	if code := run(context.Background(), []string{"audit", "query", "--config", cfg, "--since", "yesterday"}, strings.NewReader(""), newSyncBuf(), newSyncBuf()); code != exitUsage {
		t.Fatalf("bad --since: exit %d", code)
	}
}

// waitForOrNil waits briefly for re in the output (nil when it does not
// come): for a writer that may not have started yet.
func (s *syncBuf) waitForOrNil(re *regexp.Regexp) []string {
	for range 20 {
		if m := re.FindStringSubmatch(s.String()); m != nil {
			return m
		}
		select {
		case <-s.wrote:
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// `dsh console` serves the record of a config's store on its own.
func TestAuditCommands_StandaloneConsoleServesTheRecord(t *testing.T) {
	s, _, cfg := consoleServe(t, map[string]any{"approval": map[string]any{}})
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	callEcho(t, cs, "standalone")
	ctx, stop := context.WithCancel(context.Background())
	errOut := newSyncBuf()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "--config", cfg, "--listen", "127.0.0.1:0"}, strings.NewReader(""), newSyncBuf(), errOut)
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("dsh console exited %d:\n%s", code, errOut.String())
		}
	}()
	console := errOut.waitFor(t, consoleRE, done)[1]
	deadline := time.Now().Add(budget)
	for {
		st, m := api(t, "GET", console+"api/calls?tool=mcp__t__echo", nil, bearer(testConsoleToken))
		if calls, _ := m["calls"].([]any); st == 200 && len(calls) == 1 && strings.Contains(calls[0].(map[string]any)["args"].(string), "standalone") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("standalone console: %d %v", st, m)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st, _ := api(t, "GET", console+"api/calls", nil, bearer(testToken)); st != 401 {
		t.Fatalf("MCP token on the standalone console: %d", st)
	}
}

// A reload that changes "approval" (or "audit", "console") says a restart
// applies it: the running routing stays as it was.
func TestAuditCommands_ReloadNamesApprovalChangesAsNeedingARestart(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	keys := map[string]any{
		"mcpServers":  map[string]any{"t": testServerEntry()},
		"permissions": map[string]any{"ask": []string{"mcp__t__echo"}},
		"approval":    map[string]any{"approver": "console"},
	}
	cfg := writeConfig(t, keys)
	s := startServe(t, cfg, "127.0.0.1:0", "--watch", "--audit")
	keys["approval"] = map[string]any{"approver": "client"}
	rewrite(t, cfg, keys)
	s.stderr.waitFor(t, regexp.MustCompile(`approval: changed; restart dsh to apply`), s.exited)
}
