package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// playSession plays the embedded script with the given approval mode and
// returns the transcript and the session log.
func playSession(t *testing.T, approve, stdin string) (string, []Event) {
	t.Helper()
	dir := t.TempDir()
	logPath := filepath.Join(t.TempDir(), "session.jsonl")
	var out bytes.Buffer
	err := Run(context.Background(), Options{
		Script: defaultScript, Approve: approve, Stdin: strings.NewReader(stdin),
		Out: &out, LogPath: logPath, Workspace: dir,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		evs = append(evs, e)
	}
	return out.String(), evs
}

func TestTranscriptShowsEveryPolicy(t *testing.T) {
	out, _ := playSession(t, "ask", "y\n")
	for _, want := range []string{
		"=== tools mode: native ===",
		"Read README.md [read]",
		"+\tfmt.Println(\"hello, world\")", // the edit's applied hunk
		"$ ls && grep -n Println main.go",  // terminal card
		"[exit 0]",
		"error DENIED:",                        // the guard
		"reason: the command deletes files",    // the ask, on the terminal
		"Allow once? [y/N]",                    // answered by the scripted stdin
		"error TOOL_TIMEOUT:",                  // the timeout policy
		"error BLOCKED:",                       // the post-execute block
		"context for the model: Policy: never", // its additional context
		"=== tools mode: code ===",
		"(model sees tools: run_code)",   // code mode contributes only the transport
		"↳ c8:code:1 bash: ok",           // sub-calls run the full pipeline...
		"↳ c8:code:3 read: error DENIED", // ...guards included
		".env stays private: DENIED",     // and the program catches the denial
		`"mainLines":7}`,                 // what it returned
		"error UNKNOWN_TOOL:",            // direct calls are refused under code
		"error CODE_RUN_FAILED:",         // a throwing program
		"console output before the failure:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(out)
	}
}

func TestRejectedAskDeniesTheCall(t *testing.T) {
	out, _ := playSession(t, "no", "")
	if !strings.Contains(out, "-> rejected") || !strings.Contains(out, "error APPROVAL_REJECTED:") {
		t.Fatalf("transcript:\n%s", out)
	}
}

func TestSessionLog(t *testing.T) {
	_, evs := playSession(t, "yes", "")
	count := map[string]int{}
	results := map[string]bool{}
	for i, e := range evs {
		count[e.Type]++
		if e.Seq != i+1 {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		if e.Type == "tool/result" {
			if results[e.ID] {
				t.Fatalf("two results for %s", e.ID)
			}
			results[e.ID] = true
		}
	}
	if count["tool/call"] == 0 || count["tool/call"] != count["tool/result"] {
		t.Fatalf("calls %d, results %d", count["tool/call"], count["tool/result"])
	}
	// Code Mode sub-calls are logged inside the open turn: before the
	// run_code call's own result.
	var dispatched []string
	for _, e := range evs {
		if e.Type == "tool/code-dispatch" {
			dispatched = append(dispatched, e.ID)
			if e.Parent != "c8" {
				t.Fatalf("code-dispatch %s has parent %q", e.ID, e.Parent)
			}
		}
		if e.Type == "tool/result" && e.ID == "c8" && len(dispatched) != 3 {
			t.Fatalf("run_code's result came after %d of its 3 dispatches", len(dispatched))
		}
	}
	if strings.Join(dispatched, ",") != "c8:code:1,c8:code:2,c8:code:3" {
		t.Fatalf("code-dispatch ids = %v", dispatched)
	}
	if count["context/message"] != 1 {
		t.Fatalf("context messages = %d, want 1", count["context/message"])
	}
	// Context messages come after every tool result of their step.
	for i, e := range evs {
		if e.Type == "context/message" && (i == 0 || evs[i-1].Type != "tool/result") {
			t.Fatalf("context message at %d does not follow the step's results", i)
		}
	}
}
