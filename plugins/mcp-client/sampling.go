//lint:file-ignore SA1019 sampling is deprecated (SEP-2577) but still in use during its deprecation window; issue 21 asks the gateway to forward it

package mcpclient

import (
	"context"
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sampler answers a server's sampling requests (Config.Sampler): a server
// asking for an LLM completion during a tool call. With a Sampler the
// plugin's client declares the sampling capability; without one it does
// not, and a sampling request is refused (an error to the server). A
// request is never answered by the plugin itself. Sample must return once
// ctx is done; an error or a panic refuses the request.
type Sampler interface {
	Sample(ctx context.Context, req SamplingRequest) (*mcp.CreateMessageResult, error)
}

// SamplingRequest is a server's sampling request.
type SamplingRequest struct {
	// Server is Config.Name.
	Server string
	// Agent is the agent of the server's calls in progress, when they all
	// have the same one; "" otherwise.
	Agent host.ScopeKey
	// Params is the server's request.
	Params *mcp.CreateMessageParams
}

// errNoSampling refuses a sampling request no one can answer.
var errNoSampling = errors.New("sampling is not available")

// sample is the session's sampling handler (set only with a Sampler).
func (s *server) sample(ctx context.Context, req *mcp.CreateMessageRequest) (res *mcp.CreateMessageResult, err error) {
	if req == nil || req.Params == nil || s.cfg.Sampler == nil {
		return nil, errNoSampling
	}
	in, agent := s.attribute(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	if in != nil {
		defer context.AfterFunc(in, cancel)()
	}
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("%w: the sampler failed", errNoSampling)
		}
	}()
	res, err = s.cfg.Sampler.Sample(ctx, SamplingRequest{Server: s.cfg.Name, Agent: agent, Params: req.Params})
	if err != nil {
		return nil, fmt.Errorf("%w: %s", errNoSampling, safeerr.Text(err))
	}
	if res == nil {
		return nil, fmt.Errorf("%w: no answer", errNoSampling)
	}
	return res, nil
}
