package mcpclient_test

import (
	"context"
	"net/http"
	"net/http/httptest"
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
