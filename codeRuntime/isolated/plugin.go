package isolated

import (
	"fmt"
	"io"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Plugin is the code-runtime plugin, named "code-runtime". Its configuration
// is a [coderuntime.Config] (or *Config, or nil for the defaults), validated at load: an
// invalid one fails the fiber. It provides the runtime [NewFromConfig] returns for
// it (a [coderuntime.Runtime] whose language is "typescript") through [coderuntime.Service] until its
// fiber is disposed: by default an [*Runtime], which runs each program in a
// worker process (Isolation "none" gives an in-process [*goja.Runtime]).
//
// An isolated runtime starts its worker processes on the first run, and is
// closed when the fiber is disposed, after the service is withdrawn: its
// workers are killed (a run still in progress fails with kind "abort") and
// disposal waits for them to be reaped. Updating the configuration restarts
// the plugin and replaces the runtime the same way. An in-process runtime holds
// nothing: runs in progress outlive its replacement. Loading the plugin changes
// no process-wide setting: the host calls goja.LimitRegexpMatchTime itself.
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return coderuntime.Service.Name() }

// Apply implements host.Plugin.
func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[coderuntime.Config](c)
	if err != nil && !safeerr.Is(err, coderuntime.ErrInvalidConfig) {
		err = fmt.Errorf("%w: %w", coderuntime.ErrInvalidConfig, err) // a wrong type
	}
	if err != nil {
		return err
	}
	var rt coderuntime.Runtime
	_, err = c.Effect("code runtime", func() (func() error, error) {
		var err error
		if rt, err = NewFromConfig(cfg); err != nil {
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
	_, err = coderuntime.Service.Provide(c, rt)
	return err
}

var _ host.Named = plugin{}
