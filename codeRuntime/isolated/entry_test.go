package isolated

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// buildTestdata builds ./testdata/<name> into a temporary directory and returns the binary.
func buildTestdata(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a binary")
	}
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", bin, "./testdata/"+name)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/%s: %v\n%s", name, err, out)
	}
	return bin
}

// TestWorkerEntryIsExplicit: a binary that links this package but does not call ServeIfWorker
// never turns into a worker, whatever its environment says: with the worker variable set, its
// main runs. (With the entry in a package init, such a binary served as a worker and exited with
// status 2 before main.)
func TestWorkerEntryIsExplicit(t *testing.T) {
	bin := buildTestdata(t, "noentry")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), workerEnv+"="+strconv.Itoa(protocolVersion), workerConfigEnv+"={}")
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "main ran" {
		t.Fatalf("binary without the entry, worker variable set: %v, output %q; want main to run", err, out)
	}
}

// TestWorkerEntryServes: a binary whose main calls ServeIfWorker first serves as the worker of an
// isolated runtime, and without the variable its main runs.
func TestWorkerEntryServes(t *testing.T) {
	if !isolationSupported {
		t.Skip("no process isolation on " + runtime.GOOS)
	}
	bin := buildTestdata(t, "withentry")
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "main ran" {
		t.Fatalf("binary with the entry, no worker variable: %v, output %q; want main to run", err, out)
	}
	iso, err := New(coderuntime.Config{PoolSize: 1, Timeout: ample, CPUBudget: ample})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iso.Close() })
	iso.exe = bin
	res, err := iso.Run(context.Background(), coderuntime.Program{Source: "console.log('hi')\nreturn 6 * 7"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != "42" || len(res.Logs) != 1 || res.Logs[0].Text != "hi" {
		t.Fatalf("result = %s %+v; want 42 and the log", res.Value, res.Logs)
	}
}
