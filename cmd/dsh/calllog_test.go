package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/audit"
)

// readCallLog waits (up to budget) until path holds n lines and returns
// them decoded.
func readCallLog(t *testing.T, path string, n int) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		b, _ := os.ReadFile(path)
		if bytes.Count(b, []byte("\n")) >= n || time.Now().After(deadline) {
			var out []map[string]any
			sc := bufio.NewScanner(bytes.NewReader(b))
			for sc.Scan() {
				var m map[string]any
				if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
					t.Fatalf("a line is not JSON: %v: %q", err, sc.Text())
				}
				out = append(out, m)
			}
			if len(out) != n {
				t.Fatalf("want %d lines, got %d:\n%s", n, len(out), b)
			}
			return out
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	return r
}

// Each served call is one JSON line with its time, identity, session,
// tool, decision and who took it, code and duration; arguments are left
// out unless configured; then they are redacted (a URL's query value, a
// secret-looking name) and cut. With the audit store on as well, the log
// is fed by the same records.
func TestCallLog_OneLinePerCallWithDecisionAndBoundedRedactedArguments(t *testing.T) {
	t.Setenv("ALICE_TOKEN", testToken)
	const secretURL = "https://api.example/v1?api_key=s3cret-in-url"
	for _, tc := range []struct {
		name     string
		callLog  map[string]any
		audit    bool
		wantArgs bool
	}{
		{"default", map[string]any{}, false, false},
		{"arguments", map[string]any{"arguments": true, "maxArgumentBytes": 40, "redact": []string{"text"}}, false, true},
		{"with audit", map[string]any{"arguments": true}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			logPath := filepath.Join(dir, "calls.jsonl")
			tc.callLog["path"] = logPath
			extra := map[string]any{"callLog": tc.callLog}
			if tc.audit {
				extra["audit"] = map[string]any{"path": filepath.Join(dir, "audit.db")}
			}
			s := startServe(t, otelConfig(t, extra), "127.0.0.1:0")
			cs, err := connect(t, s.url, testToken, nil)
			if err != nil {
				t.Fatal(err)
			}
			if r := callEcho(t, cs, secretURL+" "+strings.Repeat("x", 100)); r.IsError {
				t.Fatalf("echo: %+v", r)
			}
			if r := callTool(t, cs, "mcp__t__block", map[string]any{"marker": filepath.Join(dir, "m")}); !r.IsError {
				t.Fatalf("block was not denied: %+v", r)
			}
			lines := readCallLog(t, logPath, 2)
			byTool := map[string]map[string]any{}
			for _, l := range lines {
				byTool[l["tool"].(string)] = l
			}
			echo, block := byTool["mcp__t__echo"], byTool["mcp__t__block"]
			if echo == nil || block == nil {
				t.Fatalf("lines: %v", lines)
			}
			for _, l := range lines {
				if ts, _ := l["time"].(string); ts == "" {
					t.Errorf("no time: %v", l)
				} else if _, err := time.Parse(time.RFC3339Nano, ts); err != nil {
					t.Errorf("time %q: %v", ts, err)
				}
				if l["identity"] != "token:alice" || l["session"] == nil || l["session"] == "" {
					t.Errorf("identity/session: %v", l)
				}
				if _, ok := l["durationMs"].(float64); !ok {
					t.Errorf("no durationMs: %v", l)
				}
			}
			if echo["decision"] != "allow" || echo["by"] != "rule" || echo["rule"] != "mcp__t__echo" || echo["code"] != nil || echo["isError"] != nil {
				t.Errorf("echo line: %v", echo)
			}
			if block["decision"] != "deny" || block["by"] != "rule" || block["rule"] != "mcp__t__block" || block["code"] != "DENIED" || block["isError"] != true {
				t.Errorf("block line: %v", block)
			}
			b, _ := os.ReadFile(logPath)
			if strings.Contains(string(b), "s3cret") {
				t.Errorf("the log shows the URL's query value:\n%s", b)
			}
			args, has := echo["arguments"].(string)
			if has != tc.wantArgs {
				t.Fatalf("arguments present %v, want %v: %v", has, tc.wantArgs, echo)
			}
			if !tc.wantArgs {
				return
			}
			switch tc.name {
			case "arguments": // "text" is a redacted name here; cut at 40 bytes
				if args != `{"text":"***"}` || echo["argumentsTruncated"] != nil {
					t.Errorf("arguments %q (truncated %v)", args, echo["argumentsTruncated"])
				}
				if m, _ := block["arguments"].(string); len(m) > 40 || block["argumentsTruncated"] != true {
					t.Errorf("block's arguments not cut to 40 bytes: %q %v", m, block["argumentsTruncated"])
				}
			default:
				if !strings.Contains(args, "api_key=***") || echo["argumentsTruncated"] != nil {
					t.Errorf("arguments %q (truncated %v)", args, echo["argumentsTruncated"])
				}
			}
		})
	}
}

