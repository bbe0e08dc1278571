package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	aliceToken = "alice-token-0123456789abcdef"
	bobToken   = "bob-token-0123456789abcdef00"
)

// twoIdentities configures the tokens of alice and bob (by environment
// variable) and the given limits.
func twoIdentities(t *testing.T, limits map[string]any) string {
	t.Setenv("ALICE_TOK", aliceToken)
	t.Setenv("BOB_TOK", bobToken)
	h := map[string]any{"tokens": map[string]any{"alice": map[string]any{"env": "ALICE_TOK"}, "bob": map[string]any{"env": "BOB_TOK"}}}
	if limits != nil {
		h["limits"] = limits
	}
	return testServerConfig(t, map[string]any{"http": h})
}

const initializedBody = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
const listBody = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`

// openRaw initializes a session with raw HTTP and returns its id.
func openRaw(t *testing.T, url, token string) string {
	t.Helper()
	code, sid, body := post(t, url, initBody, bearer(token))
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q %s", code, sid, body)
	}
	h := bearer(token)
	h["Mcp-Session-Id"] = sid
	if code, _, body := post(t, url, initializedBody, h); code != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", code, body)
	}
	return sid
}

func withSession(token, sid string) map[string]string {
	h := bearer(token)
	h["Mcp-Session-Id"] = sid
	return h
}

func deleteSession(t *testing.T, url, token, sid string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	for k, v := range withSession(token, sid) {
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatalf("DELETE: %v", err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A session belongs to the identity that opened it: another identity
// using its id is refused (403) and cannot close it; a guessed id is
// unknown (404).
func TestHTTP_SessionBelongsToItsIdentity(t *testing.T) {
	s := startServe(t, twoIdentities(t, nil), "127.0.0.1:0")
	sid := openRaw(t, s.url, aliceToken)
	if code, _, body := post(t, s.url, listBody, withSession(aliceToken, sid)); code != http.StatusOK || !strings.Contains(body, "mcp__t__echo") {
		t.Fatalf("alice lists: %d %s", code, body)
	}
	if code, _, body := post(t, s.url, listBody, withSession(bobToken, sid)); code != http.StatusForbidden || strings.Contains(body, "mcp__t__echo") {
		t.Errorf("bob reuses alice's session: %d %s", code, body)
	}
	if code := deleteSession(t, s.url, bobToken, sid); code != http.StatusForbidden {
		t.Errorf("bob deletes alice's session: %d", code)
	}
	if code, _, _ := post(t, s.url, listBody, withSession(aliceToken, sid)); code != http.StatusOK {
		t.Errorf("alice's session after bob's DELETE: %d", code)
	}
	for range 100 {
		b := make([]byte, 16)
		_, _ = rand.Read(b)
		guess := hex.EncodeToString(b)
		if code, _, _ := post(t, s.url, listBody, withSession(aliceToken, guess)); code != http.StatusNotFound {
			t.Fatalf("guessed session id %s: %d", guess, code)
		}
	}
	if code := deleteSession(t, s.url, aliceToken, sid); code != http.StatusNoContent {
		t.Errorf("alice deletes her session: %d", code)
	}
	if code, _, _ := post(t, s.url, listBody, withSession(aliceToken, sid)); code != http.StatusNotFound {
		t.Errorf("after DELETE: %d", code)
	}
}

// Closing a session with HTTP DELETE while one of its calls runs
// cancels the call and answers at once.
func TestHTTP_DeleteCancelsTheSessionsCalls(t *testing.T) {
	s := startServe(t, twoIdentities(t, map[string]any{"maxCallsPerSession": 1}), "127.0.0.1:0")
	cs, err := connect(t, s.url, aliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	callDone := startBlock(t, cs)
	deleted := make(chan int, 1)
	go func() { deleted <- deleteSession(t, s.url, aliceToken, cs.ID()) }()
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Errorf("DELETE: %d", code)
		}
	case <-time.After(budget):
		t.Fatal("DELETE hung while a call ran")
	}
	select {
	case <-callDone:
	case <-time.After(budget):
		t.Fatal("the call still runs after its session was deleted")
	}
}

// startBlock starts a "block" call on cs and waits until the server
// runs it; the returned channel gets the call's error.
func startBlock(t *testing.T, cs *mcp.ClientSession) <-chan error {
	t.Helper()
	marker := filepath.Join(t.TempDir(), "started")
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__t__block", Arguments: map[string]any{"marker": marker}})
		done <- err
	}()
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(marker); err == nil {
			return done
		}
		select {
		case err := <-done:
			t.Fatalf("the block call returned: %v", err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatal("the block call never started")
	return nil
}

// Past each limit a request is refused cleanly: sessions in all and per
// identity (503 with a JSON-RPC error), calls per session (a JSON-RPC
// error), a body too large (413), a malformed batch (400); afterwards the
// gateway serves as before.
func TestHTTP_LimitsRefuseCleanly(t *testing.T) {
	s := startServe(t, twoIdentities(t, map[string]any{"maxSessions": 3, "maxSessionsPerIdentity": 2, "maxCallsPerSession": 1, "maxBodyBytes": 65536}), "127.0.0.1:0")
	a1, err := connect(t, s.url, aliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	openRaw(t, s.url, aliceToken)
	if code, sid, body := post(t, s.url, initBody, bearer(aliceToken)); code != http.StatusServiceUnavailable || sid != "" ||
		!strings.Contains(body, `"code":-32000`) || !strings.Contains(body, "2 open for this identity") {
		t.Errorf("alice's third session: %d %q %s", code, sid, body)
	}
	openRaw(t, s.url, bobToken)
	if code, _, body := post(t, s.url, initBody, bearer(bobToken)); code != http.StatusServiceUnavailable || !strings.Contains(body, "3 open, the limit") {
		t.Errorf("fourth session: %d %s", code, body)
	}

	// Calls per session.
	callDone := startBlock(t, a1)
	_, refused := a1.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__t__echo", Arguments: map[string]any{"text": "x"}})
	var werr *jsonrpc.Error
	if !errors.As(refused, &werr) || werr.Code != -32000 || !strings.Contains(werr.Message, "too many calls in flight on this session (limit 1)") {
		t.Errorf("second call in flight: %v", refused)
	}
	if code := deleteSession(t, s.url, aliceToken, a1.ID()); code != http.StatusNoContent {
		t.Errorf("DELETE: %d", code)
	}
	<-callDone

	// Bodies and batches.
	big := strings.Repeat("x", 65537)
	if code, _, body := post(t, s.url, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"`+big+`"}}`, bearer(aliceToken)); code != http.StatusRequestEntityTooLarge {
		t.Errorf("large body: %d %s", code, body)
	}
	for _, batch := range []string{`[`, `[]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]`, `[{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}},{"jsonrpc":"2.0","id":1}]`, `{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`} {
		if code, _, body := post(t, s.url, batch, bearer(aliceToken)); code != http.StatusBadRequest && code != http.StatusServiceUnavailable {
			t.Errorf("malformed %q: %d %s", batch, code, body)
		}
	}
	bobSid := openRaw(t, s.url, aliceToken)
	if code, _, body := post(t, s.url, `[{"jsonrpc":"2.0","id":3,"method":"tools/list"},{"jsonrpc":"2.0","id":4,"method":"tools/list"}]`, withSession(aliceToken, bobSid)); code != http.StatusBadRequest {
		t.Errorf("batch on a 2025-06-18 session: %d %s", code, body)
	}
	cs, err := connect(t, s.url, bobToken, nil)
	if err == nil {
		t.Errorf("bob got a session past the limit")
		_ = cs
	}
}

