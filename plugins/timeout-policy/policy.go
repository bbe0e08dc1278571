package timeoutpolicy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "timeout-policy"

// DefaultGrace is the overrun below which an expiry is logged at info level
// when [Config.Grace] is zero.
const DefaultGrace = 100 * time.Millisecond

// ErrorName is the error.name of a TOOL_TIMEOUT result.
const ErrorName = "ToolTimeoutError"

// ErrTimeout is matched (errors.Is) by the cause of the context this policy
// hands to next once the tool's budget has expired, so a tool body can tell
// the policy's expiry from the caller's cancellation:
//
//	if errors.Is(context.Cause(ctx), timeoutpolicy.ErrTimeout) { ... }
//
// The cause itself is a fresh value per call, which is how the wrapper
// knows that the deadline that fired is its own.
var ErrTimeout = errors.New("tool time budget exceeded")

// Config configures the policy. The zero Config bounds only tools that
// declare a budget.
type Config struct {
	// Default is the budget of tools that declare none (Timeout zero).
	// Zero means such tools run unbounded. Negative is invalid.
	Default time.Duration
	// Grace is how late after its deadline a body may return and still
	// count as cooperative (logged at info level rather than warn).
	// Zero means DefaultGrace. Negative is invalid.
	Grace time.Duration
}

// Validate reports a negative Default or Grace.
func (c Config) Validate() error {
	var errs []error
	if c.Default < 0 {
		errs = append(errs, fmt.Errorf("negative Default %v", c.Default))
	}
	if c.Grace < 0 {
		errs = append(errs, fmt.Errorf("negative Grace %v", c.Grace))
	}
	if len(errs) > 0 {
		return fmt.Errorf("timeoutpolicy: invalid config: %w", errors.Join(errs...))
	}
	return nil
}

// Plugin is the timeout policy. Its configuration is a [Config] (or
// *Config; nil means the zero Config). It needs no service: it registers
// one tools/execute wrapper through its context, so it is removed when its
// fiber is disposed. The registration order of tools/execute wrappers
// decides what the budget covers; see the package documentation.
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string { return Name }

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	_, err = host.OnWaterfall(c, tools.ExecuteEvent, Wrapper(cfg, c.Logger()))
	return err
}

// budgetCause is the cause of one call's expiry: a fresh pointer per call,
// compared by identity, that matches ErrTimeout.
type budgetCause struct {
	tool   string
	budget time.Duration
}

func (e *budgetCause) Error() string {
	return fmt.Sprintf("tool %q exceeded its time budget of %v", e.tool, e.budget)
}

func (e *budgetCause) Is(target error) bool { return target == ErrTimeout }

// Wrapper returns the policy's tools/execute listener for cfg, logging to
// log (nil: no logging). [Plugin] registers it; use it directly to register
// the policy at a chosen position (host.Prepend) or through an agent scope.
// cfg must be valid (see [Config.Validate]).
func Wrapper(cfg Config, log *zerolog.Logger) events.WaterfallListener[*tools.Execution, tools.Result] {
	grace := cfg.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	if log == nil {
		nop := zerolog.Nop()
		log = &nop
	}
	return func(ctx context.Context, exec *tools.Execution, next events.Next[tools.Result]) (tools.Result, error) {
		tool := exec.Tool()
		if tool == nil {
			// Unknown tool: there is no body to bound.
			return next(ctx)
		}
		budget := tool.Timeout()
		if budget <= 0 {
			budget = cfg.Default
		}
		if budget <= 0 {
			return next(ctx)
		}
		cause := &budgetCause{tool: tool.Name(), budget: budget}
		tctx, cancel := context.WithTimeoutCause(ctx, budget, cause)
		defer cancel()
		res, err := next(tctx)
		if tctx.Err() == nil || context.Cause(tctx) != error(cause) {
			// Our deadline did not fire, or the caller's cancellation got
			// there first: whatever happened is not ours to report.
			return res, err
		}
		deadline, _ := tctx.Deadline()
		overrun := time.Since(deadline)
		ev := log.Info()
		if overrun > grace {
			ev = log.Warn()
		}
		ev.Str("tool", tool.Name()).Str("call", exec.CallID()).
			Dur("budget", budget).Dur("overrun", overrun).
			Msg("tool body exceeded its time budget")
		if err != nil || !aborted(res) {
			// A propagated listener error, a more specific failure the body
			// already produced, or a success an inner wrapper returned.
			return res, err
		}
		return timeoutResult(res, cause), nil
	}
}

func aborted(r tools.Result) bool {
	return r.IsError && r.Error != nil &&
		(r.Error.Code == tools.CodeAborted || r.Error.Code == tools.CodeAbortedBeforeDispatch)
}

// timeoutResult turns the pipeline's abort into TOOL_TIMEOUT, keeping the
// call id and any additional context already on the result.
func timeoutResult(r tools.Result, cause *budgetCause) tools.Result {
	r.Content = []tools.Content{tools.Text(cause.Error() + "; it was cancelled")}
	r.IsError = true
	r.Error = &tools.ErrorInfo{Name: ErrorName, Code: tools.CodeToolTimeout}
	r.Meta = nil
	return r
}
