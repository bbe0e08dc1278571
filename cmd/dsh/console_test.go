package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/audit"
)

const testConsoleToken = "console-token-0123456789abcdef0123456789abcdef"

var consoleRE = regexp.MustCompile(`console on (http://[^/ ]+/)`)

// consoleServe starts `dsh mcp serve --http --console` in process on a
// config asking for mcp__t__echo and routing those asks to the console,
// plus extra top-level keys; it returns the MCP and console URLs.
func consoleServe(t *testing.T, extra map[string]any) (*served, string, string) {
	t.Helper()
	t.Setenv(tokenEnv, testToken)
	t.Setenv(consoleTokenEnv, testConsoleToken)
	keys := map[string]any{
		"permissions": map[string]any{"ask": []string{"mcp__t__echo"}},
		"approval":    map[string]any{"rules": map[string]string{"mcp__t__echo": "console"}, "timeout": "1h"},
	}
	for k, v := range extra {
		keys[k] = v
	}
	cfg := testServerConfig(t, keys)
	s := startServe(t, cfg, "127.0.0.1:0", "--console", "127.0.0.1:0")
	return s, s.stderr.waitFor(t, consoleRE, s.exited)[1], cfg
}

// api sends a console API request with the given headers.
func api(t *testing.T, method, u string, form url.Values, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if m == nil {
		m = map[string]any{"text": string(b)}
	}
	return resp.StatusCode, m
}

// waitAsk waits for a pending ask in the console of consoleURL.
func waitAsk(t *testing.T, consoleURL string) audit.Ask {
	t.Helper()
	deadline := time.Now().Add(budget)
	for time.Now().Before(deadline) {
		st, m := api(t, "GET", consoleURL+"api/asks?state=pending", nil, bearer(testConsoleToken))
		if st != 200 {
			t.Fatalf("asks: %d %v", st, m)
		}
		if as, _ := m["asks"].([]any); len(as) > 0 {
			b, _ := json.Marshal(as[0])
			var a audit.Ask
			_ = json.Unmarshal(b, &a)
			return a
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no pending ask in the console")
	return audit.Ask{}
}

func asyncEcho(cs *mcp.ClientSession, text string) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__t__echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "call error: " + err.Error()}}}
		}
		out <- r
	}()
	return out
}

