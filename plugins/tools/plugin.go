package tools

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// Service is the tool registry service: [Plugin] provides its [*Registry]
// through it; a plugin that registers tools injects it and reads it:
//
//	reg, err := tools.Service.Get(c)
var Service = host.NewService[*Registry]("tools")

// Mode selects how the registry presents its tools to the model.
type Mode string

// The modes. Native contributes the visible tools as wire function
// definitions; Code contributes only the reserved run_code transport plus
// the tools:sdk prompt section; Both contributes all three. Code and Both
// are Code Mode, package plugins/codemode (load codemode.Plugin), and need a
// code runtime.
const (
	Native Mode = "native"
	Code   Mode = "code"
	Both   Mode = "both"
)

// Config configures [Plugin].
type Config struct {
	// Mode is the presentation mode; empty means Native.
	Mode Mode `json:"mode,omitempty" yaml:"mode,omitempty"`
	// MaxParallelSubCalls caps the sub-calls of one Code Mode run in their
	// tools/execute stage at once (parallel-safe calls the program makes
	// together, as under Promise.all; see [Registry.ExecuteBatch] for the
	// scheduling). Zero means [DefaultMaxParallel]; 1 runs them one at a
	// time; negative is invalid.
	MaxParallelSubCalls int `json:"maxParallelSubCalls,omitempty" yaml:"maxParallelSubCalls,omitempty"`
}

// supportedModes lists the modes this build accepts, in the order error
// messages name them.
var supportedModes = []Mode{Native, Code, Both}

// Validate reports an unsupported mode, naming the allowed values, and a
// negative MaxParallelSubCalls.
func (c Config) Validate() error {
	if c.MaxParallelSubCalls < 0 {
		return fmt.Errorf("tools: config maxParallelSubCalls is %d; it must be positive, or 0 for the default %d", c.MaxParallelSubCalls, DefaultMaxParallel)
	}
	m := c.Mode
	if m == "" {
		m = Native
	}
	for _, s := range supportedModes {
		if m == s {
			return nil
		}
	}
	return fmt.Errorf("tools: config mode %q is not supported (allowed: %s)", c.Mode, modeList())
}

func modeList() string {
	s := ""
	for i, m := range supportedModes {
		if i > 0 {
			s += ", "
		}
		s += string(m)
	}
	return s
}

// checkMode reports a mode this plugin cannot present: an unsupported one, or Code and Both
// without a presenter (plain [Plugin]: Code Mode is package plugins/codemode).
func checkMode(m Mode, p *Presenter) error {
	switch m {
	case Native, "":
		return nil
	case Code, Both:
		if p == nil {
			return fmt.Errorf("tools: config mode %q needs Code Mode: load codemode.Plugin (package github.com/dsh-go/dsh/plugins/codemode) instead of tools.Plugin", m)
		}
		return nil
	}
	return Config{Mode: m}.Validate()
}

// nativeContribution is the native mode's contribution for scope: the wire
// schemas of the tools it sees.
func nativeContribution(r *Registry, scope host.ScopeKey) systemprompt.Contribution {
	// A restricted-away tool stays a valid toolOrder name (a normal
	// absence): the pre-restriction universe is known.
	return systemprompt.Contribution{Tools: schemas(r.Visible(scope)), Known: r.KnownNames(scope)}
}

// schemas returns the wire schemas of ts, in order.
func schemas(ts []*Tool) []systemprompt.ToolSchema {
	out := make([]systemprompt.ToolSchema, len(ts))
	for i, t := range ts {
		out[i] = t.Schema()
	}
	return out
}

// Plugin is the tool registry plugin, named "tools". It requires no
// service: it provides a fresh [*Registry] through [Service] and, when a
// system-prompt service is provided (package systemprompt), feeds each
// prompt assembly the scope's contribution for the configured mode. Its
// configuration is a [Config] (or *Config, or nil for the defaults).
//
// The prompt contribution is a child plugin, "tools/prompt", that injects
// the system-prompt service: it waits (pending) until one is provided,
// registers the contributor then, restarts when the provider is replaced,
// and goes back to waiting when it goes away, while the registry and its
// tools stay as they are. The host's injection already does all of that,
// so the registry needs no optional-service machinery of its own, and the
// child's fiber shows in the fiber tree whether the registry is wired to a
// prompt.
//
// Plugin presents the tools natively; the modes Code and Both need Code
// Mode, package plugins/codemode, whose Plugin is this one with Code Mode
// attached ([PluginWith]): loading Plugin with one of them fails, naming it,
// and so does an agent's [Registry.PresentAs] choosing one of them.
var Plugin host.Plugin = plugin{}

// plugin is the registry plugin; present, when not nil, attaches Code and
// Both (a pointer, so that plugin values stay comparable).
type plugin struct{ present *Presenter }

func (plugin) Name() string { return "tools" }

func (p plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	if err := checkMode(cfg.Mode, p.present); err != nil {
		return err
	}
	r := newRegistry(c)
	r.maxSubCalls = cfg.MaxParallelSubCalls
	if cfg.Mode != "" {
		r.mode = cfg.Mode
	}
	// Attached in every mode, native included: an agent may present as
	// Code or Both on its own (Registry.PresentAs).
	if p.present != nil {
		if err := r.attach(c, *p.present); err != nil {
			return err
		}
	}
	if err := c.Host().Declare(Events()...); err != nil {
		return err
	}
	// Pending (no prompt service yet) is the expected start without one.
	if _, err := c.Plugin(promptPlugin(r), nil); err != nil && !safeerr.Is(err, host.ErrPending) {
		return err
	}
	_, err = Service.Provide(c, r)
	return err
}

// promptPlugin is the child plugin that contributes r's tools to prompt
// assembly while a system-prompt service is provided.
func promptPlugin(r *Registry) host.Plugin {
	return host.Define("tools/prompt", []host.ServiceKey{systemprompt.ServiceKey}, func(c *host.Context) error {
		sp, err := systemprompt.ServiceKey.Get(c)
		if err != nil {
			return err
		}
		_, err = sp.Tools(c, func(ctx context.Context, scope host.ScopeKey) (systemprompt.Contribution, error) {
			return r.contribute(ctx, scope)
		})
		return err
	})
}

var _ host.Named = plugin{}
