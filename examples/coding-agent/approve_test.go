package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rmScript is a one-turn model whose only call deletes the workspace's
// build directory: the policy asks before it runs.
const rmScript = `{"agent":"agent-1","turns":[{"say":"Cleaning up.","calls":[
	{"id":"c1","name":"bash","arguments":{"command":"rm -r build","description":"Remove the build directory"}}]}]}`

// runMainEnv makes the test binary run the example's main (see TestMain):
// the flags come from the command line, stdin is the child's.
const runMainEnv = "DSH_CODING_AGENT_RUN_MAIN"

// runMain runs the example's own main in a child process with args, stdin
// and a new workspace, and returns its output and whether the build
// directory survived.
func runMain(t *testing.T, stdin *os.File, args ...string) (out string, buildKept bool) {
	t.Helper()
	ws := t.TempDir()
	script := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(script, []byte(rmScript), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-script", script, "-workspace", ws, "-log", filepath.Join(t.TempDir(), "log.jsonl")}, args...)...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdin = stdin
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("coding-agent: %v\n%s", err, b)
	}
	_, err = os.Stat(filepath.Join(ws, "build", "out"))
	return string(b), err == nil
}

// pipeOf returns the read end of a pipe holding s, then closed.
func pipeOf(t *testing.T, s string) *os.File {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	if _, err := w.WriteString(s); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return r
}

// Defect: -approve=auto (the default) answered every ask "yes" unless
// stdin was a character device, so a piped "n" was ignored and the
// destructive command ran (and </dev/null, a character device, counted as
// a terminal). A piped answer is an answer; no answer is a denial.
func TestAutoApproveTakesTheAnswerFromAnyStdin(t *testing.T) {
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name      string
		stdin     func(t *testing.T) *os.File
		args      []string
		want      string
		buildKept bool
	}{
		{"piped n", func(t *testing.T) *os.File { return pipeOf(t, "n\n") }, []string{"-approve=auto"}, "error APPROVAL_REJECTED:", true},
		{"piped y", func(t *testing.T) *os.File { return pipeOf(t, "y\n") }, nil, "[exit 0]", false},
		{"empty pipe", func(t *testing.T) *os.File { return pipeOf(t, "") }, nil, "error APPROVAL_UNAVAILABLE:", true},
		{"/dev/null", func(*testing.T) *os.File { return devNull }, nil, "error APPROVAL_UNAVAILABLE:", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, kept := runMain(t, tc.stdin(t), tc.args...)
			if !strings.Contains(out, tc.want) || kept != tc.buildKept {
				t.Fatalf("build directory kept: %v, want %v; output lacks %q?\n%s", kept, tc.buildKept, tc.want, out)
			}
		})
	}
}

// Defect: the default session log was written inside the temporary
// workspace, which is removed at exit, so it was lost. It is now a file
// outside the workspace, kept, and its path is printed.
func TestDefaultSessionLogOutlivesTheWorkspace(t *testing.T) {
	var out bytes.Buffer
	if err := Run(context.Background(), Options{Script: []byte(rmScript), Approve: "no", Out: &out}); err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`(?m)^workspace: (.+)\nsession log: (.+)$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no workspace and session log lines:\n%s", out.String())
	}
	ws, logPath := m[1], m[2]
	t.Cleanup(func() { os.Remove(logPath) })
	if !strings.Contains(out.String(), "session log (kept): "+logPath+"\n") {
		t.Errorf("the log's path is not printed at the end:\n%s", out.String())
	}
	if _, err := os.Stat(ws); !os.IsNotExist(err) {
		t.Errorf("temporary workspace %s not removed: %v", ws, err)
	}
	if rel, err := filepath.Rel(ws, logPath); err == nil && !strings.HasPrefix(rel, "..") {
		t.Errorf("session log %s is inside the workspace %s", logPath, ws)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatalf("session log: %v", err)
	}
	if !bytes.Contains(b, []byte(`"type":"tool/result"`)) {
		t.Errorf("session log lacks the call's result:\n%s", b)
	}
}
