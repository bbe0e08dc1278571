package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// syncBuf is a stderr that tests can wait on.
type syncBuf struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{} // cap 1: something was written
}

func newSyncBuf() *syncBuf { return &syncBuf{wrote: make(chan struct{}, 1)} }

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor waits until re matches the output and returns the submatches.
func (s *syncBuf) waitFor(t *testing.T, re *regexp.Regexp, exited <-chan int) []string {
	t.Helper()
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	for {
		if m := re.FindStringSubmatch(s.String()); m != nil {
			return m
		}
		select {
		case <-s.wrote:
		case code := <-exited:
			t.Fatalf("dsh exited (%d) before printing %v:\n%s", code, re, s.String())
		case <-deadline.C:
			t.Fatalf("no %v in:\n%s", re, s.String())
		}
	}
}

// testServerConfig writes a dsh.json mounting the test binary's own MCP
// server as "t", plus extra top-level keys.
func testServerConfig(t *testing.T, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"mcpServers": map[string]any{"t": testServerEntry()},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeConfig(t, cfg)
}

func testServerEntry() map[string]any {
	return map[string]any{"command": os.Args[0], "env": map[string]string{testServerEnv: "1"}}
}

func writeConfig(t *testing.T, cfg map[string]any) string {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "dsh.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// served is a `dsh mcp serve --http` running in process.
type served struct {
	url    string
	stderr *syncBuf
	exited chan int
	cancel context.CancelFunc
}

var servingRE = regexp.MustCompile(`serving MCP on (http://[^/ ]+/)`)

// startServe runs `dsh mcp serve --config cfg --http addr args...` and
// waits until it listens; the test's cleanup stops it and checks it
// exited 0.
func startServe(t *testing.T, cfg, addr string, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{stderr: newSyncBuf(), exited: make(chan int, 1), cancel: cancel}
	go func() {
		s.exited <- run(ctx, append([]string{"mcp", "serve", "--config", cfg, "--http", addr}, args...), strings.NewReader(""), io.Discard, s.stderr)
	}()
	s.url = s.stderr.waitFor(t, servingRE, s.exited)[1]
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-s.exited:
			if code != 0 {
				t.Errorf("dsh exited %d:\n%s", code, s.stderr.String())
			}
		case <-time.After(budget):
			t.Errorf("dsh did not stop")
		}
	})
	return s
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// post sends one MCP POST with the given headers ("Authorization",
// "Origin", "Mcp-Session-Id", "Host"...) and returns the status, the
// session id and the body.
func post(t *testing.T, url, body string, hdr map[string]string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

// noKeepAlive leaves no idle connection (nor its goroutines) behind.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func bearer(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.base.RoundTrip(r)
}

// connect opens a go-sdk client session to url with token ("" for none);
// the test's cleanup closes it.
func connect(t *testing.T, url, token string, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, opts).Connect(ctx, &mcp.StreamableClientTransport{
		Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token, tr}},
	}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func callEcho(t *testing.T, cs *mcp.ClientSession, text string) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__t__echo", Arguments: map[string]any{"text": text}})
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	return r
}

func resultText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

const testToken = "test-token-0123456789abcdef"

func TestListenAddr(t *testing.T) {
	for _, tc := range []struct {
		in, addr string
		loopback bool
		note     bool
	}{
		{":8080", "127.0.0.1:8080", true, true},
		{"8080", "127.0.0.1:8080", true, true},
		{"127.0.0.1:8080", "127.0.0.1:8080", true, false},
		{"localhost:8080", "127.0.0.1:8080", true, false},
		{"[::1]:8080", "[::1]:8080", true, false},
		{"127.0.0.2:1", "127.0.0.2:1", true, false},
		{"0.0.0.0:8080", "0.0.0.0:8080", false, false},
		{"[::]:8080", "[::]:8080", false, false},
		{"192.168.1.5:8080", "192.168.1.5:8080", false, false},
		{"dsh.example:8080", "dsh.example:8080", false, false},
	} {
		addr, lb, note, err := listenAddr(tc.in)
		if err != nil || addr != tc.addr || lb != tc.loopback || (note != "") != tc.note {
			t.Errorf("%q: %q %v %q %v", tc.in, addr, lb, note, err)
		}
	}
	for _, bad := range []string{"", "localhost", "1.2.3.4:", "a:b:c"} {
		if _, _, _, err := listenAddr(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// A bare port listens on loopback only and says so.
func TestHTTP_BarePortListensOnLoopbackAndSaysSo(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, nil), ":0")
	if !strings.HasPrefix(s.url, "http://127.0.0.1:") || !strings.Contains(s.stderr.String(), "listens on 127.0.0.1:0 only (loopback)") {
		t.Errorf("url %s\n%s", s.url, s.stderr.String())
	}
}

// A non-loopback address without authentication, and --no-auth off
// loopback, refuse to start (exit 2) and say how to configure it.
func TestHTTP_NonLoopbackWithoutAuthenticationIsRefused(t *testing.T) {
	t.Setenv(tokenEnv, "")
	cfg := testServerConfig(t, nil)
	code, _, stderr := runDsh(t, nil, "mcp", "serve", "--config", cfg, "--http", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(stderr, "a non-loopback address needs authentication: export DSH_TOKEN=") {
		t.Errorf("no auth: exit %d\n%s", code, stderr)
	}
	t.Setenv(tokenEnv, testToken)
	code, _, stderr = runDsh(t, nil, "mcp", "serve", "--config", cfg, "--http", "0.0.0.0:0", "--no-auth")
	if code != exitUsage || !strings.Contains(stderr, "--no-auth is refused on a non-loopback address") {
		t.Errorf("--no-auth: exit %d\n%s", code, stderr)
	}
	t.Setenv(tokenEnv, "short")
	code, _, stderr = runDsh(t, nil, "mcp", "serve", "--config", cfg, "--http", "127.0.0.1:0")
	if code != exitUsage || !strings.Contains(stderr, "$DSH_TOKEN is 5 characters; use at least 16") {
		t.Errorf("short token: exit %d\n%s", code, stderr)
	}
}

// Without a token a request is refused (401), with a wrong one too; the
// go-sdk client with the token lists and calls the tools.
func TestHTTP_BearerTokenIsRequired(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, nil), "127.0.0.1:0")
	if code, _, body := post(t, s.url, initBody, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d %s", code, body)
	}
	if code, _, body := post(t, s.url, initBody, bearer(testToken+"x")); code != http.StatusUnauthorized || strings.Contains(body, testToken) {
		t.Errorf("wrong token: %d %s", code, body)
	}
	if _, err := connect(t, s.url, "", nil); err == nil {
		t.Error("the go-sdk client connected without a token")
	}
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, cs, "hi"); r.IsError || resultText(r) != "hi" {
		t.Errorf("call: %+v", r)
	}
}

