package isolated

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// ErrMemoryLimit is the cause of a limit failure when a worker process's resident memory exceeded
// Config.MaxMemoryBytes, or the worker ran out of memory.
var ErrMemoryLimit = errors.New("coderuntime: worker memory limit exceeded")

// ErrWorkerCrashed is the cause of a crash failure: the worker process exited or was killed
// before reporting the run's outcome, or broke the worker protocol.
var ErrWorkerCrashed = errors.New("coderuntime: worker process crashed")

// ErrClosed is the cause of the abort failure of a run on a closed [Runtime] runtime, or of a run
// in progress when it was closed.
var ErrClosed = errors.New("coderuntime: runtime closed")

// ErrNoWorkerEntry is returned by [New] in a process whose program did not call [ServeIfWorker]:
// its binary would not serve as a worker.
var ErrNoWorkerEntry = errors.New("coderuntime: isolated workers need isolated.ServeIfWorker() called first thing in main (or TestMain)")

// ErrIsolationUnsupported is returned by [New] on a platform without process isolation.
var ErrIsolationUnsupported = errors.New("coderuntime: process isolation is not supported on " + runtime.GOOS)

// Runtime is a [coderuntime.Runtime] that runs each program in a worker process of its own, so that no
// program can crash the host, exhaust its memory, or hold Run past the budgets: the parent (the
// host process) kills the worker when its resident memory exceeds Config.MaxMemoryBytes, its CPU
// time or the wall clock exceed the budgets by a margin, or it breaks the protocol, and the run
// fails with kind "limit", "timeout", "output-limit" or "crash". The engine in the worker enforces
// every in-process limit of Config too, so most failures are reported by the engine itself, with
// the logs captured so far; a killed worker's logs are lost.
//
// A worker is the host binary itself, started again (os.Executable, /proc/self/exe on Linux) with
// an environment variable that makes this package serve one run on inherited pipes and exit (see
// the package doc, "Worker processes"). Each worker runs exactly one program. Isolated keeps
// Config.PoolSize workers started ahead (from the first Run on) so that a run does not wait for a
// process to start; a worker that died while idle is replaced.
//
// Bindings run in the host process exactly as with an in-process runtime: the same [coderuntime.Binding]
// contract, [coderuntime.CallSeq] numbering in submission order, at most MaxConcurrentCalls in flight, calls
// queued at settlement delivered afterwards with the cancelled context, and Run returns only after
// every binding call it started returned. A binding argument larger than Config.MaxMessageBytes
// rejects that call in the program (code "MESSAGE_TOO_LARGE") without reaching the host.
//
// Safe for concurrent use. Close kills every worker and waits for the goroutines it started.
type Runtime struct {
	cfg       coderuntime.Config
	exe       string
	env       []string
	killGrace time.Duration // how long a cancelled run may take to report before its worker is killed
	startWait time.Duration // how long a starting worker may take to say hello
	handAfter time.Duration // how long the reader runs a call itself before handing reading over (handoffAfter)

	// slots holds a token per run in progress: at most runSlots(cfg) (MaxWorkers and
	// MaxTotalMemoryBytes) run at once. done is closed by Close, waking the runs waiting for one.
	slots chan struct{}
	done  chan struct{}

	mu       sync.Mutex
	closed   bool
	waiting  int // runs waiting for a slot (for tests)
	idle     []*worker
	starting int
	busy     map[*worker]struct{}
	changed  chan struct{}  // closed and replaced when idle or busy changes (for tests)
	wg       sync.WaitGroup // every goroutine started for a worker, to start one or to reap one

	wraps jsengine.WrapCache // programs transformed for the workers (goja's), by source hash

	// Set only by this package's tests and benchmarks, before the first Run: waitReap makes Run
	// wait for its worker's reap (the behaviour before the background reap, for comparison);
	// reapHook runs first in every reap.
	waitReap    bool
	reapHook    func()
	noTransform bool // the workers transform the programs (the behaviour before)
}

// transformAhead reports whether the parent transforms programs for its workers: for goja, whose
// worker takes a program transformed ahead (quickjs transforms in the worker).
func (iso *Runtime) transformAhead() bool {
	return !iso.noTransform && (iso.cfg.Engine == "" || iso.cfg.Engine == coderuntime.EngineGoja)
}

var _ coderuntime.Runtime = (*Runtime)(nil)

