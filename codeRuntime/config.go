package coderuntime

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Config sets the engine, the isolation and the limits of a runtime (see isolated.NewFromConfig; the in-process
// constructors read only the limits). The zero value of a field means its default.
type Config struct {
	// Engine names the JavaScript engine: "goja" (the default) or "quickjs". The engine runs in the host
	// process or in a worker process, as Isolation says.
	Engine string
	// Isolation is where programs run: "process" runs each program in a worker process the host
	// can kill (the default of isolated.NewFromConfig and isolated.Plugin, where the platform supports it; see
	// isolated.Runtime), "none" runs it in the host process. The in-process constructors ignore it.
	Isolation string
	// PoolSize is how many warm worker processes an isolated runtime (isolated.Runtime) keeps ready. Default 2.
	PoolSize int
	// MaxMemoryBytes caps the resident memory of a worker process: the parent samples it every
	// HeapCheckInterval and kills the worker above the cap (kind "limit", cause ErrMemoryLimit),
	// and the worker runs with a Go memory limit below it. Default 512 MiB; at least 64 MiB.
	MaxMemoryBytes int64
	// MaxWorkers caps the worker processes of an isolated runtime (isolated.Runtime) running a program at once (the
	// PoolSize idle ones come on top). A run beyond the cap waits for a worker to finish; the wait
	// counts in its Timeout, and a run whose Timeout passes while it waits fails with kind
	// "timeout" without having started. Default 4.
	MaxWorkers int
	// MaxTotalMemoryBytes caps the memory of the worker processes running a program at once: as
	// each may grow to MaxMemoryBytes, at most MaxTotalMemoryBytes / MaxMemoryBytes run at once
	// (and at most MaxWorkers); further runs wait as above. Default 2 GiB; at least
	// MaxMemoryBytes.
	MaxTotalMemoryBytes int64
	// MaxMessageBytes caps one message a worker process sends to the host: a binding call's
	// arguments (a larger argument rejects that call in the program) or the run's outcome. A worker
	// that sends a larger message is killed (kind "output-limit", cause ErrOutputLimit). Default
	// 16 MiB.
	MaxMessageBytes int
	// Timeout is the wall-clock budget of one run, including time spent waiting on bindings.
	// Default 30s. Expiry fails the run with kind "timeout" (cause context.DeadlineExceeded).
	Timeout time.Duration
	// CPUBudget is the busy-CPU budget: time actually spent executing JavaScript, excluding time
	// waiting on bindings. Default 10s. Expiry fails the run with kind "timeout" (cause ErrCPUBudget).
	CPUBudget time.Duration
	// MaxCallStackSize is the maximum JavaScript call depth (goja SetMaxCallStackSize). Default
	// 1024. Exceeding it fails the run with kind "limit" (cause ErrStackDepth).
	MaxCallStackSize int
	// MaxLogBytes caps the captured console output. Default 64 KiB. Exceeding it fails the run
	// with kind "output-limit"; the logs up to the cap are kept.
	MaxLogBytes int
	// MaxResultBytes caps the JSON of the returned value. Default 1 MiB.
	MaxResultBytes int
	// MaxStringLength caps, in UTF-16 code units, the results of the string amplifiers
	// (String.prototype.repeat, padStart, padEnd, concat, Array.prototype.join), counting all of a
	// call's arguments together, on every engine. Default 32 Mi.
	MaxStringLength int
	// MaxHeapBytes is the process-heap ceiling the watchdog enforces while a run is active (goja;
	// QuickJS caps its VM's memory instead). Default 1 GiB; negative disables the watchdog.
	// Exceeding it fails the run with kind "limit" (cause ErrHeapLimit). Garbage does not count:
	// a sample over the ceiling makes the watchdog collect and judge by the live heap (at most one
	// forced collection per HeapCheckInterval). In process it is process-wide, not per run: see the
	// package doc. A worker process applies at most
	// half of MaxMemoryBytes, and an isolated runtime's Config reports the value it applies.
	MaxHeapBytes int64
	// HeapCheckInterval is how often the watchdog samples the heap, and how often the parent of a
	// worker process samples its resident memory and CPU time. Default 5ms.
	HeapCheckInterval time.Duration
	// MaxConcurrentCalls caps the binding calls in flight at once; further calls queue in
	// submission order. Default 16.
	MaxConcurrentCalls int
	// MaxPendingCalls caps binding calls in flight plus queued; a call beyond it is rejected with a
	// RangeError (the run continues). Default 10000.
	MaxPendingCalls int
}

// The defaults of the Config fields.
const (
	defaultTimeout            = 30 * time.Second
	defaultCPUBudget          = 10 * time.Second
	defaultMaxCallStackSize   = 1024
	defaultMaxLogBytes        = 64 << 10
	defaultMaxResultBytes     = 1 << 20
	defaultMaxStringLength    = 32 << 20
	defaultMaxHeapBytes       = int64(1 << 30)
	defaultHeapCheckInterval  = 5 * time.Millisecond
	defaultMaxConcurrentCalls = 16
	defaultMaxPendingCalls    = 10000
	defaultEngine             = EngineGoja
	defaultPoolSize           = 2
	defaultMaxMemoryBytes     = int64(512 << 20)
	minMaxMemoryBytes         = int64(64 << 20)
	defaultMaxMessageBytes    = 16 << 20
	defaultMaxWorkers         = 4
	defaultMaxTotalMemory     = int64(2 << 30)
)

// The values of Config.Engine and Config.Isolation.
const (
	// EngineGoja is the goja engine (goja.Runtime).
	EngineGoja = "goja"
	// EngineQuickJS is the QuickJS engine (quickjs.Runtime).
	EngineQuickJS = "quickjs"
	// IsolationProcess runs each program in a worker process (isolated.Runtime).
	IsolationProcess = "process"
	// IsolationNone runs each program in the host process.
	IsolationNone = "none"
)

// engines lists the accepted values of Config.Engine.
var engines = []string{EngineGoja, EngineQuickJS}

// ErrInvalidConfig is wrapped by the error Validate returns.
var ErrInvalidConfig = errors.New("coderuntime: invalid config")

// Validate reports a negative field (other than MaxHeapBytes, where negative disables), an
// unknown Engine or Isolation, a MaxMemoryBytes below 64 MiB, and a MaxTotalMemoryBytes below
// MaxMemoryBytes.
func (c Config) Validate() error {
	var errs []error
	if c.Engine != "" && !slices.Contains(engines, c.Engine) {
		errs = append(errs, fmt.Errorf("%w: Engine %q is not one of %s", ErrInvalidConfig, c.Engine, strings.Join(engines, ", ")))
	}
	if c.Isolation != "" && c.Isolation != IsolationProcess && c.Isolation != IsolationNone {
		errs = append(errs, fmt.Errorf("%w: Isolation %q is not %q or %q", ErrInvalidConfig, c.Isolation, IsolationProcess, IsolationNone))
	}
	if c.MaxMemoryBytes > 0 && c.MaxMemoryBytes < minMaxMemoryBytes {
		errs = append(errs, fmt.Errorf("%w: MaxMemoryBytes must be at least %d (got %d)", ErrInvalidConfig, minMaxMemoryBytes, c.MaxMemoryBytes))
	}
	neg := func(name string, v int64) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("%w: %s must not be negative (got %d)", ErrInvalidConfig, name, v))
		}
	}
	neg("Timeout", int64(c.Timeout))
	neg("CPUBudget", int64(c.CPUBudget))
	neg("MaxCallStackSize", int64(c.MaxCallStackSize))
	neg("MaxLogBytes", int64(c.MaxLogBytes))
	neg("MaxResultBytes", int64(c.MaxResultBytes))
	neg("MaxStringLength", int64(c.MaxStringLength))
	neg("HeapCheckInterval", int64(c.HeapCheckInterval))
	neg("MaxConcurrentCalls", int64(c.MaxConcurrentCalls))
	neg("MaxPendingCalls", int64(c.MaxPendingCalls))
	neg("PoolSize", int64(c.PoolSize))
	neg("MaxMemoryBytes", c.MaxMemoryBytes)
	neg("MaxMessageBytes", int64(c.MaxMessageBytes))
	neg("MaxWorkers", int64(c.MaxWorkers))
	neg("MaxTotalMemoryBytes", c.MaxTotalMemoryBytes)
	if d := c.WithDefaults(); c.MaxTotalMemoryBytes > 0 && d.MaxMemoryBytes > 0 && c.MaxTotalMemoryBytes < d.MaxMemoryBytes {
		errs = append(errs, fmt.Errorf("%w: MaxTotalMemoryBytes (%d) must be at least MaxMemoryBytes (%d)", ErrInvalidConfig, c.MaxTotalMemoryBytes, d.MaxMemoryBytes))
	}
	return errors.Join(errs...)
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Timeout == 0 {
		c.Timeout = defaultTimeout
	}
	if c.CPUBudget == 0 {
		c.CPUBudget = defaultCPUBudget
	}
	if c.HeapCheckInterval == 0 {
		c.HeapCheckInterval = defaultHeapCheckInterval
	}
	if c.MaxHeapBytes == 0 {
		c.MaxHeapBytes = defaultMaxHeapBytes
	}
	def(&c.MaxCallStackSize, defaultMaxCallStackSize)
	def(&c.MaxLogBytes, defaultMaxLogBytes)
	def(&c.MaxResultBytes, defaultMaxResultBytes)
	def(&c.MaxStringLength, defaultMaxStringLength)
	def(&c.MaxConcurrentCalls, defaultMaxConcurrentCalls)
	def(&c.MaxPendingCalls, defaultMaxPendingCalls)
	def(&c.PoolSize, defaultPoolSize)
	def(&c.MaxMessageBytes, defaultMaxMessageBytes)
	if c.MaxMemoryBytes == 0 {
		c.MaxMemoryBytes = defaultMaxMemoryBytes
	}
	def(&c.MaxWorkers, defaultMaxWorkers)
	if c.MaxTotalMemoryBytes == 0 {
		c.MaxTotalMemoryBytes = max(defaultMaxTotalMemory, c.MaxMemoryBytes)
	}
	if c.Engine == "" {
		c.Engine = defaultEngine
	}
	if c.MaxPendingCalls < c.MaxConcurrentCalls {
		c.MaxPendingCalls = c.MaxConcurrentCalls
	}
	return c
}