// An ask routed to the console goes to the console, never to the
// calling client (which would approve itself), and is answered there;
// the MCP token cannot answer it, the console token cannot call tools,
// and a cross-origin or CSRF-less answer is refused.
func TestConsole_AConsoleRoutedAskIsAnsweredInTheConsoleOnly(t *testing.T) {
	s, console, _ := consoleServe(t, nil)
	var elicited atomic.Int32
	cs, err := connect(t, s.url, testToken, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		elicited.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil // a client approving its own asks
	}})
	if err != nil {
		t.Fatal(err)
	}
	res := asyncEcho(cs, "hello console")
	a := waitAsk(t, console)
	if a.Tool != "mcp__t__echo" || a.Rule != "mcp__t__echo" || !strings.Contains(a.Card, "hello console") ||
		a.Deadline.Sub(a.Created) < 59*time.Minute || a.Deadline.Sub(a.Created) > time.Hour {
		t.Fatalf("ask: %+v", a)
	}
	answer := console + "api/asks/" + a.ID
	allow := url.Values{"answer": {"allow"}}

	// The MCP client's token is no console token.
	if st, _ := api(t, "POST", answer, allow, bearer(testToken)); st != http.StatusUnauthorized {
		t.Fatalf("MCP token answered: %d", st)
	}
	// The console token calls no tool.
	if st, _, _ := post(t, s.url, initBody, bearer(testConsoleToken)); st != http.StatusUnauthorized {
		t.Fatalf("console token on the MCP endpoint: %d", st)
	}
	// Cross-origin: refused even with the right token.
	if st, _ := api(t, "POST", answer, allow, map[string]string{"Authorization": "Bearer " + testConsoleToken, "Origin": "http://evil.example"}); st != http.StatusForbidden {
		t.Fatalf("cross-origin answer: %d", st)
	}
	// An opaque origin (a sandboxed frame, a file: page) is refused too.
	if st, _ := api(t, "POST", answer, allow, map[string]string{"Authorization": "Bearer " + testConsoleToken, "Origin": "null"}); st != http.StatusForbidden {
		t.Fatalf("answer from an opaque origin: %d", st)
	}
	// DNS rebinding: a foreign Host is refused.
	req, _ := http.NewRequest("GET", console+"api/asks", nil)
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+testConsoleToken)
	if resp, err := noKeepAlive.Do(req); err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("foreign Host: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	// A logged-in browser session without the CSRF token is refused.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := browser.PostForm(console+"login", url.Values{"token": {testConsoleToken}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("login: %v %v", resp, err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "hello console") {
		t.Fatalf("the inbox page does not show the ask:\n%s", page)
	}
	resp, err = browser.PostForm(answer, allow)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("answer without CSRF token: %v %v", resp, err)
	}
	resp.Body.Close()
	csrf := regexp.MustCompile(`name="csrf" content="([^"]+)"`).FindSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token on the page")
	}
	select {
	case r := <-res:
		t.Fatalf("the call ended before any answer: %+v", r)
	default:
	}
	resp, err = browser.PostForm(answer, url.Values{"answer": {"allow"}, "csrf": {string(csrf[1])}})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("answer with CSRF token: %v %v", resp, err)
	}
	resp.Body.Close()
	r := <-res
	if r.IsError || resultText(r) != "hello console" {
		t.Fatalf("allowed call: %+v %q", r.IsError, resultText(r))
	}
	if elicited.Load() != 0 {
		t.Fatal("the client was asked to approve its own call")
	}
	// A second answer is refused: applied once.
	if st, _ := api(t, "POST", answer, allow, bearer(testConsoleToken)); st != http.StatusConflict {
		t.Fatalf("second answer: %d", st)
	}
	// The record says who approved, through which channel.
	deadline := time.Now().Add(budget)
	for {
		st, m := api(t, "GET", console+"api/calls?tool=mcp__t__echo&code=ok", nil, bearer(testConsoleToken))
		calls, _ := m["calls"].([]any)
		if st == 200 && len(calls) == 1 {
			b, _ := json.Marshal(calls[0])
			var c audit.Call
			_ = json.Unmarshal(b, &c)
			if len(c.Decisions) < 2 || c.Decisions[0].Outcome != "ask" || c.Decisions[0].Rule != "mcp__t__echo" ||
				c.Decisions[1].Channel != "console" || c.Decisions[1].Approver != "console" || c.Identity != "token:default" {
				t.Fatalf("record: %+v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no record: %d %v", st, m)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Reject, through the API.
	res = asyncEcho(cs, "no way")
	a = waitAsk(t, console)
	if st, m := api(t, "POST", console+"api/asks/"+a.ID, url.Values{"answer": {"reject"}}, bearer(testConsoleToken)); st != 200 {
		t.Fatalf("reject: %d %v", st, m)
	}
	if r := <-res; !r.IsError || !strings.Contains(resultText(r), "rejected") {
		t.Fatalf("rejected call: %+v %q", r.IsError, resultText(r))
	}
}

// The console refuses to start with a token the MCP face also accepts,
// and off loopback without a configured token.
func TestConsole_TokensAreSeparateAndConfiguredOffLoopback(t *testing.T) {
	if _, err := setupConsoleAuth(consoleConfig(), "dsh.json", true, func(k string) string {
		if k == consoleTokenEnv {
			return testToken
		}
		return ""
	}, func(tok string) bool { return tok == testToken }); err == nil || !strings.Contains(err.Error(), "also accepted as an MCP token") {
		t.Fatalf("shared token: %v", err)
	}
	if _, err := setupConsoleAuth(consoleConfig(), "dsh.json", false, func(string) string { return "" }, nil); err == nil || !strings.Contains(err.Error(), "non-loopback") {
		t.Fatalf("non-loopback without token: %v", err)
	}
	a, err := setupConsoleAuth(consoleConfig(), "dsh.json", true, func(string) string { return "" }, nil)
	if err != nil || a.generated == "" {
		t.Fatalf("loopback: %+v %v", a, err)
	}
}

func consoleConfig() dshconfig.Console { return dshconfig.Console{} }

// "approval.identities" sends every ask of an untrusted caller to the
// console, while another caller's asks still go to its own client.
func TestConsole_AnIdentityRoutedToTheConsole(t *testing.T) {
	const agentTok, personTok = "agent-token-0123456789abcdef0123456789ab", "person-token-0123456789abcdef0123456789a"
	t.Setenv("AGENT_TOK", agentTok)
	t.Setenv("PERSON_TOK", personTok)
	t.Setenv(consoleTokenEnv, testConsoleToken)
	cfg := testServerConfig(t, map[string]any{
		"http":        map[string]any{"tokens": map[string]any{"agent": map[string]string{"env": "AGENT_TOK"}, "person": map[string]string{"env": "PERSON_TOK"}}},
		"permissions": map[string]any{"ask": []string{"mcp__t__echo"}},
		"approval":    map[string]any{"identities": map[string]string{"token:agent": "console"}},
	})
	s := startServe(t, cfg, "127.0.0.1:0", "--console", "127.0.0.1:0")
	console := s.stderr.waitFor(t, consoleRE, s.exited)[1]
	var elicited atomic.Int32
	accept := &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		elicited.Add(1)
		return &mcp.ElicitResult{Action: "accept"}, nil
	}}
	person, err := connect(t, s.url, personTok, accept)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, person, "mine"); r.IsError || elicited.Load() != 1 {
		t.Fatalf("the person's own ask: %+v, elicited %d", r, elicited.Load())
	}
	agent, err := connect(t, s.url, agentTok, accept)
	if err != nil {
		t.Fatal(err)
	}
	res := asyncEcho(agent, "agent's")
	ask := waitAsk(t, console)
	if ask.Identity != "token:agent" || elicited.Load() != 1 {
		t.Fatalf("the agent's ask: %+v, elicited %d", ask, elicited.Load())
	}
	if st, m := api(t, "POST", console+"api/asks/"+ask.ID, url.Values{"answer": {"reject"}}, bearer(testConsoleToken)); st != 200 {
		t.Fatalf("reject: %d %v", st, m)
	}
	if r := <-res; !r.IsError {
		t.Fatalf("rejected in the console, yet: %+v", r)
	}
}
