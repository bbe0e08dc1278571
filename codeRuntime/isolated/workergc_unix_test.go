//go:build unix

package isolated

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"golang.org/x/sys/unix"
)

// stubGCPercent is the GOGC the stub mode "gc-percent" sets before serveWorker's setup: a value
// neither serveWorker nor the runtime sets, so the report shows whether serveWorker set GOGC.
const stubGCPercent = 77

// reportGCPercent, run by the stub mode "gc-percent" before the real worker's setup, sets GOGC to
// stubGCPercent and makes a FIFO named by the worker's pid in dir; once the parent opens it for
// reading (from a binding, when serveWorker's setup is long done), it writes
// "<GOGC> <live heap>" to it. Every worker makes its own FIFO: the parent may start a spare worker
// which must not answer for the one running the program.
func reportGCPercent(dir string) {
	debug.SetGCPercent(stubGCPercent)
	path := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if err := unix.Mkfifo(path, 0o600); err != nil {
		return
	}
	go func() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0) // returns once a reader opened it
		if err != nil {
			return
		}
		percent := debug.SetGCPercent(-1) // returns the setting before
		debug.SetGCPercent(percent)
		fmt.Fprintf(f, "%d %d", percent, liveHeap())
		_ = f.Close()
	}()
}

// TestWorkerGCPercentInWorker: serveWorker sets a real worker process's GOGC with tuneWorkerGC,
// and leaves it alone with the benchmarks' switch workerDefaultGCEnv or an operator's GOGC. The worker reports its GOGC
// while it runs the program, from a binding (see reportGCPercent). Tuned, that is workerGCPercent
// or, once a collection found workerGCSmallHeap live, 100: a worker of this package's test binary
// mostly has that much (4.3-5.3 MB) at its first collection after tuneWorkerGC.
func TestWorkerGCPercentInWorker(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want []int
	}{
		{"tuned", nil, []int{workerGCPercent, 100}},
		{"default-gc-switch", []string{workerDefaultGCEnv + "=1"}, []int{stubGCPercent}},
		// An operator's GOGC in the environment is left alone (the stub's setting stands in for it).
		{"operator-gogc", []string{"GOGC=33"}, []int{stubGCPercent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			iso := newIsolatedT(t, isoConfig())
			iso.env = append(append(iso.env, stubEnv+"=gc-percent", gcReportEnv+"="+dir), c.env...)
			report := func(context.Context, json.RawMessage) (json.RawMessage, error) {
				f, err := os.Open(filepath.Join(dir, strconv.Itoa(busyPid(iso))))
				if err != nil {
					return nil, err
				}
				defer f.Close()
				b, err := io.ReadAll(f)
				if err != nil {
					return nil, err
				}
				return json.Marshal(string(b))
			}
			res, err := iso.Run(context.Background(), coderuntime.Program{Source: "return await tools.report()",
				Bindings: map[string]coderuntime.Binding{"report": report}})
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := json.Unmarshal(res.Value, &got); err != nil {
				t.Fatalf("value %s: %v", res.Value, err)
			}
			var percent int
			var live uint64
			if _, err := fmt.Sscanf(got, "%d %d", &percent, &live); err != nil {
				t.Fatalf("report %q: %v", got, err)
			}
			if !slices.Contains(c.want, percent) {
				t.Fatalf("the worker's GOGC is %d (live heap %d bytes), want one of %v", percent, live, c.want)
			}
			t.Logf("GOGC %d, live heap %d bytes", percent, live)
		})
	}
}