// New returns an isolated runtime (the safe default) with cfg's engine and limits (zero fields take their
// defaults), or the error cfg.Validate reports, or [ErrIsolationUnsupported]. It starts no process
// until the first Run.
func New(cfg coderuntime.Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !isolationSupported {
		return nil, ErrIsolationUnsupported
	}
	if !entered.Load() {
		return nil, ErrNoWorkerEntry
	}
	cfg = cfg.WithDefaults()
	cfg.Isolation = coderuntime.IsolationProcess
	cfg.MaxHeapBytes = workerHeapBytes(cfg)
	exe, err := workerExecutable()
	if err != nil {
		return nil, fmt.Errorf("coderuntime: the worker executable: %w", err)
	}
	wcfg, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, workerEnv+"=") || strings.HasPrefix(kv, workerConfigEnv+"=") || strings.HasPrefix(kv, "GOMEMLIMIT=") || strings.HasPrefix(kv, workerLegacyIOEnv+"=") || strings.HasPrefix(kv, workerBackgroundReadsEnv+"=") || strings.HasPrefix(kv, workerDefaultGCEnv+"=")
	})
	env = append(env, fmt.Sprintf("%s=%d", workerEnv, protocolVersion), workerConfigEnv+"="+string(wcfg))
	return &Runtime{cfg: cfg, exe: exe, env: env, killGrace: time.Second, startWait: time.Minute, handAfter: handoffAfter,
		slots: make(chan struct{}, runSlots(cfg)), done: make(chan struct{}),
		busy: map[*worker]struct{}{}, changed: make(chan struct{})}, nil
}

// runSlots is how many runs an Isolated with cfg (defaults filled in) lets run at once: MaxWorkers,
// and no more than MaxTotalMemoryBytes holds at MaxMemoryBytes each.
func runSlots(cfg coderuntime.Config) int {
	n := cfg.MaxWorkers
	if byMemory := cfg.MaxTotalMemoryBytes / cfg.MaxMemoryBytes; byMemory < int64(n) {
		n = int(byMemory)
	}
	return max(n, 1)
}

// workerExecutable is the binary workers run: the running one.
func workerExecutable() (string, error) {
	if runtime.GOOS == "linux" {
		// The running binary even when its file was replaced or removed since.
		if _, err := os.Stat("/proc/self/exe"); err == nil {
			return "/proc/self/exe", nil
		}
	}
	return os.Executable()
}

// Config returns the effective configuration (defaults filled in).
func (iso *Runtime) Config() coderuntime.Config { return iso.cfg }

// Language returns "typescript".
func (iso *Runtime) Language() string { return "typescript" }

// Close kills every worker, idle or running a program (that run fails with kind "abort", cause
// [ErrClosed]), and waits until every process is reaped and every goroutine Isolated started has
// returned. Runs after Close fail the same way. Close is idempotent and always returns nil.
func (iso *Runtime) Close() error {
	iso.mu.Lock()
	if !iso.closed {
		close(iso.done)
	}
	iso.closed = true
	idle := iso.idle
	iso.idle = nil
	for w := range iso.busy {
		w.kill(killClosed)
	}
	iso.mu.Unlock()
	for _, w := range idle {
		w.kill(killClosed)
		w.release()
	}
	iso.wg.Wait()
	return nil
}

// get returns a started worker: an idle one, or one started now (then the pool is filled in the
// background, which is how it starts on the first run).
func (iso *Runtime) get() (*worker, error) {
	for {
		iso.mu.Lock()
		if iso.closed {
			iso.mu.Unlock()
			return nil, ErrClosed
		}
		if n := len(iso.idle); n > 0 {
			w := iso.idle[0]
			iso.idle = slices.Delete(iso.idle, 0, 1)
			if w.isDead() {
				iso.mu.Unlock()
				w.kill(killClosed)
				w.release()
				continue
			}
			iso.busy[w] = struct{}{}
			iso.changedLocked()
			iso.mu.Unlock()
			return w, nil
		}
		iso.fillLocked()
		iso.mu.Unlock()
		w, err := iso.start()
		if err != nil {
			return nil, err
		}
		iso.mu.Lock()
		if iso.closed {
			iso.mu.Unlock()
			w.kill(killClosed)
			w.release()
			return nil, ErrClosed
		}
		iso.busy[w] = struct{}{}
		iso.changedLocked()
		iso.mu.Unlock()
		return w, nil
	}
}

// fillLocked starts workers in the background until PoolSize are idle or starting.
func (iso *Runtime) fillLocked() {
	for !iso.closed && len(iso.idle)+iso.starting < iso.cfg.PoolSize {
		iso.starting++
		iso.wg.Add(1)
		go func() {
			defer iso.wg.Done()
			w, err := iso.start()
			iso.mu.Lock()
			iso.starting--
			if err == nil && !iso.closed {
				iso.idle = append(iso.idle, w)
				iso.changedLocked()
				w = nil
			}
			iso.mu.Unlock()
			if w != nil {
				w.kill(killClosed)
				w.release()
			}
		}()
	}
}

