package toolbash_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func boot(t *testing.T, cfg toolbash.Config) *tools.Registry {
	t.Helper()
	return toolstest.Boot(t, []toolstest.Plugin{{P: toolbash.Plugin, Config: cfg}})
}

func run(ctx context.Context, reg *tools.Registry, a toolbash.Args) tools.Result {
	raw, _ := json.Marshal(a)
	return reg.Execute(ctx, tools.Call{ID: "b1", Name: "bash", Arguments: raw})
}

func TestBashRunsAndRendersTerminalCard(t *testing.T) {
	dir := t.TempDir()
	reg := boot(t, toolbash.Config{Dir: dir})
	args := toolbash.Args{Command: "echo hi; echo err >&2; exit 3", Description: "say hi"}
	r := run(context.Background(), reg, args)
	if r.IsError {
		t.Fatalf("isError: %+v", r)
	}
	if got := r.Content[0].Text; !strings.Contains(got, "hi\n") || !strings.Contains(got, "err\n") || !strings.HasSuffix(got, "[exit code 3]") {
		t.Fatalf("text = %q", got)
	}
	raw, _ := json.Marshal(args)
	cv, ok := reg.PresentCall("bash", "", raw).(tools.TerminalCall)
	if !ok || cv.Title != args.Command || cv.Description != "say hi" || cv.Cwd != dir {
		t.Fatalf("call card = %#v", cv)
	}
	rv, ok := reg.PresentResult("bash", "", raw, tools.ResultData{Content: r.Content, Value: r.Value}).(tools.TerminalResult)
	if !ok || rv.ExitCode == nil || *rv.ExitCode != 3 || !strings.Contains(rv.Output, "hi") {
		t.Fatalf("result card = %#v", rv)
	}
}

func TestBashCapsOutput(t *testing.T) {
	reg := boot(t, toolbash.Config{MaxOutput: 100})
	r := run(context.Background(), reg, toolbash.Args{Command: "yes | head -c 10000", Description: "lots"})
	var m toolbash.Result
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Output) != 100 || !m.Truncated || !strings.Contains(r.Content[0].Text, "[output truncated]") {
		t.Fatalf("output %d bytes, truncated %v", len(m.Output), m.Truncated)
	}
}

// Cancellation kills the whole process group: a background grandchild
// that would write a file later never does.
func TestBashCancellationKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	reg := boot(t, toolbash.Config{Dir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	r := run(ctx, reg, toolbash.Args{Command: "(sleep 1; touch marker) & sleep 30", Description: "hang"})
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("cancellation took %v", took)
	}
	if !r.IsError || r.Error == nil || r.Error.Code != tools.CodeAborted {
		t.Fatalf("want ABORTED, got %+v", r)
	}
	time.Sleep(1500 * time.Millisecond) // the grandchild would have fired by now
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("a background child survived the cancellation")
	}
}

func TestBashTimeoutArgument(t *testing.T) {
	reg := boot(t, toolbash.Config{})
	r := run(context.Background(), reg, toolbash.Args{Command: "sleep 30", Description: "slow", TimeoutMs: 100})
	var m toolbash.Result
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	if m.Signal == "" || !strings.Contains(r.Content[0].Text, "killed by signal") {
		t.Fatalf("meta = %+v", m)
	}
}

func TestBashSchemaHasNoBudget(t *testing.T) {
	reg := boot(t, toolbash.Config{})
	for _, s := range reg.Schemas("") {
		if s.Name == "bash" && (strings.Contains(string(s.Parameters), "timeoutMs\"") || !strings.Contains(string(s.Parameters), `"command"`)) {
			t.Fatalf("schema = %s", s.Parameters)
		}
	}
}

// TestOUT11_BashDeclaresItsOutput: bash's result carries its typed value
// (exit code, output) under a declared output schema, rendered for the
// model as the output and the exit status; a result logged before, with
// the same fields in its meta, still presents.
func TestOUT11_BashDeclaresItsOutput(t *testing.T) {
	reg := boot(t, toolbash.Config{})
	r := run(context.Background(), reg, toolbash.Args{Command: "printf ok; exit 4", Description: "d"})
	if r.IsError || string(r.Value) != `{"exitCode":4,"output":"ok"}` || r.Content[0].Text != "ok\n[exit code 4]" {
		t.Fatalf("%+v value %s", r, r.Value)
	}
	tl, _ := reg.Get("bash", "")
	if s := string(tl.OutputSchema()); !strings.Contains(s, `"exitCode"`) || !strings.Contains(s, `"required":["exitCode","output"]`) {
		t.Fatalf("output schema %s", s)
	}
	raw, _ := json.Marshal(toolbash.Args{Command: "x", Description: "d"})
	rv, ok := reg.PresentResult("bash", "", raw, tools.ResultData{Meta: json.RawMessage(`{"exitCode":2,"output":"old"}`)}).(tools.TerminalResult)
	if !ok || *rv.ExitCode != 2 || rv.Output != "old" {
		t.Fatalf("legacy card %#v", rv)
	}
}
