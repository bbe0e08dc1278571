package mcpclient_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawClient connects a go-sdk client configured as the plugin configures
// its own (the same implementation, capabilities and handlers) to ms and
// lists its tools, as the plugin does when it mounts them.
func rawClient(t testing.TB, ms *memServer) *mcp.ClientSession {
	t.Helper()
	ct, err := ms.dial(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rawSession(t, ct)
}

// rawSession is rawClient's session on the transport ct.
func rawSession(t testing.TB, ct mcp.Transport) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "dsh", Version: "1"}, &mcp.ClientOptions{
		Capabilities:           &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	return cs
}

// recordingDial dials ms and records the params of every tools/call the
// client writes, as encoded.
func recordingDial(ms *memServer) (dial func(context.Context) (mcp.Transport, error), params func() []json.RawMessage) {
	var mu sync.Mutex
	var got []json.RawMessage
	dial = func(ctx context.Context) (mcp.Transport, error) {
		t, err := ms.dial(ctx)
		if err != nil {
			return nil, err
		}
		return recordingTransport{t, func(p json.RawMessage) {
			mu.Lock()
			got = append(got, append(json.RawMessage(nil), p...))
			mu.Unlock()
		}}, nil
	}
	return dial, func() []json.RawMessage {
		mu.Lock()
		defer mu.Unlock()
		return append([]json.RawMessage(nil), got...)
	}
}

type recordingTransport struct {
	mcp.Transport
	record func(json.RawMessage)
}

func (t recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return recordingConn{c, t.record}, nil
}

type recordingConn struct {
	mcp.Connection
	record func(json.RawMessage)
}

func (c recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.Method == "tools/call" {
		c.record(r.Params)
	}
	return c.Connection.Write(ctx, msg)
}

// metaOf returns the _meta of encoded params, as encoded.
func metaOf(t *testing.T, params json.RawMessage) string {
	t.Helper()
	var p struct {
		Meta json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		t.Fatal(err)
	}
	return string(p.Meta)
}

// Every mounted call sends, byte for byte, the request _meta the go-sdk's
// own CallTool sends for a client configured as the plugin's (protocol
// version, client info and capabilities): the first on a session and
// those after it, which the plugin gives the first's, sequential or
// concurrent, and again after a reconnection. On a session of a protocol
// without it, no call sends one.
func TestEveryMountedCallSendsTheSDKsRequestMeta(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(map[bool]string{false: "current", true: "2025-11-25"}[old], func(t *testing.T) {
			e := newEnv(t)
			var opts *mcp.ServerOptions
			if old {
				opts = &mcp.ServerOptions{SupportedProtocolVersions: []string{"2025-11-25"}}
			}
			ms := newMemServer(opts)
			addEcho(ms.srv, "echo")
			rawDial, rawParams := recordingDial(ms)
			ct, err := rawDial(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			cs := rawSession(t, ct)
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "raw"}}); err != nil {
				t.Fatal(err)
			}
			sdk := metaOf(t, rawParams()[0])
			if old != (sdk == "") {
				t.Fatalf("the SDK's own request _meta = %s", sdk)
			}

			dial, params := recordingDial(ms)
			e.mount(mcpclient.Config{Name: "mem", Dial: dial, Reconnect: mcpclient.Reconnect{MaxAttempts: 5, InitialDelay: mcpclient.Duration(time.Millisecond)}})
			calls := func(n int) {
				t.Helper()
				for range 3 {
					if r := e.call(context.Background(), "mcp__mem__echo", map[string]any{"text": "seq"}); r.IsError || text(r) != "seq" {
						t.Fatalf("call = %+v", r)
					}
				}
				var wg sync.WaitGroup
				for range n {
					wg.Go(func() {
						if r := e.call(context.Background(), "mcp__mem__echo", map[string]any{"text": "par"}); r.IsError || text(r) != "par" {
							t.Errorf("concurrent call = %+v", r)
						}
					})
				}
				wg.Wait()
			}
			calls(8)
			// A new session: its first call is the SDK's again.
			e.waitStatus("connected", func(s mcpclient.Status) bool { return s.State == mcpclient.StateConnected })
			_ = ms.last().Close()
			e.waitStatus("disconnected", func(s mcpclient.Status) bool { return s.State != mcpclient.StateConnected })
			e.waitStatus("reconnected", func(s mcpclient.Status) bool { return s.State == mcpclient.StateConnected })
			calls(2)
			got := params()
			if len(got) != 3+8+3+2 {
				t.Fatalf("%d tools/call requests, want 16", len(got))
			}
			for i, p := range got {
				if m := metaOf(t, p); m != sdk {
					t.Errorf("mounted call %d sent _meta %s, the SDK sends %s", i, m, sdk)
				}
			}
		})
	}
}

// A mounted call's body allocates less than the go-sdk CallTool it makes
// (the server's allocations included on both sides): its params and
// arguments are in its one allocation, and the request _meta is the
// session's, not built again per call. Without that it allocates as much
// as CallTool; the margin is 5 of the 7 allocations it saves.
func TestAMountedCallAllocatesLessThanTheCallToolItMakes(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	cs := rawClient(t, ms)
	e := newEnv(t)
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	ctx := context.Background()
	args := json.RawMessage(`{"text":"x"}`)
	call := tools.Call{ID: "c1", Name: "mcp__mem__echo", Arguments: args, Agent: "a"}
	tool, ok := e.reg.Get(call.Name, "")
	if !ok {
		t.Fatal("the tool is not mounted")
	}
	def := tool.Definition()
	exec, err := tools.NewExecution(call, def)
	if err != nil {
		t.Fatal(err)
	}
	raw := testing.AllocsPerRun(100, func() {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil || res.IsError {
			t.Fatal(err, res)
		}
	})
	mounted := testing.AllocsPerRun(100, func() {
		if _, err := def.Execute(ctx, exec); err != nil {
			t.Fatal(err)
		}
	})
	if mounted > raw-5 {
		t.Fatalf("a mounted call's body allocates %v times, the CallTool it makes %v", mounted, raw)
	}
}
