package toolbash

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Config configures the plugin.
type Config struct {
	// Dir is the working directory commands run in (default: the
	// process's).
	Dir string
	// Shell runs the command as `Shell -c command` (default /bin/sh).
	Shell string
	// Env, when non-nil, is the commands' whole environment.
	Env []string
	// MaxOutput caps the captured output in bytes (default 64 KiB).
	MaxOutput int
	// Timeout is the tool's budget for the timeout policy (default 2
	// minutes); a call's own timeout_ms, when smaller, applies instead.
	Timeout time.Duration
}

// Defaults.
const (
	DefaultShell     = "/bin/sh"
	DefaultMaxOutput = 64 << 10
	DefaultTimeout   = 2 * time.Minute
	// waitDelay bounds the wait for pipes held open by a killed command's
	// stray children.
	waitDelay = 2 * time.Second
)

// Args are bash's arguments.
type Args struct {
	Command     string `json:"command" dsh:"required" desc:"The shell command to run."`
	Description string `json:"description" dsh:"required" desc:"One-line summary of what the command does, shown in the UI."`
	TimeoutMs   int    `json:"timeout_ms,omitempty" desc:"Optional time limit in milliseconds; the command's process group is killed when it runs out."`
}

// Result is bash's declared output: the canonical value of a run (its
// Result.Value in the registry, structuredContent over MCP, the value a
// Code Mode program gets). The model reads it rendered as the output
// followed by the exit status.
type Result struct {
	ExitCode  int    `json:"exitCode" jsonschema:"the command's exit code; -1 when a signal killed it"`
	Signal    string `json:"signal,omitempty" jsonschema:"the signal that killed the command, such as SIGKILL"`
	Output    string `json:"output" jsonschema:"combined stdout and stderr, cut at the output limit"`
	Truncated bool   `json:"truncated,omitempty" jsonschema:"the output was longer than the limit"`
}

// Meta is the presentation payload bash results carried before bash
// declared its output; logs written then still present with it.
//
// Deprecated: a result's value is a [Result].
type Meta = Result

// Plugin registers the bash tool. It injects the tool registry and takes a
// Config (or *Config, or nil for the defaults).
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string              { return "tool-bash" }
func (plugin) Inject() []host.ServiceKey { return []host.ServiceKey{tools.Service} }

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	def, err := Definition(cfg)
	if err != nil {
		return err
	}
	reg, err := tools.Service.Get(c)
	if err != nil {
		return err
	}
	_, err = reg.Register(c, def)
	return err
}

// Definition returns the bash tool definition for cfg.
func Definition(cfg Config) (tools.Definition, error) {
	if cfg.Shell == "" {
		cfg.Shell = DefaultShell
	}
	if cfg.MaxOutput <= 0 {
		cfg.MaxOutput = DefaultMaxOutput
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	return tools.Define(tools.TypedTool[Args, Result]{
		Name:        "bash",
		Description: "Run a shell command in the workspace and return its combined output and exit code.",
		Timeout:     cfg.Timeout,
		// A command may change anything: never alongside another call.
		Concurrency: tools.Exclusive,
		Execute: func(ctx context.Context, a Args, _ *tools.Execution) (Result, error) {
			if a.TimeoutMs < 0 {
				return Result{}, fmt.Errorf("bash: timeout_ms must not be negative, got %d", a.TimeoutMs)
			}
			if a.TimeoutMs > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, time.Duration(a.TimeoutMs)*time.Millisecond)
				defer cancel()
			}
			r, err := execute(ctx, cfg.Shell, cfg.Dir, cfg.Env, a.Command, cfg.MaxOutput, waitDelay)
			if err != nil {
				return Result{}, fmt.Errorf("bash: %w", err)
			}
			return Result{ExitCode: r.ExitCode, Signal: r.Signal, Output: r.Output, Truncated: r.Truncated}, nil
		},
		Render: func(r Result) ([]tools.Content, error) {
			return []tools.Content{tools.Text(modelText(r))}, nil
		},
		PresentCall: func(a Args) tools.CallView {
			return tools.TerminalCall{Title: a.Command, Description: a.Description, Cwd: cfg.Dir}
		},
		PresentResult: func(a Args, r tools.ResultData) tools.ResultView {
			// The value; a result logged before bash declared its output
			// has the same fields in its meta.
			raw := r.Value
			if len(raw) == 0 {
				raw = r.Meta
			}
			var m Result
			if len(raw) == 0 || json.Unmarshal(raw, &m) != nil {
				return nil
			}
			code := m.ExitCode
			return tools.TerminalResult{Output: m.Output, ExitCode: &code, Signal: m.Signal}
		},
	})
}

// modelText is what the model reads: the output, then the exit status.
func modelText(r Result) string {
	s := r.Output
	if r.Truncated {
		s += "\n[output truncated]"
	}
	if s != "" && s[len(s)-1] != '\n' {
		s += "\n"
	}
	if r.Signal != "" {
		return s + fmt.Sprintf("[killed by signal %s]", r.Signal)
	}
	return s + fmt.Sprintf("[exit code %d]", r.ExitCode)
}
