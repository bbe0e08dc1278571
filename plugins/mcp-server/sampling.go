//lint:file-ignore SA1019 sampling is deprecated (SEP-2577) but still in use during its deprecation window; issue 21 asks the gateway to forward it

package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
)

// ForwardSampling sends a mounted server's sampling request to the client
// of the session whose agent is agent and returns the client's answer.
// It refuses (an error, never an answer of its own) when there is no such
// session, its client did not declare sampling, or
// [Config].NoClientApproval keeps requests from clients. Use it as the
// Sampler of the mounted servers (plugins/mcp-client Config.Sampler).
func (s *Server) ForwardSampling(ctx context.Context, agent host.ScopeKey, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	if p == nil || s.cfg.NoClientApproval || agent == "" {
		return nil, fmt.Errorf("sampling request of %q: refused (no client to ask)", server)
	}
	sess := s.session(agent)
	if sess == nil {
		return nil, fmt.Errorf("sampling request of %q: refused (no client to ask)", server)
	}
	ss := sess.ss.Load()
	if ss == nil {
		return nil, fmt.Errorf("sampling request of %q: refused (no client to ask)", server)
	}
	if ip := ss.InitializeParams(); ip == nil || ip.Capabilities == nil || ip.Capabilities.Sampling == nil {
		return nil, fmt.Errorf("sampling request of %q: refused (the client does not support sampling)", server)
	}
	return ss.CreateMessage(ctx, p)
}
