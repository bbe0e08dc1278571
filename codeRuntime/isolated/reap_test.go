package isolated

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// busyWorker returns the worker running a program (there must be exactly one).
func busyWorker(t *testing.T, iso *Runtime) *worker {
	t.Helper()
	iso.mu.Lock()
	defer iso.mu.Unlock()
	if len(iso.busy) != 1 {
		t.Fatalf("%d busy workers, want 1", len(iso.busy))
	}
	for w := range iso.busy {
		return w
	}
	return nil
}

// TestIsolatedRunDoesNotWaitForTheReap: Run returns while its worker is still being reaped (the
// reap is held here), and until the reap is over that worker still counts against MaxWorkers: the
// next run waits for the slot and starts only once the first worker was reaped. Close waits for
// the reap.
func TestIsolatedRunDoesNotWaitForTheReap(t *testing.T) {
	cfg := isoConfig()
	cfg.MaxWorkers = 1
	iso := newIsolatedT(t, cfg)
	hold := make(chan struct{})
	iso.reapHook = func() { <-hold }
	released := false
	release := func() {
		if !released {
			released = true
			close(hold)
		}
	}
	defer release()

	var first *worker
	firstDone := make(chan error, 1)
	go func() {
		_, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.mark({})", Bindings: map[string]coderuntime.Binding{
			"mark": func(context.Context, json.RawMessage) (json.RawMessage, error) {
				first = busyWorker(t, iso)
				return nil, nil
			}}})
		firstDone <- err
	}()
	select {
	case err := <-firstDone:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run waited for its worker's reap")
	}
	if busyWorker(t, iso) != first {
		t.Fatal("the worker being reaped is no longer counted")
	}

	var reapedBefore bool
	second := make(chan error, 1)
	go func() {
		_, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.mark({})", Bindings: map[string]coderuntime.Binding{
			"mark": func(context.Context, json.RawMessage) (json.RawMessage, error) {
				select {
				case <-first.reaped:
					reapedBefore = true
				default:
				}
				return nil, nil
			}}})
		second <- err
	}()
	waitWaiting(iso, 1)
	release()
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	if !reapedBefore {
		t.Fatal("the second run started before the first worker was reaped")
	}
}

// TestIsolatedCloseWaitsForPendingReaps: a reap still pending when Close is called is over when
// Close returns (no process or goroutine outlives Close).
func TestIsolatedCloseWaitsForPendingReaps(t *testing.T) {
	iso, err := New(isoConfig())
	if err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	iso.reapHook = func() { <-hold }
	var w *worker
	if _, err := iso.Run(context.Background(), coderuntime.Program{Source: "await tools.mark({})", Bindings: map[string]coderuntime.Binding{
		"mark": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			w = busyWorker(t, iso)
			return nil, nil
		}}}); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { _ = iso.Close(); close(closed) }()
	select {
	case <-closed:
		t.Fatal("Close returned while a reap was pending")
	case <-time.After(10 * time.Millisecond):
	}
	close(hold)
	<-closed
	select {
	case <-w.reaped:
	default:
		t.Fatal("Close returned before the worker was reaped")
	}
}

// TestIsolatedWorkerRunsTheParentsTransform: a goja worker runs the program as the parent
// transformed it (cached by the source's hash), without transforming it again: with the cache
// holding another program's transform for a source, the worker runs that one.
func TestIsolatedWorkerRunsTheParentsTransform(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	res, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	if err != nil || string(res.Value) != "1" {
		t.Fatalf("%+v, %v", res, err)
	}
	if iso.wraps.Len() != 1 {
		t.Fatalf("%d programs transformed by the parent, want 1", iso.wraps.Len())
	}
	other, ok := iso.wraps.Wrap("return 2")
	if !ok {
		t.Fatal("no transform")
	}
	iso.wraps.Put("return 3", other)
	res, err = iso.Run(context.Background(), coderuntime.Program{Source: "return 3"})
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("%+v, %v: the worker did not run the parent's transform", res, err)
	}
}

// TestIsolatedWorkerPipesNonblocking: a worker's pipes from and to the parent are in non-blocking
// mode, so that its reads and writes park goroutines on the runtime's poller instead of blocking
// threads in system calls.
func TestIsolatedWorkerPipesNonblocking(t *testing.T) {
	if !isolationSupported {
		t.Skip("no isolation here")
	}
	iso := stubbed(t, "nonblock", isoConfig())
	res, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != "true" {
		t.Fatalf("worker pipes non-blocking: %s", res.Value)
	}
}

// TestIsolatedParentReadsBlocking: the parent reads a worker's pipe in blocking mode (a thread
// waits in the read itself, which the worker's message wakes, instead of the runtime's poller),
// while its writes to the worker stay non-blocking, so that a kill's Close still unblocks a writer.
func TestIsolatedParentReadsBlocking(t *testing.T) {
	if !isolationSupported {
		t.Skip("no isolation here")
	}
	iso := newIsolatedT(t, isoConfig())
	w, err := iso.start() // returns once the reader read the hello
	if err != nil {
		t.Fatal(err)
	}
	defer func() { w.kill(killClosed); w.release() }()
	if nb, err := fileNonblocking(w.out); err != nil || nb {
		t.Errorf("the parent's read end non-blocking: %v, %v", nb, err)
	}
	if nb, err := fileNonblocking(w.in); err != nil || !nb {
		t.Errorf("the parent's write end non-blocking: %v, %v", nb, err)
	}
}
