package mcpserver

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

type oneUpstream struct {
	name string
	cs   *mcp.ClientSession
}

func (u oneUpstream) Servers() []string { return []string{u.name} }
func (u oneUpstream) Session(s string) *mcp.ClientSession {
	if s == u.name {
		return u.cs
	}
	return nil
}

// A resource read is decided on the upstream's listing; when the listing
// fails, the decision is unsure and the read is refused, even though no
// rule names the URI (the denied resource could be the one not listed).
func TestProxyReadRefusedWhenTheListingFails(t *testing.T) {
	ctx := context.Background()
	for _, failList := range []bool{false, true} {
		srv := mcp.NewServer(&mcp.Implementation{Name: "up", Version: "1"}, nil)
		srv.AddResource(&mcp.Resource{Name: "secret", URI: "test://secret"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://secret", Text: "s"}}}, nil
			})
		srv.AddResource(&mcp.Resource{Name: "open", URI: "test://open"},
			func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "test://open", Text: "o"}}}, nil
			})
		if failList {
			srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "resources/list" {
						return nil, errors.New("listing unavailable")
					}
					return next(ctx, method, req)
				}
			})
		}
		st, ct := mcp.NewInMemoryTransports()
		ss, err := srv.Connect(ctx, st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		log := zerolog.Nop()
		s := &Server{cfg: Config{
			Upstream: oneUpstream{"ev", cs},
			Hidden:   func(name string) bool { return name == "mcp__ev__secret" },
		}, log: &log}
		if s.readable(ctx, "ev", "test://secret") {
			t.Errorf("failList=%v: the denied resource is readable", failList)
		}
		if got := s.readable(ctx, "ev", "test://open"); got == failList {
			t.Errorf("failList=%v: readable(open) = %v, want %v", failList, got, !failList)
		}
		cs.Close()
		ss.Close()
	}
}
