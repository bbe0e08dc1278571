package coderuntime

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
)

// Service is the service [Plugin] provides its [Runtime] through.
// Consumers read it non-reactively:
//
//	rt, ok := coderuntime.Service.Lookup(c)
var Service = host.NewService[Runtime]("code-runtime")

// Plugin is the code-runtime plugin, named "code-runtime". Its configuration
// is a [Config] (or *Config, or nil for the defaults), validated at load: an
// invalid one fails the fiber. It provides a fresh [*Goja] (a [Runtime] whose
// language is "typescript") through [Service] until its fiber is disposed;
// updating the configuration restarts the plugin and replaces the runtime.
// Runs in progress are not affected by the replacement: each [Goja.Run] is
// independent, and the plugin starts no goroutine of its own. Loading it changes
// no process-wide setting: the host calls [LimitRegexpMatchTime] itself.
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return Service.Name() }

// Apply implements host.Plugin.
func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil && !errors.Is(err, ErrInvalidConfig) {
		err = fmt.Errorf("%w: %w", ErrInvalidConfig, err) // a wrong type
	}
	if err != nil {
		return err
	}
	g, err := New(cfg)
	if err != nil {
		return err
	}
	_, err = Service.Provide(c, g)
	return err
}

var _ host.Named = plugin{}
