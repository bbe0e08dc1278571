package coderuntime

import "fmt"

// NewRuntime returns the [Runtime] cfg selects: its Engine, run in a worker process per program
// ([Isolated]) when Isolation is "process" or empty and the platform supports it, or in the host
// process when Isolation is "none" (a [*Goja] or a [*QuickJS]). It returns the error cfg.Validate
// reports, or [ErrIsolationUnsupported] when "process" was asked for explicitly on a platform
// without it.
//
// An isolated runtime holds processes: it implements io.Closer, and its owner must call Close
// when done with it ([Plugin] does when its fiber is disposed).
func NewRuntime(cfg Config) (Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Isolation == IsolationNone, cfg.Isolation == "" && !isolationSupported:
		return newEngine(cfg)
	}
	return NewIsolated(cfg)
}

// newEngine returns the in-process runtime of cfg.Engine.
func newEngine(cfg Config) (Runtime, error) {
	switch cfg.Engine {
	case "", EngineGoja:
		return New(cfg)
	case EngineQuickJS:
		return NewQuickJS(cfg)
	}
	return nil, fmt.Errorf("%w: Engine %q is not available", ErrInvalidConfig, cfg.Engine)
}