// A 100 MB body is refused (413) whether announced by Content-Length or
// streamed chunked; slow headers and a trickled body are cut off; the
// gateway's RSS stays bounded and its goroutines return to the baseline.
func TestHTTP_HugeBodiesAndSlowClientsAreCutOff(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	// s reads bodies for as long as a huge one could take on a loaded
	// machine, so that the size alone refuses it; slow refuses slow
	// headers and bodies after a second (they never end).
	s := startServe(t, testServerConfig(t, map[string]any{"http": map[string]any{"limits": map[string]any{"bodyTimeout": "10m"}}}), "127.0.0.1:0")
	slow := startServe(t, testServerConfig(t, map[string]any{"http": map[string]any{"limits": map[string]any{"bodyTimeout": "1s", "headerTimeout": "1s"}}}), "127.0.0.1:0")
	// Raw requests without keep-alive: no client goroutine or pooled
	// connection of this test blurs the gateway's goroutine count.
	sid := openRaw(t, s.url, testToken)
	echo := func(text string) string {
		_, _, body := post(t, s.url, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"mcp__t__echo","arguments":{"text":"`+text+`"}}}`, withSession(testToken, sid))
		return body
	}
	echo("warm")
	runtime.GC()
	baseRSS, baseG := rss(t), runtime.NumGoroutine()
	const hundredMB = 100 << 20
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		var body io.Reader = io.LimitReader(zeros{}, hundredMB)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url, body)
		if i%2 == 0 {
			req.ContentLength = hundredMB
		} else {
			req.ContentLength = -1 // chunked
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := noKeepAlive.Do(req)
		if err == nil {
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("100 MB body %d: %d", i, resp.StatusCode)
			}
			resp.Body.Close()
		} else if !isConnReset(err) {
			t.Errorf("100 MB body %d: %v", i, err)
		}
		cancel()
	}

	// Slow headers: the connection is closed once the header timeout
	// passes (the headers never end).
	c, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(slow.url, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	_ = c.SetReadDeadline(time.Now().Add(budget))
	if _, err := io.ReadAll(c); err != nil {
		t.Errorf("slow headers: the connection was not closed: %v", err)
	}
	c.Close()

	// A trickled body (it never ends) is answered 408 after bodyTimeout.
	c, err = net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(slow.url, "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer "+testToken+"\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
	_ = c.SetReadDeadline(time.Now().Add(budget))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("trickled body: %v %v", resp, err)
	}
	c.Close()

	if body := echo("still"); !strings.Contains(body, `"text":"still"`) {
		t.Errorf("after the attacks: %s", body)
	}
	runtime.GC()
	// Each refused body costs at most a few buffers of maxBodyBytes (4
	// MiB), reused; reading them whole would cost 600 MB.
	bound := int64(64 << 20)
	if raceEnabled {
		bound *= 4
	}
	if grown := rss(t) - baseRSS; grown > bound {
		t.Errorf("RSS grew by %d MiB across 600 MB of refused bodies (bound %d MiB)", grown>>20, bound>>20)
	} else {
		t.Logf("RSS grew by %d MiB across 600 MB of refused bodies", grown>>20)
	}
	deadline := time.Now().Add(budget)
	for runtime.NumGoroutine() > baseG && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseG {
		t.Errorf("goroutines %d, baseline %d", g, baseG)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func isConnReset(err error) bool {
	s := err.Error()
	return strings.Contains(s, "connection reset") || strings.Contains(s, "broken pipe")
}

// rss is this process's resident set size in bytes.
func rss(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Skip("no VmRSS")
	return 0
}

// A session that receives no request for sessionIdleTimeout is closed
// (its id is then unknown, 404) and no longer counts toward the limits.
func TestHTTP_IdleSessionsExpire(t *testing.T) {
	s := startServe(t, twoIdentities(t, map[string]any{"sessionIdleTimeout": "100ms", "maxSessions": 1}), "127.0.0.1:0")
	sid := openRaw(t, s.url, aliceToken)
	deadline := time.Now().Add(budget)
	for {
		code, _, _ := post(t, s.url, listBody, withSession(aliceToken, sid))
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the idle session never expired (last %d)", code)
		}
		time.Sleep(time.Second) // longer than the idle timeout: each probe finds it idle
	}
	// The expired session leaves room under maxSessions 1 once its
	// cleanup (after the go-sdk forgot its id) has run.
	for {
		code, sid, body := post(t, s.url, initBody, bearer(bobToken))
		if code == http.StatusOK && sid != "" {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("a new session after the expiry: %d %s", code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
