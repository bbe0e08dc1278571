package acp_test

import (
	"context"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/benchratio"
	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

type discardPeer struct{}

func (discardPeer) SessionUpdate(context.Context, acpsdk.SessionNotification) error { return nil }

func (discardPeer) RequestPermission(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acp.OptionAllowOnce)}, nil
}

// BenchmarkExecute measures what the bridge adds to a call: "baseline" is
// the registry alone, "loaded" has the plugin with no session for the
// call's agent, "attached" reports the call to a session (its three
// updates rendered, queued and written to a peer that discards them).
func BenchmarkExecute(b *testing.B) {
	for _, mode := range []string{"baseline", "loaded", "attached"} {
		b.Run(mode, func(b *testing.B) {
			h := host.New()
			defer h.Close()
			root := h.Root()
			if _, err := root.Plugin(tools.Plugin, nil); err != nil {
				b.Fatal(err)
			}
			reg, _ := tools.Service.Get(root)
			def, err := tools.Define(tools.TypedTool[GreetArgs, tools.Output]{Name: "greet", Description: "Greet.",
				Execute: func(_ context.Context, a GreetArgs, _ *tools.Execution) (tools.Output, error) {
					return tools.TextOutput("hello, " + a.Name), nil
				},
				PresentCall: func(a GreetArgs) tools.CallView { return tools.GenericCall{Title: "Greet " + a.Name} },
			})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := reg.Register(root, def); err != nil {
				b.Fatal(err)
			}
			var s *acp.Session
			if mode != "baseline" {
				if _, err := root.Plugin(acp.Plugin, nil); err != nil {
					b.Fatal(err)
				}
				bridge, _ := acp.Service.Get(root)
				if mode == "attached" {
					if s, err = bridge.Attach("agent-1", discardPeer{}, "s", acp.SessionOptions{}); err != nil {
						b.Fatal(err)
					}
					defer func() { s.Close(); <-s.Done() }()
				}
			}
			call := tools.Call{ID: "c1", Name: "greet", Arguments: []byte(`{"name":"Ada"}`), Agent: "agent-1"}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res := reg.Execute(ctx, call); res.IsError {
					b.Fatal(res)
				}
			}
			if s != nil {
				if err := s.Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLoadedVsBaseline: a call of an agent without a session with the
// plugin loaded, against the same call on a registry without it,
// alternating in rounds (goal: loaded/baseline ≤ 1.05).
func BenchmarkLoadedVsBaseline(b *testing.B) {
	setup := func(loaded bool) *tools.Registry {
		h := host.New()
		b.Cleanup(func() { _ = h.Close() })
		root := h.Root()
		if _, err := root.Plugin(tools.Plugin, nil); err != nil {
			b.Fatal(err)
		}
		reg, _ := tools.Service.Get(root)
		def, err := tools.Define(tools.TypedTool[GreetArgs, tools.Output]{Name: "greet", Description: "Greet.",
			Execute: func(_ context.Context, a GreetArgs, _ *tools.Execution) (tools.Output, error) {
				return tools.TextOutput("hello, " + a.Name), nil
			},
		})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := reg.Register(root, def); err != nil {
			b.Fatal(err)
		}
		if loaded {
			if _, err := root.Plugin(acp.Plugin, nil); err != nil {
				b.Fatal(err)
			}
		}
		return reg
	}
	base, loaded := setup(false), setup(true)
	call := tools.Call{ID: "c1", Name: "greet", Arguments: []byte(`{"name":"Ada"}`), Agent: "agent-1"}
	ctx := context.Background()
	benchratio.Compare(b, "loaded/baseline", 200,
		func() { _ = loaded.Execute(ctx, call) },
		func() { _ = base.Execute(ctx, call) })
}