// blockingWriter blocks each Write until released.
type blockingWriter struct {
	release chan struct{}
	buf     bytes.Buffer
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	<-w.release
	return w.buf.Write(p)
}

// A call never waits for the log: while the writer is stuck, lines queue
// up to the bound and the rest are dropped and counted; Close writes what
// is queued; begin events and events after Close are not logged.
func TestCallLog_QueueNeverBlocksAndCloseFlushes(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	cl, err := openCallLog(&dshconfig.Config{File: "dsh.json", CallLog: &dshconfig.CallLog{Path: "-", MaxArgumentBytes: 10}}, w, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	n := callLogQueue + 10
	for range n {
		cl.event(audit.Event{Kind: "end", Call: audit.Call{Tool: "t", Started: time.Unix(0, 0).UTC()}})
	}
	cl.event(audit.Event{Kind: "begin", Call: audit.Call{Tool: "not logged"}})
	close(w.release)
	if err := cl.Close(); err != nil {
		t.Fatal(err)
	}
	cl.event(audit.Event{Kind: "end", Call: audit.Call{Tool: "after close"}}) // ignored, no panic
	got := bytes.Count(w.buf.Bytes(), []byte("\n"))
	if got+cl.dropped != n || cl.dropped < n-callLogQueue-1 {
		t.Errorf("%d lines written + %d dropped, want %d in all, at least %d dropped", got, cl.dropped, n, n-callLogQueue-1)
	}
	if s := w.buf.String(); strings.Contains(s, "not logged") || strings.Contains(s, "after close") {
		t.Errorf("a begin event or a late one was logged")
	}
}

// A reload that changes "callLog" says a restart applies it; the running
// log keeps its file.
func TestCallLog_ReloadNamesChangesAsNeedingARestart(t *testing.T) {
	t.Setenv("ALICE_TOKEN", testToken)
	dir := t.TempDir()
	keys := map[string]any{
		"mcpServers":  map[string]any{"t": testServerEntry()},
		"http":        map[string]any{"tokens": map[string]any{"alice": map[string]any{"env": "ALICE_TOKEN"}}},
		"permissions": map[string]any{"allow": []string{"mcp__t__echo"}},
		"callLog":     map[string]any{"path": filepath.Join(dir, "a.jsonl")},
	}
	cfg := writeConfig(t, keys)
	s := startServe(t, cfg, "127.0.0.1:0", "--watch")
	keys["callLog"] = map[string]any{"path": filepath.Join(dir, "b.jsonl")}
	rewrite(t, cfg, keys)
	s.stderr.waitFor(t, regexp.MustCompile(`callLog: changed; restart dsh to apply`), s.exited)
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	callEcho(t, cs, "still a")
	if l := readCallLog(t, filepath.Join(dir, "a.jsonl"), 1); l[0]["tool"] != "mcp__t__echo" {
		t.Errorf("line %v", l[0])
	}
}
