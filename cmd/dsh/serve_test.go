package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// TestM3_InspectorCLIOverHTTPWithAndWithoutToken: the npm inspector CLI
// (a third-party MCP client) drives the built dsh binary over streamable
// HTTP: refused without the token, served with it.
func TestM3_InspectorCLIOverHTTPWithAndWithoutToken(t *testing.T) {
	inspector := npmpeer.Bin(t, "mcp-inspector-cli")
	real, err := filepath.EvalSymlinks(inspector)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "dsh")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "mcp", "serve", "--config", testServerConfig(t, nil), "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), tokenEnv+"="+testToken)
	stderr := newSyncBuf()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan int, 1)
	go func() { _ = cmd.Wait(); exited <- cmd.ProcessState.ExitCode() }()
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case code := <-exited:
			if code != 0 {
				t.Errorf("dsh exited %d:\n%s", code, stderr.String())
			}
		case <-time.After(budget):
			t.Error("dsh did not stop on SIGINT")
		}
	}()
	url := stderr.waitFor(t, servingRE, exited)[1]
	inspect := func(token string, args ...string) (map[string]any, error) {
		args = append([]string{"--cli", url, "--transport", "http"}, args...)
		if token != "" {
			args = append(args, "--header", "Authorization: Bearer "+token)
		}
		c := exec.CommandContext(ctx, inspector, args...)
		c.Dir = filepath.Dir(real)
		var errb bytes.Buffer
		c.Stderr = &errb
		out, err := c.Output()
		if err != nil {
			return nil, fmt.Errorf("%v: %s%s", err, errb.String(), out)
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			return nil, fmt.Errorf("output: %v\n%s", err, out)
		}
		return v, nil
	}
	if _, err := inspect("", "--method", "tools/list"); err == nil || !strings.Contains(err.Error(), "no bearer token") {
		t.Errorf("without a token: %v", err)
	}
	if _, err := inspect("wrong-token-0123456789", "--method", "tools/list"); err == nil {
		t.Error("a wrong token was served")
	}
	list, err := inspect(testToken, "--method", "tools/list")
	if err != nil || !strings.Contains(fmt.Sprint(list["tools"]), "name:mcp__t__echo") {
		t.Errorf("tools/list: %v %v", list, err)
	}
	r, err := inspect(testToken, "--method", "tools/call", "--tool-name", "mcp__t__echo", "--tool-arg", "text=over-http")
	if err != nil || !strings.Contains(fmt.Sprint(r["content"]), "text:over-http") {
		t.Errorf("tools/call: %v %v", r, err)
	}
}

// A server that cannot start (it exits: a missing API key) is reported at
// the default log level with its exit status and stderr, its tools are
// absent while the other server's serve; once it can start it is
// mounted on a retry and the client is told (list_changed).
func TestServe_BrokenServerIsReportedRetriedAndAppears(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	marker := filepath.Join(t.TempDir(), "api-key-set")
	script := `test -f "$1" || { echo "error: MY_API_KEY is not set" >&2; exit 3; }; exec "$2"`
	broken := map[string]any{"command": "/bin/sh", "args": []string{"-c", script, "sh", marker, os.Args[0]},
		"env": map[string]string{testServerEnv: "1"}, "reconnect": map[string]any{"initialDelay": "20ms", "maxDelay": "50ms"}}
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{"broken": broken, "t": testServerEntry()}, "globalShortcut": "Ctrl+Space"})
	s := startServe(t, cfg, "127.0.0.1:0")
	s.stderr.waitFor(t, regexp.MustCompile(`exit status 3; stderr: error: MY_API_KEY is not set.*server=broken`), s.exited)
	if !strings.Contains(s.stderr.String(), "warning: "+cfg+": globalShortcut: ignored") {
		t.Errorf("no warning for globalShortcut:\n%s", s.stderr.String())
	}
	changed := make(chan struct{}, 16)
	cs, err := connect(t, s.url, testToken, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		changed <- struct{}{}
	}})
	if err != nil {
		t.Fatal(err)
	}
	names := func() string {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		l, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var n []string
		for _, tl := range l.Tools {
			n = append(n, tl.Name)
		}
		return strings.Join(n, " ")
	}
	if n := names(); !strings.Contains(n, "mcp__t__echo") || strings.Contains(n, "mcp__broken__") {
		t.Fatalf("tools with broken down: %s", n)
	}
	if r := callEcho(t, cs, "works"); resultText(r) != "works" {
		t.Errorf("working server: %+v", r)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	deadline := time.After(budget)
	for !strings.Contains(names(), "mcp__broken__echo") {
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the fixed server's tools never appeared:\n%s", s.stderr.String())
		}
	}
}

// "required": true keeps refuse-to-start: the gateway exits 2 naming the
// server, its exit status and its stderr.
func TestServe_RequiredServerThatCannotStartRefusesToStart(t *testing.T) {
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"broken": map[string]any{"command": "/bin/sh", "args": []string{"-c", "echo 'error: MY_API_KEY is not set' >&2; exit 3"}, "required": true},
		"t":      testServerEntry(),
	}})
	code, _, stderr := runDsh(t, nil, "mcp", "serve", "--config", cfg)
	if code != exitUsage || !strings.Contains(stderr, cfg+": mcpServers.broken: ") || !strings.Contains(stderr, "exit status 3; stderr: error: MY_API_KEY is not set") {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}

// Served tools carry the upstream title and annotations (marked
// untrusted unless the server is trusted), and a call's structured
// content.
func TestServe_ToolsCarryTitleAnnotationsAndStructuredContent(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	s := startServe(t, testServerConfig(t, nil), "127.0.0.1:0")
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	l, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var echo *mcp.Tool
	for _, tl := range l.Tools {
		if tl.Name == "mcp__t__echo" {
			echo = tl
		}
	}
	if echo == nil || echo.Title != "Echo" || echo.Annotations == nil || !echo.Annotations.ReadOnlyHint || echo.Annotations.Title != "Echo" {
		t.Fatalf("served echo: %+v", echo)
	}
	if fmt.Sprint(echo.Meta["dsh/annotations"]) != "map[trusted:false]" {
		t.Errorf("_meta %v", echo.Meta)
	}
	r := callEcho(t, cs, "structured")
	if b, _ := json.Marshal(r.StructuredContent); string(b) != `{"echoed":"structured"}` {
		t.Errorf("structuredContent %s", b)
	}
}

// A mounted server's own elicitation (the everything server's form) is
// forwarded to the calling client with its message and schema, and the
// client's accepted content reaches the server.
func TestServe_ForwardedElicitationReachesTheServer(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{"mcpServers": map[string]any{
		"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}},
	}})
	s := startServe(t, cfg, "127.0.0.1:0")
	asked := make(chan *mcp.ElicitParams, 1)
	cs, err := connect(t, s.url, testToken, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "check": true}}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__ev__trigger-elicitation-request", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, s.stderr.String())
	}
	p := <-asked
	schema, _ := json.Marshal(p.RequestedSchema)
	if !strings.Contains(p.Message, `The MCP server "ev" asks:`) || !strings.Contains(p.Message, "Please provide inputs") || !strings.Contains(string(schema), `"name"`) {
		t.Errorf("forwarded elicitation: %q %s", p.Message, schema)
	}
	if r.IsError || !strings.Contains(resultText(r), "Ada Lovelace") {
		t.Errorf("the server did not receive the answer: %+v %q", r.IsError, resultText(r))
	}
}
