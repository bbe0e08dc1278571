package coderuntime

import (
	"errors"
	"fmt"
	"time"
)

// Config sets the limits of a [Goja] runtime. The zero value of a field means its default.
type Config struct {
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
	// (String.prototype.repeat, padStart, padEnd, Array.prototype.join). Default 32 Mi.
	MaxStringLength int
	// MaxHeapBytes is the process-heap ceiling the watchdog enforces while a run is active. Default
	// 1 GiB; negative disables the watchdog. Exceeding it fails the run with kind "limit" (cause
	// ErrHeapLimit). It is process-wide, not per run: see the package doc.
	MaxHeapBytes int64
	// HeapCheckInterval is how often the watchdog samples the heap. Default 5ms.
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
)

// ErrInvalidConfig is wrapped by the error Validate returns.
var ErrInvalidConfig = errors.New("coderuntime: invalid config")

// Validate reports a negative field (other than MaxHeapBytes, where negative disables).
func (c Config) Validate() error {
	var errs []error
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
	return errors.Join(errs...)
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
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
	if c.MaxPendingCalls < c.MaxConcurrentCalls {
		c.MaxPendingCalls = c.MaxConcurrentCalls
	}
	return c
}