// changedLocked wakes whoever waits for a change of idle or busy.
func (iso *Runtime) changedLocked() {
	close(iso.changed)
	iso.changed = make(chan struct{})
}

// retire ends a worker's run: it is killed now (one run per worker), and reaped in the
// background, so that Run does not wait for the process to exit (a Go process's exit takes
// milliseconds, often longer than the run). Until it is reaped, the worker stays busy and its run
// slot stays taken: MaxWorkers and MaxTotalMemoryBytes count every process not yet reaped. Close
// waits for the reap.
func (iso *Runtime) retire(w *worker) {
	w.kill(killDone)
	iso.mu.Lock()
	background := !iso.closed && !iso.waitReap
	if background {
		// Under mu and before Close (which sets closed under mu before it waits): the Add
		// happens before Close's Wait.
		iso.wg.Add(1)
	}
	iso.mu.Unlock()
	if !background {
		iso.reap(w)
		return
	}
	go func() {
		defer iso.wg.Done()
		iso.reap(w)
	}()
}

// reap waits until the killed worker w is reaped and its resources released, then frees its run
// slot. The pool is topped up now, after the run, so that starting a process (which costs far
// more CPU than a short run) does not compete with the run it replaces.
func (iso *Runtime) reap(w *worker) {
	if iso.reapHook != nil {
		iso.reapHook()
	}
	w.release()
	<-w.reaped
	iso.mu.Lock()
	delete(iso.busy, w)
	iso.fillLocked()
	iso.changedLocked()
	iso.mu.Unlock()
	<-iso.slots
}

// Run runs p in a worker process; see [coderuntime.Runtime] and [Runtime].
func (iso *Runtime) Run(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
	if err := jsengine.ValidateProgram(p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, jsengine.ContextFailure(err, nil)
	}
	// The wait for a run slot counts in the run's budget: the run gets what is left of Timeout.
	waitCtx, cancelWait := context.WithTimeout(ctx, iso.cfg.Timeout)
	waited, f := iso.acquire(waitCtx)
	cancelWait()
	if f != nil {
		return nil, f
	}
	if waited > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, iso.cfg.Timeout-waited)
		defer cancel()
	}
	w, err := iso.get()
	if err != nil {
		<-iso.slots
		if safeerr.Is(err, ErrClosed) {
			return nil, &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "the code runtime was closed", Cause: ErrClosed}
		}
		return nil, &coderuntime.Failure{Kind: coderuntime.KindCrash, Message: "the worker process did not start: " + err.Error(), Cause: errors.Join(ErrWorkerCrashed, err)}
	}
	// The slot is freed once the worker is reaped (retire).
	defer iso.retire(w)
	r := newIsoRun(iso, w, p)
	return r.run(ctx)
}

// acquire takes a run slot, waiting while MaxWorkers runs (or as many as MaxTotalMemoryBytes
// holds) are in progress, and returns how long it waited (0 when a slot was free at once), or the
// Failure of a run whose ctx ended, or whose runtime was closed, before one was free.
func (iso *Runtime) acquire(ctx context.Context) (waited time.Duration, f *coderuntime.Failure) {
	select {
	case iso.slots <- struct{}{}:
		return 0, nil
	default:
	}
	start := time.Now()
	iso.mu.Lock()
	iso.waiting++
	iso.changedLocked()
	iso.mu.Unlock()
	defer func() {
		iso.mu.Lock()
		iso.waiting--
		iso.changedLocked()
		iso.mu.Unlock()
	}()
	select {
	case iso.slots <- struct{}{}:
		return max(time.Since(start), time.Nanosecond), nil
	case <-iso.done:
		return 0, &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "the code runtime was closed", Cause: ErrClosed}
	case <-ctx.Done():
		f := jsengine.ContextFailure(ctx.Err(), nil)
		f.Message = fmt.Sprintf("%s before the program started: it waited for a worker process (at most %d run at once)", f.Message, cap(iso.slots))
		return 0, f
	}
}

// capBuffer keeps the first max bytes written to it and discards the rest.
type capBuffer struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
	cut bool
}

func (c *capBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
	}
	if c.b.Len() >= c.max && len(p) > 0 {
		c.cut = true
	}
	return len(p), nil
}

func (c *capBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}

// stderrCap bounds the worker output kept for crash messages.
const stderrCap = 16 << 10

var _ io.Writer = (*capBuffer)(nil)
