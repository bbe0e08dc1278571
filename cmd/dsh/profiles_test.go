package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/audit"
)

const (
	pAliceToken = "alice-token-0123456789abcdef"
	pBobToken   = "bob-token-0123456789abcdef01"
	pCarolToken = "carol-token-0123456789abcdef"
)

// profileServe serves the test server with three tokens (alice, bob,
// carol) and the given profiles and http extras.
func profileServe(t *testing.T, profiles map[string]any, perms map[string]any, httpExtra map[string]any, args ...string) *served {
	t.Helper()
	return profileServeWith(t, map[string]any{"permissions": perms, "profiles": profiles}, httpExtra, args...)
}

// profileServeWith is profileServe with any top-level keys.
func profileServeWith(t *testing.T, top map[string]any, httpExtra map[string]any, args ...string) *served {
	t.Helper()
	t.Setenv(tokenEnv, "")
	t.Setenv("ALICE_TOKEN", pAliceToken)
	t.Setenv("BOB_TOKEN", pBobToken)
	t.Setenv("CAROL_TOKEN", pCarolToken)
	h := map[string]any{"tokens": map[string]any{
		"alice": map[string]string{"env": "ALICE_TOKEN"},
		"bob":   map[string]string{"env": "BOB_TOKEN"},
		"carol": map[string]string{"env": "CAROL_TOKEN"},
	}}
	for k, v := range httpExtra {
		h[k] = v
	}
	top["http"] = h
	return startServe(t, testServerConfig(t, top), "127.0.0.1:0", args...)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// denied reports whether r is a call refused by a permission rule.
func denied(r *mcp.CallToolResult) bool {
	m, _ := r.Meta[mcpErrorMeta].(map[string]any)
	return r.IsError && m["code"] == "DENIED"
}

const mcpErrorMeta = "dsh/error"

// Each token's identity gets its profile's rules: the same call is
// allowed for one and denied for the other; an identity no profile maps
// gets the top-level permissions (the default profile), and each
// session's tool list follows its own rules.
func TestHTTP_ProfilesByTokenDecideEachIdentitysCalls(t *testing.T) {
	s := profileServe(t, map[string]any{
		"reader": map[string]any{"match": []any{map[string]string{"token": "alice"}},
			"permissions": map[string]any{"deny": []string{"mcp__t__echo(text:secret*)"}}},
		"writer": map[string]any{"match": []any{map[string]string{"token": "bob"}},
			"permissions": map[string]any{"allow": []string{"mcp__t__echo"}, "defaultMode": "deny"}},
	}, map[string]any{"deny": []string{"mcp__t__echo"}}, nil)
	alice, err := connect(t, s.url, pAliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connect(t, s.url, pBobToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := connect(t, s.url, pCarolToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, alice, "hello"); r.IsError || resultText(r) != "hello" {
		t.Errorf("alice hello: %+v", r)
	}
	if r := callEcho(t, alice, "secret plans"); !denied(r) {
		t.Errorf("alice secret: not denied: %+v", r)
	}
	if r := callEcho(t, bob, "secret plans"); r.IsError || resultText(r) != "secret plans" {
		t.Errorf("bob secret: %+v", r)
	}
	if r := callEcho(t, carol, "hello"); !denied(r) {
		t.Errorf("carol (unmapped: the top-level deny) hello: not denied: %+v", r)
	}
	if n := toolNames(t, alice); !slices.Contains(n, "mcp__t__echo") {
		t.Errorf("alice's tools %v", n)
	}
	if n := toolNames(t, carol); slices.Contains(n, "mcp__t__echo") {
		t.Errorf("carol's tools %v: the top-level denies echo without condition", n)
	}
}

// With http.unmapped "refuse", an identity no profile maps gets no
// session; a mapped one does.
func TestHTTP_UnmappedIdentityRefused(t *testing.T) {
	s := profileServe(t, map[string]any{
		"p": map[string]any{"match": []any{map[string]string{"token": "alice"}}, "permissions": map[string]any{}},
	}, map[string]any{}, map[string]any{"unmapped": "refuse"})
	if _, err := connect(t, s.url, pAliceToken, nil); err != nil {
		t.Fatalf("alice: %v", err)
	}
	code, sid, body := post(t, s.url, initBody, bearer(pCarolToken))
	if code != http.StatusForbidden || sid != "" || !strings.Contains(body, "matches no profile") {
		t.Errorf("carol: %d %q %s", code, sid, body)
	}
}

// A JWT maps to a profile by a claim's value (an element of an array
// claim) or by its subject; one that matches neither gets the top-level
// permissions.
func TestHTTP_ProfileByJWTClaim(t *testing.T) {
	t.Setenv(tokenEnv, "")
	iss := newTestIssuer(t)
	cfg := testServerConfig(t, map[string]any{
		"http": map[string]any{
			"jwt":      map[string]any{"jwksUrl": iss.url, "issuer": iss.name, "audience": "dsh-test"},
			"resource": "http://127.0.0.1/mcp",
		},
		"permissions": map[string]any{"deny": []string{"mcp__t__echo"}},
		"profiles": map[string]any{
			"ci": map[string]any{"match": []any{map[string]string{"claim": "groups", "value": "ci-bots"}},
				"permissions": map[string]any{"allow": []string{"mcp__t__echo(text:build*)"}, "defaultMode": "deny"}},
			"dev": map[string]any{"match": []any{map[string]string{"sub": "dana"}},
				"permissions": map[string]any{"defaultMode": "allow"}},
		},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	ci, err := connect(t, s.url, iss.token(t, iss.key, jwt.MapClaims{"sub": "robot", "groups": []string{"x", "ci-bots"}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	dev, err := connect(t, s.url, iss.token(t, iss.key, jwt.MapClaims{"sub": "dana"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	other, err := connect(t, s.url, iss.token(t, iss.key, jwt.MapClaims{"sub": "eve", "groups": []string{"ci-bots-2"}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, ci, "build 1"); r.IsError || resultText(r) != "build 1" {
		t.Errorf("ci build: %+v", r)
	}
	if r := callEcho(t, ci, "deploy"); !denied(r) {
		t.Errorf("ci deploy: not denied: %+v", r)
	}
	if r := callEcho(t, dev, "deploy"); r.IsError || resultText(r) != "deploy" {
		t.Errorf("dev deploy: %+v", r)
	}
	if r := callEcho(t, other, "build 1"); !denied(r) {
		t.Errorf("unmapped JWT: not denied: %+v", r)
	}
}

// A profile's tools mode is its sessions' presentation: code shows
// run_code only, native the tools themselves, in the same gateway.
func TestHTTP_ProfileToolsModePresentsPerSession(t *testing.T) {
	if codeRuntimePlugin == nil {
		t.Skip("built without Code Mode")
	}
	s := profileServe(t, map[string]any{
		"ci":  map[string]any{"match": []any{map[string]string{"token": "alice"}}, "permissions": map[string]any{}, "tools": map[string]any{"mode": "code"}},
		"dev": map[string]any{"match": []any{map[string]string{"token": "bob"}}, "permissions": map[string]any{}, "tools": map[string]any{"mode": "native"}},
	}, map[string]any{}, nil)
	alice, err := connect(t, s.url, pAliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connect(t, s.url, pBobToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	carol, err := connect(t, s.url, pCarolToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := toolNames(t, alice); !slices.Equal(n, []string{"run_code"}) {
		t.Errorf("alice (code): %v", n)
	}
	for who, cs := range map[string]*mcp.ClientSession{"bob (native)": bob, "carol (the top-level mode)": carol} {
		if n := toolNames(t, cs); slices.Contains(n, "run_code") || !slices.Contains(n, "mcp__t__echo") {
			t.Errorf("%s: %v", who, n)
		}
	}
}

// A profile that does not parse refuses the whole file at start, naming
// its place.
func TestHTTP_BrokenProfileRefusesTheFile(t *testing.T) {
	t.Setenv("ALICE_TOKEN", pAliceToken)
	cfg := testServerConfig(t, map[string]any{
		"http": map[string]any{"tokens": map[string]any{"alice": map[string]string{"env": "ALICE_TOKEN"}}},
		"profiles": map[string]any{"p": map[string]any{"match": []any{map[string]string{"token": "alice"}},
			"permissions": map[string]any{"allow": []string{"mcp__t__echo", "mcp__t__echo(", "x"}}}},
	})
	var stderr strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	code := run(ctx, []string{"mcp", "serve", "--config", cfg, "--http", "127.0.0.1:0"}, strings.NewReader(""), &strings.Builder{}, &stderr)
	if code != exitUsage || !strings.Contains(stderr.String(), "profiles.p.permissions.allow[1]: ") {
		t.Errorf("exit %d:\n%s", code, stderr.String())
	}
}

// An "always" answer is kept per identity (and session): two identities
// on the same profile, whose rules ask, are asked separately; after
// alice's "always" her next call is not asked, and bob's still is. Each
// call's record names its identity and profile.
func TestHTTP_AlwaysAnswerDoesNotCarryToAnotherIdentity(t *testing.T) {
	t.Setenv(consoleTokenEnv, testConsoleToken)
	s := profileServeWith(t, map[string]any{
		"profiles": map[string]any{"asked": map[string]any{
			"match":       []any{map[string]string{"token": "alice"}, map[string]string{"token": "bob"}},
			"permissions": map[string]any{"ask": []string{"mcp__t__echo"}}}},
		"approval": map[string]any{"rules": map[string]string{"mcp__t__echo": "console"}, "timeout": "1h"},
	}, nil, "--console", "127.0.0.1:0")
	console := s.stderr.waitFor(t, consoleRE, s.exited)[1]
	alice, err := connect(t, s.url, pAliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connect(t, s.url, pBobToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := asyncEcho(alice, "first")
	a := waitAsk(t, console)
	if a.Identity != "token:alice" {
		t.Fatalf("ask %+v", a)
	}
	if st, m := api(t, "POST", console+"api/asks/"+a.ID, url.Values{"answer": {"always"}}, bearer(testConsoleToken)); st != 200 {
		t.Fatalf("always: %d %v", st, m)
	}
	if r := <-res; r.IsError || resultText(r) != "first" {
		t.Fatalf("alice first: %+v", r)
	}
	if r := callEcho(t, alice, "second"); r.IsError || resultText(r) != "second" {
		t.Fatalf("alice second (granted always): %+v", r)
	}
	res = asyncEcho(bob, "bob's")
	b := waitAsk(t, console)
	if b.Identity != "token:bob" {
		t.Fatalf("bob's ask %+v", b)
	}
	if st, m := api(t, "POST", console+"api/asks/"+b.ID, url.Values{"answer": {"reject"}}, bearer(testConsoleToken)); st != 200 {
		t.Fatalf("reject: %d %v", st, m)
	}
	if r := <-res; !r.IsError {
		t.Fatalf("bob's call ran on alice's always: %+v", r)
	}
	// The records name identity and profile.
	deadline := time.Now().Add(budget)
	for {
		st, m := api(t, "GET", console+"api/calls?tool=mcp__t__echo", nil, bearer(testConsoleToken))
		calls, _ := m["calls"].([]any)
		seen := map[string]string{}
		for _, x := range calls {
			raw, _ := json.Marshal(x)
			var c audit.Call
			_ = json.Unmarshal(raw, &c)
			if c.Unfinished() || len(c.Decisions) == 0 {
				continue
			}
			seen[c.Identity] += c.Decisions[0].Profile + ","
		}
		if st == 200 && seen["token:alice"] == "asked,asked," && seen["token:bob"] == "asked," {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("records: %d %v", st, seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A profile's tools mode code or both is refused at load by a dsh built
// without Code Mode, naming the key.
func TestProfileCodeModeRefusedWithoutCodeMode(t *testing.T) {
	saved := codeRuntimePlugin
	codeRuntimePlugin = nil
	defer func() { codeRuntimePlugin = saved }()
	t.Setenv("ALICE_TOKEN", pAliceToken)
	cfgPath := testServerConfig(t, map[string]any{
		"http": map[string]any{"tokens": map[string]any{"alice": map[string]string{"env": "ALICE_TOKEN"}}},
		"profiles": map[string]any{"ci": map[string]any{"match": []any{map[string]string{"token": "alice"}},
			"permissions": map[string]any{}, "tools": map[string]any{"mode": "both"}}},
	})
	cfg, err := dshconfig.Load(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	g, err := openGatewayWith(cfg, newLogger(io.Discard, false), true)
	if err == nil {
		g.Close()
		t.Fatal("opened")
	}
	if !strings.Contains(err.Error(), "profiles.ci.tools.mode: tools mode \"both\" needs Code Mode, and this dsh was built without it") {
		t.Errorf("error: %v", err)
	}
}

// With --watch, a valid new file replaces the profiles, deciding the
// next call of a session opened before; an invalid profile refuses the
// file whole (the running profiles stay); an identity that stops
// resolving (no profile, http.unmapped "refuse") has its calls denied.
func TestHTTP_WatchReloadsProfiles(t *testing.T) {
	t.Setenv(tokenEnv, "")
	t.Setenv("ALICE_TOKEN", pAliceToken)
	t.Setenv("BOB_TOKEN", pBobToken)
	tokens := map[string]any{"alice": map[string]string{"env": "ALICE_TOKEN"}, "bob": map[string]string{"env": "BOB_TOKEN"}}
	conf := func(unmapped string, who string, perms map[string]any) map[string]any {
		h := map[string]any{"tokens": tokens}
		if unmapped != "" {
			h["unmapped"] = unmapped
		}
		return map[string]any{"mcpServers": map[string]any{"t": testServerEntry()}, "http": h,
			"profiles": map[string]any{"p": map[string]any{"match": []any{map[string]string{"token": who}}, "permissions": perms}}}
	}
	cfg := writeConfig(t, conf("", "alice", map[string]any{"deny": []string{"mcp__t__echo(text:x*)"}}))
	s := startServe(t, cfg, "127.0.0.1:0", "--watch")
	alice, err := connect(t, s.url, pAliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := callEcho(t, alice, "x1"); !denied(r) {
		t.Fatalf("before: %+v", r)
	}
	rewrite(t, cfg, conf("", "alice", map[string]any{"deny": []string{"mcp__t__echo(text:y*)"}}))
	s.stderr.waitFor(t, regexp.MustCompile(`reloaded `+regexp.QuoteMeta(cfg)), s.exited)
	if r := callEcho(t, alice, "x2"); r.IsError || resultText(r) != "x2" {
		t.Fatalf("after the reload x: %+v", r)
	}
	if r := callEcho(t, alice, "y1"); !denied(r) {
		t.Fatalf("after the reload y: %+v", r)
	}
	rewrite(t, cfg, conf("", "alice", map[string]any{"deny": []string{"mcp__t__echo(text:"}}))
	s.stderr.waitFor(t, regexp.MustCompile(`is invalid; the running config stays:\ndsh: `+regexp.QuoteMeta(cfg)+`: profiles.p.permissions.deny\[0\]`), s.exited)
	if r := callEcho(t, alice, "y2"); !denied(r) {
		t.Fatalf("after an invalid file: %+v", r)
	}
	rewrite(t, cfg, conf("refuse", "bob", map[string]any{}))
	s.stderr.waitFor(t, regexp.MustCompile(`(?s)reloaded .*reloaded `+regexp.QuoteMeta(cfg)), s.exited)
	if r := callEcho(t, alice, "x3"); !denied(r) {
		t.Fatalf("alice, no longer mapped, unmapped refused: %+v %q\n%s", r, resultText(r), s.stderr.String())
	}
}

// `dsh tools list --profile` and `dsh tools call --profile` act as an
// identity of that profile would: its tools mode presents the tools
// (run_code under code) and its rules hide and decide them.
func TestToolsCmd_ProfileFlag(t *testing.T) {
	if codeRuntimePlugin == nil {
		t.Skip("built without Code Mode")
	}
	cfg := testServerConfig(t, map[string]any{
		"http": map[string]any{"tokens": map[string]any{"ci": map[string]string{"env": "CI_TOKEN"}, "dev": map[string]string{"env": "DEV_TOKEN"}}},
		"profiles": map[string]any{
			"ci": map[string]any{"match": []any{map[string]string{"token": "ci"}}, "tools": map[string]any{"mode": "code"},
				"permissions": map[string]any{"deny": []string{"mcp__t__block"}}},
			"dev": map[string]any{"match": []any{map[string]string{"token": "dev"}},
				"permissions": map[string]any{"deny": []string{"mcp__t__echo"}}},
		},
	})
	cli := func(args ...string) (int, string, string) {
		var out, errb strings.Builder
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		code := run(ctx, append([]string{"tools"}, args...), strings.NewReader(""), &out, &errb)
		return code, out.String(), errb.String()
	}
	code, out, errs := cli("list", "--config", cfg, "--profile", "ci")
	if code != 0 || !strings.Contains(out, "run_code\t") || !strings.Contains(out, "mcp__t__echo\t") || strings.Contains(out, "mcp__t__block") {
		t.Errorf("list ci: %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("list", "--config", cfg, "--profile", "dev")
	if code != 0 || strings.Contains(out, "run_code") || strings.Contains(out, "mcp__t__echo") || !strings.Contains(out, "mcp__t__block\t") {
		t.Errorf("list dev: %d\n%s%s", code, out, errs)
	}
	code, out, errs = cli("list", "--config", cfg)
	if code != 0 || strings.Contains(out, "run_code") || !strings.Contains(out, "mcp__t__echo\t") || !strings.Contains(out, "mcp__t__block\t") {
		t.Errorf("list (top-level): %d\n%s%s", code, out, errs)
	}
	if code, out, errs = cli("call", "--config", cfg, "--profile", "dev", "mcp__t__echo", `{"text":"hi"}`); code != exitFailure || !strings.Contains(errs, "DENIED") {
		t.Errorf("call dev: %d %q %s", code, out, errs)
	}
	if code, out, errs = cli("call", "--config", cfg, "--profile", "ci", "mcp__t__echo", `{"text":"hi"}`); code != exitFailure || !strings.Contains(errs, "UNKNOWN_TOOL") {
		t.Errorf("call ci (code: from run_code only): %d %q %s", code, out, errs)
	}
	if code, out, errs = cli("call", "--config", cfg, "mcp__t__echo", `{"text":"hi"}`); code != 0 || out != "hi\n" {
		t.Errorf("call (top-level): %d %q %s", code, out, errs)
	}
	if code, _, errs = cli("list", "--config", cfg, "--profile", "nope"); code != exitUsage || !strings.Contains(errs, `--profile "nope": `) || !strings.Contains(errs, "ci, dev, default") {
		t.Errorf("unknown profile: %d %s", code, errs)
	}
}

// With --watch, a profile's new tools mode applies to its sessions
// already open (their tool list changes, list_changed is sent).
func TestHTTP_WatchReloadsProfileToolsMode(t *testing.T) {
	if codeRuntimePlugin == nil {
		t.Skip("built without Code Mode")
	}
	t.Setenv(tokenEnv, "")
	t.Setenv("ALICE_TOKEN", pAliceToken)
	t.Setenv("BOB_TOKEN", pBobToken)
	conf := func(aliceMode, bobMode string) map[string]any {
		return map[string]any{"mcpServers": map[string]any{"t": testServerEntry()},
			"http": map[string]any{"tokens": map[string]any{"alice": map[string]string{"env": "ALICE_TOKEN"}, "bob": map[string]string{"env": "BOB_TOKEN"}}},
			"profiles": map[string]any{
				"a": map[string]any{"match": []any{map[string]string{"token": "alice"}}, "permissions": map[string]any{}, "tools": map[string]any{"mode": aliceMode}},
				"b": map[string]any{"match": []any{map[string]string{"token": "bob"}}, "permissions": map[string]any{}, "tools": map[string]any{"mode": bobMode}},
			}}
	}
	cfg := writeConfig(t, conf("native", "code"))
	s := startServe(t, cfg, "127.0.0.1:0", "--watch")
	changed := make(chan struct{}, 16)
	opts := &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}}
	alice, err := connect(t, s.url, pAliceToken, opts)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := connect(t, s.url, pBobToken, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := toolNames(t, alice), toolNames(t, bob); slices.Contains(a, "run_code") || !slices.Equal(b, []string{"run_code"}) {
		t.Fatalf("before: alice %v, bob %v", a, b)
	}
	rewrite(t, cfg, conf("code", "native"))
	s.stderr.waitFor(t, regexp.MustCompile(`reloaded `+regexp.QuoteMeta(cfg)), s.exited)
	deadline := time.NewTimer(budget)
	defer deadline.Stop()
	for {
		a, b := toolNames(t, alice), toolNames(t, bob)
		if slices.Equal(a, []string{"run_code"}) && slices.Contains(b, "mcp__t__echo") && !slices.Contains(b, "run_code") {
			break
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("after the reload: alice %v, bob %v\n%s", a, b, s.stderr.String())
		}
	}
}

// A profile's rules decide the sub-calls of its sessions' run_code
// programs too, not only their direct calls: alice's profile (code mode)
// denies echo of secrets while the top-level rules allow echo, and a
// program of hers that calls it is refused with DENIED, while an allowed
// text goes through.
func TestHTTP_ProfileRulesDecideRunCodeSubCalls(t *testing.T) {
	if codeRuntimePlugin == nil {
		t.Skip("built without Code Mode")
	}
	s := profileServe(t, map[string]any{
		"ci": map[string]any{"match": []any{map[string]string{"token": "alice"}},
			"permissions": map[string]any{"allow": []string{"mcp__t__echo"}, "deny": []string{"mcp__t__echo(text:secret*)"}},
			"tools":       map[string]any{"mode": "code"}},
	}, map[string]any{"allow": []string{"mcp__t__echo"}}, nil)
	alice, err := connect(t, s.url, pAliceToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	run := func(text string) string {
		t.Helper()
		prog := `try { return await tools.mcp__t__echo({text: ` + strconv.Quote(text) + `}); } catch (e) { return "refused:" + e.code; }`
		r := callTool(t, alice, "run_code", map[string]any{"code": prog})
		if r.IsError {
			t.Fatalf("run_code: %+v", r)
		}
		return resultText(r)
	}
	if got := run("secret plans"); !strings.Contains(got, "refused:DENIED") {
		t.Errorf("a sub-call the profile denies: %q", got)
	}
	if got := run("hello"); !strings.Contains(got, "hello") || strings.Contains(got, "refused") {
		t.Errorf("a sub-call the profile allows: %q", got)
	}
}
