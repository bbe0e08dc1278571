package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// rawPost posts one JSON-RPC message to the streamable HTTP endpoint and
// returns the response (the caller closes its body).
func rawPost(ctx context.Context, t *testing.T, url, sid, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	// A client-supplied tag must not tie the call to another request.
	req.Header.Set("Dsh-Internal-Request-Tag", "forged")
	return http.DefaultClient.Do(req)
}

// A client that drops its HTTP requests without sending a cancel
// notification gets its calls cancelled: every call ends, and no
// goroutine is left (the issue measured 2,000 aborted requests leaving
// 2,006 goroutines).
func TestHTTP_AbandonedRequestsAreCancelled(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	started, ended := make(chan struct{}, 1), make(chan struct{}, 1)
	register(t, e.root, e.reg, tools.MustDefine(tools.TypedTool[struct{}, tools.Output]{
		Name: "block", Description: "Blocks until its call is cancelled.",
		Execute: func(ctx context.Context, _ struct{}, _ *tools.Execution) (tools.Output, error) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
			return tools.Output{}, ctx.Err()
		},
	}))
	h, err := e.srv.Handler(nil)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()

	resp, err := rawPost(context.Background(), t, hs.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q", resp.StatusCode, sid)
	}
	resp, err = rawPost(context.Background(), t, hs.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	const n = 20
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			resp, err := rawPost(ctx, t, hs.URL, sid, `{"jsonrpc":"2.0","id":`+strings.Repeat("1", i+1)+`,"method":"tools/call","params":{"name":"block","arguments":{}}}`)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		<-started
		cancel() // the connection closes; no notifications/cancelled is sent
		<-errc
		select {
		case <-ended:
		case <-time.After(budget):
			t.Fatalf("call %d still runs after its request was abandoned", i)
		}
	}
	// The session lives on and serves.
	resp, err = rawPost(context.Background(), t, hs.URL, sid, `{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), "still here") {
		t.Errorf("call after the abandoned ones: %d %s", resp.StatusCode, b)
	}
	if err := e.srv.Close(); err != nil {
		t.Fatal(err)
	}
	hs.Close()
	http.DefaultClient.CloseIdleConnections()
	goleak.VerifyNone(t)
}
