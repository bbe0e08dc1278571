package coderuntime

import (
	"fmt"
	"io"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Service is the service [Plugin] provides its [Runtime] through.
// Consumers read it non-reactively:
//
//	rt, ok := coderuntime.Service.Lookup(c)
var Service = host.NewService[Runtime]("code-runtime")

// Plugin is the code-runtime plugin, named "code-runtime". Its configuration
// is a [Config] (or *Config, or nil for the defaults), validated at load: an
// invalid one fails the fiber. It provides the runtime [NewRuntime] returns for
// it (a [Runtime] whose language is "typescript") through [Service] until its
// fiber is disposed: by default an [*Isolated], which runs each program in a
// worker process (Isolation "none" gives an in-process [*Goja]).
//
// An isolated runtime starts its worker processes on the first run, and is
// closed when the fiber is disposed, after the service is withdrawn: its
// workers are killed (a run still in progress fails with kind "abort") and
// disposal waits for them to be reaped. Updating the configuration restarts
// the plugin and replaces the runtime the same way. An in-process runtime holds
// nothing: runs in progress outlive its replacement. Loading the plugin changes
// no process-wide setting: the host calls [LimitRegexpMatchTime] itself.
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return Service.Name() }

// Apply implements host.Plugin.
func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil && !safeerr.Is(err, ErrInvalidConfig) {
		err = fmt.Errorf("%w: %w", ErrInvalidConfig, err) // a wrong type
	}
	if err != nil {
		return err
	}
	var rt Runtime
	_, err = c.Effect("code runtime", func() (func() error, error) {
		var err error
		if rt, err = NewRuntime(cfg); err != nil {
			return nil, err
		}
		if cl, ok := rt.(io.Closer); ok {
			return cl.Close, nil
		}
		return nil, nil
	})
	if err != nil {
		return err
	}
	_, err = Service.Provide(c, rt)
	return err
}

var _ host.Named = plugin{}
