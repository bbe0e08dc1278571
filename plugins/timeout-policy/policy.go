package timeoutpolicy

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/toolpat"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "timeout-policy"

// DefaultGrace is the overrun below which an expiry is logged at info level
// when [Config.Grace] is zero.
const DefaultGrace = 100 * time.Millisecond

// ErrorName is the error.name of a TOOL_TIMEOUT result.
const ErrorName = tools.TimeoutErrorName

// ErrTimeout is matched (errors.Is) by the cause of the context this policy
// hands to next once the tool's budget has expired, so a tool body can tell
// the policy's expiry from the caller's cancellation:
//
//	if errors.Is(context.Cause(ctx), timeoutpolicy.ErrTimeout) { ... }
//
// It is [tools.ErrTimeout], which the registry's own enforcement of a
// declared Timeout matches too. The cause itself is a fresh
// *[tools.TimeoutError] per call, which is how the wrapper knows that the
// deadline that fired is its own.
var ErrTimeout = tools.ErrTimeout

// Config configures the policy. The zero Config bounds only tools that
// declare a budget (which the registry enforces without the policy too).
type Config struct {
	// Tools are budgets by tool-name pattern, for tools that declare none:
	// the first entry whose pattern names the tool applies. Patterns are
	// those of permission rules (package internal/toolpat): "mcp__fs__*",
	// "mcp__fs" (every tool of the server fs), "Read" (and the tools
	// Claude Code applies Read rules to), an exact name.
	Tools []ToolBudget
	// Default is the budget of tools that declare none (Timeout zero) and
	// that no Tools entry names. Zero means such tools run unbounded.
	// Negative is invalid.
	Default time.Duration
	// Grace is how late after its deadline a body may return and still
	// count as cooperative (logged at info level rather than warn).
	// Zero means DefaultGrace. Negative is invalid.
	Grace time.Duration
}

// ToolBudget is one entry of [Config].Tools.
type ToolBudget struct {
	// Tool is a tool-name pattern.
	Tool string
	// Budget is positive.
	Budget time.Duration
}

// Validate reports a negative Default or Grace, and a Tools entry with an
// invalid pattern or a budget that is not positive.
func (c Config) Validate() error {
	var errs []error
	for i, t := range c.Tools {
		if _, err := toolpat.Parse(t.Tool); err != nil {
			errs = append(errs, fmt.Errorf("tool budget %d: %w", i, err))
		}
		if t.Budget <= 0 {
			errs = append(errs, fmt.Errorf("tool budget %d (%s): %v is not positive", i, t.Tool, t.Budget))
		}
	}
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

// Wrapper returns the policy's tools/execute listener for cfg, logging to
// log (nil: no logging). [Plugin] registers it; use it directly to register
// the policy at a chosen position (host.Prepend) or through an agent scope.
// cfg must be valid (see [Config.Validate]): a Tools entry whose pattern
// does not parse matches nothing.
func Wrapper(cfg Config, log *zerolog.Logger) events.WaterfallListener[*tools.Execution, tools.Result] {
	pats := make([]toolpat.Pattern, len(cfg.Tools))
	for i, t := range cfg.Tools {
		pats[i], _ = toolpat.Parse(t.Tool)
	}
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
		for i := 0; budget <= 0 && i < len(pats); i++ {
			if pats[i].Match(tool.Name()) {
				budget = cfg.Tools[i].Budget
			}
		}
		if budget <= 0 {
			budget = cfg.Default
		}
		if budget <= 0 {
			return next(ctx)
		}
		cause := &tools.TimeoutError{Tool: tool.Name(), Budget: budget}
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
		return cause.Result(res), nil
	}
}

func aborted(r tools.Result) bool {
	return r.IsError && r.Error != nil &&
		(r.Error.Code == tools.CodeAborted || r.Error.Code == tools.CodeAbortedBeforeDispatch)
}