// With no token configured on loopback, one is generated and printed,
// and it is the one accepted.
func TestHTTP_GeneratedTokenOnLoopback(t *testing.T) {
	t.Setenv(tokenEnv, "")
	s := startServe(t, testServerConfig(t, nil), "127.0.0.1:0")
	tok := s.stderr.waitFor(t, regexp.MustCompile(`Authorization: Bearer (\S+)`), s.exited)[1]
	if code, _, _ := post(t, s.url, initBody, nil); code != http.StatusUnauthorized {
		t.Errorf("no token: %d", code)
	}
	cs, err := connect(t, s.url, tok, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, cs, "x"); resultText(r) != "x" {
		t.Errorf("call: %+v", r)
	}
}

// A request with an Origin other than a loopback one or one of
// http.allowedOrigins is refused (403), before authentication.
func TestHTTP_OriginAllowList(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, map[string]any{"http": map[string]any{"allowedOrigins": []string{"https://app.example"}}}), "127.0.0.1:0")
	for origin, want := range map[string]int{
		"http://evil.example":        http.StatusForbidden,
		"null":                       http.StatusForbidden,
		"https://app.example.evil":   http.StatusForbidden,
		"https://app.example":        http.StatusOK,
		"HTTPS://APP.EXAMPLE":        http.StatusOK,
		"http://localhost:3000":      http.StatusOK,
		"http://127.0.0.1:5173":      http.StatusOK,
		"http://localhost.evil:3000": http.StatusForbidden,
	} {
		h := bearer(testToken)
		h["Origin"] = origin
		if code, _, body := post(t, s.url, initBody, h); code != want {
			t.Errorf("Origin %s: %d, want %d (%s)", origin, code, want, body)
		}
	}
	if code, _, _ := post(t, s.url, initBody, map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("bad origin without token: %d, want 403", code)
	}
}

// A Host header naming another site (DNS rebinding) is refused (403) on
// every connection; IP literals, loopback names and http.allowedHosts
// pass.
func TestHTTP_HostHeaderIsChecked(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, map[string]any{"http": map[string]any{"allowedHosts": []string{"dsh.example"}}}), "127.0.0.1:0")
	for host, want := range map[string]int{
		"evil.example":      http.StatusForbidden,
		"evil.example:8080": http.StatusForbidden,
		"dsh.example:9":     http.StatusOK,
		"DSH.example":       http.StatusOK,
		"localhost:1":       http.StatusOK,
		"10.0.0.7:80":       http.StatusOK,
		"[::1]:80":          http.StatusOK,
	} {
		h := bearer(testToken)
		h["Host"] = host
		if code, _, body := post(t, s.url, initBody, h); code != want {
			t.Errorf("Host %s: %d, want %d (%s)", host, code, want, body)
		}
	}
}

func TestHostGuardOnAnyConnection(t *testing.T) {
	g := newHostGuard([]string{"dsh.internal:8443"})
	for host, want := range map[string]bool{
		"dsh.internal:8443": true, "dsh.internal:80": false, "dsh.internal": false,
		"192.168.0.4:8080": true, "[fe80::1]:1": true, "evil.example": false, "": false,
		"localhost.": true,
	} {
		if g.ok(host) != want {
			t.Errorf("%q: %v", host, !want)
		}
	}
}

// Through a LAN address (not loopback) a foreign Host is refused too.
func TestHTTP_HostCheckedThroughALANAddress(t *testing.T) {
	ip := lanIP(t)
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, nil), "0.0.0.0:0")
	port := s.url[strings.LastIndexByte(s.url[:len(s.url)-1], ':')+1 : len(s.url)-1]
	url := "http://" + net.JoinHostPort(ip, port) + "/"
	h := bearer(testToken)
	h["Host"] = "evil.example:" + port
	h["Origin"] = "http://evil.example:" + port
	if code, sid, body := post(t, url, initBody, h); code != http.StatusForbidden || sid != "" {
		t.Errorf("foreign Host and Origin via %s: %d %q %s", ip, code, sid, body)
	}
	if code, _, body := post(t, url, initBody, bearer(testToken)); code != http.StatusOK {
		t.Errorf("IP Host via %s: %d %s", ip, code, body)
	}
	if code, _, _ := post(t, url, initBody, nil); code != http.StatusUnauthorized {
		t.Errorf("no token via %s: %d", ip, code)
	}
}

// lanIP returns a non-loopback IPv4 address of this machine, or skips.
func lanIP(t *testing.T) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Skip(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}
