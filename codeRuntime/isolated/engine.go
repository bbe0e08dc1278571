package isolated

import (
	"fmt"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/quickjs"
)

// NewFromConfig returns the [coderuntime.Runtime] cfg selects: its Engine, run in a worker process per program
// ([Runtime]) when Isolation is "process" or empty and the platform supports it, or in the host
// process when Isolation is "none" (a [*goja.Runtime] or a [*quickjs.Runtime]). It returns the error cfg.Validate
// reports, or [ErrIsolationUnsupported] when "process" was asked for explicitly on a platform
// without it.
//
// An isolated runtime holds processes, and an in-process goja runtime a VM prepared ahead: both
// implement io.Closer, and the owner must call Close when done with one ([Plugin] does when its
// fiber is disposed).
func NewFromConfig(cfg coderuntime.Config) (coderuntime.Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	switch {
	case cfg.Isolation == coderuntime.IsolationNone, cfg.Isolation == "" && !isolationSupported:
		return newEngine(cfg)
	}
	return New(cfg)
}

// newEngine returns the in-process runtime of cfg.Engine.
func newEngine(cfg coderuntime.Config) (coderuntime.Runtime, error) {
	switch cfg.Engine {
	case "", coderuntime.EngineGoja:
		return goja.NewInProcess(cfg)
	case coderuntime.EngineQuickJS:
		return quickjs.NewInProcess(cfg)
	}
	return nil, fmt.Errorf("%w: Engine %q is not available", coderuntime.ErrInvalidConfig, cfg.Engine)
}
