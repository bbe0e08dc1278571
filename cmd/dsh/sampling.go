//lint:file-ignore SA1019 sampling is deprecated (SEP-2577) but still in use during its deprecation window; issue 21 asks the gateway to forward it

package main

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
)

// Sample forwards a mounted server's sampling request to the serving
// session's client; until there is a server, it is refused.
func (f *elicitForwarder) Sample(ctx context.Context, req mcpclient.SamplingRequest) (*mcp.CreateMessageResult, error) {
	srv := f.srv.Load()
	if srv == nil {
		return nil, fmt.Errorf("sampling request of %q: refused (not serving)", req.Server)
	}
	return srv.ForwardSampling(ctx, req.Agent, req.Server, req.Params)
}
