package coderuntime

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
)

// ServiceName is the name [Plugin] provides its [Runtime] under (the spec's
// ctx.codeRuntime). Consumers read it non-reactively:
//
//	rt, ok := host.Lookup[coderuntime.Runtime](c, coderuntime.ServiceName)
const ServiceName = "code-runtime"

// Plugin is the code-runtime plugin, named "code-runtime". Its configuration
// is a [Config] (or *Config, or nil for the defaults), validated at load: an
// invalid one fails the fiber. It provides a fresh [*Goja] (a [Runtime] whose
// language is "typescript") under [ServiceName] until its fiber is disposed;
// updating the configuration restarts the plugin and replaces the runtime.
// Runs in progress are not affected by the replacement: each [Goja.Run] is
// independent, and the plugin starts no goroutine of its own. Loading it changes
// no process-wide setting: the host calls [LimitRegexpMatchTime] itself.
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return ServiceName }

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
	_, err = c.Provide(ServiceName, Runtime(g))
	return err
}

var _ host.Named = plugin{}
