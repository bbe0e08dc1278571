package mcpserver

import (
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Service is the service [Plugin] provides: the running *Server.
var Service = host.NewService[*Server]("mcp-server")

// Plugin creates a [Server] for the host's registry (it requires
// tools.Service) with its configuration, a [Config] (or *Config; nil means
// the zero Config), and provides it as [Service]. Disposing the plugin
// closes the server: every session ends and its scope is disposed. Serve
// with [Server.Run] (stdio) or [Server.Handler] (streamable HTTP).
var Plugin host.Plugin = tools.DefinePlugin(Name, func(c *host.Context, reg *tools.Registry) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	s, err := New(c, reg, cfg)
	if err != nil {
		return err
	}
	_, err = Service.Provide(c, s)
	return err
})
