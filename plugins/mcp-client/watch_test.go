package mcpclient_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
)

// Upstreams.Watch reports a mounted server's connection, its resource
// updates and its resource and prompt list changes, with the server's
// name; after stop, nothing more.
func TestUpstreamsWatchReportsTheServersNotifications(t *testing.T) {
	e := newEnv(t)
	m := newMemServer(&mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	addEcho(m.srv, "echo")
	read := func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
	}
	m.srv.AddResource(&mcp.Resource{Name: "a", URI: "test://a"}, read)
	m.srv.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	up := &mcpclient.Upstreams{}
	got := make(chan string, 64)
	stop := up.Watch(func(server, method, uri string) { got <- server + " " + method + " " + uri })
	defer stop()
	// The connection is reported when the server is both connected and
	// present; the two may happen in either order, so it may be reported
	// twice.
	f := e.mount(mcpclient.Config{Name: "mem", Dial: m.dial, Upstreams: up})
	if g := recv(t, "connected", got); g != "mem "+mcpclient.NoticeConnected+" " {
		t.Fatalf("first notice %q", g)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := up.Session("mem").Subscribe(ctx, &mcp.SubscribeParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	if err := m.srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	if g := skipConnected(t, got); g != "mem notifications/resources/updated test://a" {
		t.Errorf("update notice %q", g)
	}
	m.srv.AddResource(&mcp.Resource{Name: "b", URI: "test://b"}, read)
	if g := recv(t, "resources list_changed", got); g != "mem notifications/resources/list_changed " {
		t.Errorf("resources notice %q", g)
	}
	m.srv.RemovePrompts("p")
	if g := recv(t, "prompts list_changed", got); g != "mem notifications/prompts/list_changed " {
		t.Errorf("prompts notice %q", g)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if g := recv(t, "removed", got); g != "mem "+mcpclient.NoticeRemoved+" " {
		t.Errorf("removal notice %q", g)
	}
	stop()
	m.srv.AddResource(&mcp.Resource{Name: "c", URI: "test://c"}, read)
	m.waitSessionsEnded(t)
}

func skipConnected(t *testing.T, got <-chan string) string {
	t.Helper()
	for {
		if g := recv(t, "a notice", got); g != "mem "+mcpclient.NoticeConnected+" " {
			return g
		}
	}
}
