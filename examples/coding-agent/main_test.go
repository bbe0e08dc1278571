package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	if os.Getenv(runMainEnv) != "" {
		// A child process of TestAutoApproveTakesTheAnswerFromAnyStdin:
		// the example itself, with the command line's flags.
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

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

// yesSession is the embedded script played once with -approve=yes, shared
// by the tests that read it (playing it is the costly part).
var yesSession = func() func(t *testing.T) (string, []Event) {
	var (
		once sync.Once
		out  string
		evs  []Event
		ok   bool
	)
	return func(t *testing.T) (string, []Event) {
		t.Helper()
		once.Do(func() {
			out, evs = playSession(t, "yes", "") // read whole: its files may go with t
			ok = true
		})
		if !ok {
			t.Fatal("the shared yes session failed")
		}
		return out, evs
	}
}()

func TestTranscriptShowsEveryPolicy(t *testing.T) {
	t.Parallel()
	out, _ := playSession(t, "ask", "y\n")
	for _, want := range []string{
		"=== tools mode: native ===",
		"Read README.md [read]",
		"▶ p1 read (parallel)",             // a parallel turn: three reads...
		"▶ p4 bash (exclusive)",            // ...and a barrier
		"⏱ batch of 4 calls:",              // its timing
		"(the turn concluded: a tool",      // finish, called from a program
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
		"(model sees tools: run_code)",                 // code mode contributes only the transport
		"↳ c8:code:1 bash: ok",                         // sub-calls run the full pipeline...
		"↳ c8:code:3 read: error DENIED",               // ...guards included
		".env stays private: DENIED",                   // and the program catches the denial
		"main.go has 7 lines (73 bytes)",               // typed values: read's text, bash's exit code
		`{"listed":true,"mainBytes":73,"mainLines":7}`, // what it returned
		"error UNKNOWN_TOOL:",                          // direct calls are refused under code
		"error CODE_RUN_FAILED:",                       // a throwing program
		"console output before the failure:",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("transcript lacks %q", want)
		}
	}
	if strings.Contains(out, "never played") {
		t.Error("the turn after the concluding one was played")
	}
	if t.Failed() {
		t.Log(out)
	}
}

// TestParallelTurnTiming: in the turn with three reads and a bash, the
// bash (exclusive) starts only after every read ended, as the batch clock
// shows.
func TestParallelTurnTiming(t *testing.T) {
	t.Parallel()
	out, _ := yesSession(t)
	line := regexp.MustCompile(`(?m)^\s+(p\d)\s+(\w+)\s+(parallel|exclusive)\s+\+([\d.]+)ms → \+([\d.]+)ms$`)
	spans := map[string][2]float64{}
	for _, m := range line.FindAllStringSubmatch(out, -1) {
		from, _ := strconv.ParseFloat(m[4], 64)
		to, _ := strconv.ParseFloat(m[5], 64)
		spans[m[1]] = [2]float64{from, to}
	}
	if len(spans) != 4 {
		t.Fatalf("timing lines for %d calls, want 4:\n%s", len(spans), out)
	}
	for _, r := range []string{"p1", "p2", "p3"} {
		if spans["p4"][0] < spans[r][1] {
			t.Errorf("bash started at %.2fms, before %s ended at %.2fms", spans["p4"][0], r, spans[r][1])
		}
	}
}

// The ask answered automatically with -approve=no: only the asking call
// (rmScript's) is played, the rest of the session is the same for every
// answer.
func TestRejectedAskDeniesTheCall(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	ws := t.TempDir()
	err := Run(context.Background(), Options{
		Script: []byte(rmScript), Approve: "no", Out: &out,
		LogPath: filepath.Join(t.TempDir(), "session.jsonl"), Workspace: ws,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "-> rejected") || !strings.Contains(out.String(), "error APPROVAL_REJECTED:") {
		t.Fatalf("transcript:\n%s", out.String())
	}
	if _, err := os.Stat(filepath.Join(ws, "build", "out")); err != nil {
		t.Fatalf("the rejected command ran: %v", err)
	}
}

func TestSessionLog(t *testing.T) {
	t.Parallel()
	_, evs := yesSession(t)
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
			if parent, _, _ := strings.Cut(e.ID, ":"); e.Parent != parent {
				t.Fatalf("code-dispatch %s has parent %q", e.ID, e.Parent)
			}
		}
		if e.Type == "tool/result" && e.ID == "c8" && len(dispatched) != 3 {
			t.Fatalf("run_code's result came after %d of its 3 dispatches", len(dispatched))
		}
	}
	if strings.Join(dispatched, ",") != "c8:code:1,c8:code:2,c8:code:3,c11:code:1" {
		t.Fatalf("code-dispatch ids = %v", dispatched)
	}
	// The parallel turn: the model's four calls, then their four results,
	// in model order.
	var turn []string
	for _, e := range evs {
		if strings.HasPrefix(e.ID, "p") && (e.Type == "tool/call" || e.Type == "tool/result") {
			turn = append(turn, e.Type+" "+e.ID)
		}
	}
	if want := "tool/call p1,tool/call p2,tool/call p3,tool/call p4,tool/result p1,tool/result p2,tool/result p3,tool/result p4"; strings.Join(turn, ",") != want {
		t.Errorf("parallel turn events = %v", turn)
	}
	if results["c12"] {
		t.Error("the turn after the concluding one was played")
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
