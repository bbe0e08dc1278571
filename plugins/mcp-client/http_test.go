package mcpclient_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestStreamableHTTPWithHeaders(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms.srv }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sesame" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer hs.Close()

	// Without the header the start fails.
	if _, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "web", URL: hs.URL, FailOnStartError: true}); err == nil {
		t.Fatal("unauthorized start succeeded")
	}
	f := e.mount(mcpclient.Config{Name: "web", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer sesame"}})
	if r := e.call(context.Background(), "mcp__web__echo", map[string]any{"text": "over http"}); r.IsError || text(r) != "over http" {
		t.Fatalf("echo = %+v", r)
	}
	// list_changed over the standalone SSE stream.
	addEcho(ms.srv, "more")
	e.waitStatus("resync", func(s mcpclient.Status) bool { return s.Tools == 2 })
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if got := e.names(); len(got) != 0 {
		t.Fatalf("tools after dispose: %v", got)
	}
}

// A streamable HTTP server's message larger than MaxMessageBytes fails its
// call, as a JSON body and as one SSE event, while many smaller events in
// one stream pass.
func TestStreamableHTTPMessageSizeIsBounded(t *testing.T) {
	for _, jsonResponse := range []bool{false, true} {
		t.Run(fmt.Sprintf("json=%v", jsonResponse), func(t *testing.T) {
			e := newEnv(t)
			ms := newMemServer(nil)
			addEcho(ms.srv, "echo")
			h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return ms.srv }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
			hs := httptest.NewServer(h)
			defer hs.Close()
			f := e.mount(mcpclient.Config{Name: "web", URL: hs.URL, MaxMessageBytes: 64 << 10})
			defer f.Dispose() // before hs.Close, which waits for the session's stream
			if r := e.call(context.Background(), "mcp__web__echo", map[string]any{"text": strings.Repeat("a", 32<<10)}); r.IsError {
				t.Fatalf("a message under the limit: %+v", r)
			}
			r := e.call(context.Background(), "mcp__web__echo", map[string]any{"text": strings.Repeat("a", 128<<10)})
			if !r.IsError {
				t.Errorf("a message over the limit: %v %q", r.IsError, text(r))
			}
		})
	}
}

// A server URL's query values and user info (API keys) never appear in
// the error of a failed connection.
func TestUnreachableServerURLIsRedacted(t *testing.T) {
	e := newEnv(t)
	hs := httptest.NewServer(http.NotFoundHandler())
	url := strings.Replace(hs.URL, "http://", "http://user:pa55word@", 1) + "/mcp?api_key=s3cr3t-key"
	hs.Close() // nothing listens there now
	_, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "web", URL: url, FailOnStartError: true})
	if err == nil || strings.Contains(err.Error(), "s3cr3t-key") || strings.Contains(err.Error(), "pa55word") {
		t.Errorf("error: %v", err)
	}
	e.mount(mcpclient.Config{Name: "web2", URL: url, Reconnect: mcpclient.Reconnect{MaxAttempts: -1}})
	st := e.waitStatus("failed", func(s mcpclient.Status) bool { return s.Server == "web2" && s.State == mcpclient.StateFailed })
	if st.Err == "" || strings.Contains(st.Err, "s3cr3t-key") || strings.Contains(st.Err, "pa55word") {
		t.Errorf("status error: %q", st.Err)
	}
}

// A legacy HTTP+SSE server (protocol 2024-11-05) mounts with SSE set.
func TestLegacySSEServerMounts(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	hs := httptest.NewServer(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return ms.srv }, nil))
	defer hs.Close()
	f := e.mount(mcpclient.Config{Name: "old", URL: hs.URL, SSE: true, FailOnStartError: true})
	defer f.Dispose() // before hs.Close, which waits for the event stream
	if r := e.call(context.Background(), "mcp__old__echo", map[string]any{"text": "over sse"}); r.IsError || text(r) != "over sse" {
		t.Fatalf("echo = %+v", r)
	}
}
