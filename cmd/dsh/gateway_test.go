package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// budget bounds every wait; a passing case needs a few seconds (node).
const budget = 60 * time.Second

// fsConfig writes a dsh.json mounting the real filesystem server on a
// fresh folder holding a.txt, with a deny rule on writes of secret*.
func fsConfig(t *testing.T, ask ...string) (cfgPath, dir string) {
	t.Helper()
	fsBin := npmpeer.Bin(t, "mcp-server-filesystem")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsBin, "args": []string{dir}}},
		"permissions": map[string]any{
			"deny":  []string{"mcp__fs__write_file(path:" + dir + "/secret*)"},
			"allow": []string{"mcp__fs__*"},
			"ask":   append([]string{}, ask...),
		},
		"timeouts": map[string]any{"mcp__fs__*": "30s"},
	}
	b, _ := json.Marshal(cfg)
	cfgPath = filepath.Join(t.TempDir(), "dsh.json")
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dir
}

func runDsh(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code = run(ctx, args, stdin, &out, &errb)
	return code, out.String(), errb.String()
}

func TestGateway_BadConfigIsRefusedWithFileAndKey(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"empty command", `{"mcpServers":{"fs":{"command":""}}}`, "dsh.json: mcpServers.fs.command: must be a non-empty string"},
		{"unknown key", `{"mcpServers":{"fs":{"command":"x","argz":[]}}}`, "dsh.json: mcpServers.fs.argz: unknown key"},
		{"bad rule", `{"mcpServers":{"fs":{"command":"x"}},"permissions":{"deny":["mcp__fs__write_file(path:/etc/**"]}}`, `dsh.json: permissions.deny[0]: invalid permission rule`},
		{"syntax", "{\n  \"mcpServers\": {,}\n}", "dsh.json: line 2, column"},
		{"no servers", `{}`, "dsh.json: mcpServers: no server to serve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, "dsh.json")
			if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := runDsh(t, nil, "mcp", "serve", "--config", p)
			if code != exitUsage || !strings.Contains(stderr, strings.Replace(tc.want, "dsh.json", p, 1)) {
				t.Errorf("exit %d, stderr:\n%s\nwant it to contain %q", code, stderr, tc.want)
			}
		})
	}
}

func TestGateway_AServerThatCannotStartStartsNothing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dsh.json")
	body := `{"mcpServers":{"broken":{"command":"/nonexistent/server"}}}`
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runDsh(t, nil, "tools", "list", "--config", p)
	if code != exitUsage || !strings.Contains(stderr, p+": mcpServers.broken: ") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

func TestGateway_ToolsListAndCallFromATerminal(t *testing.T) {
	cfg, dir := fsConfig(t)
	code, out, stderr := runDsh(t, nil, "tools", "list", "--config", cfg)
	if code != 0 || !strings.Contains(out, "mcp__fs__read_text_file\t") {
		t.Fatalf("list: exit %d\n%s\n%s", code, out, stderr)
	}
	code, out, stderr = runDsh(t, nil, "tools", "call", "--config", cfg, "mcp__fs__read_text_file", `{"path":"`+dir+`/a.txt"}`)
	if code != 0 || strings.TrimSpace(out) != "hello" {
		t.Errorf("allowed call: exit %d %q %s", code, out, stderr)
	}
	code, out, stderr = runDsh(t, nil, "tools", "call", "--config", cfg, "mcp__fs__write_file", `{"path":"`+dir+`/secret.txt","content":"x"}`)
	if code != exitFailure || !strings.Contains(stderr, "DENIED") || !strings.Contains(out, "permission rule deny[0]") {
		t.Errorf("denied call: exit %d %q %s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); err == nil {
		t.Error("the denied write happened")
	}
}

// TestM3_GatewayServesTheGuardedServerOverStdio drives `dsh mcp serve`
// in-process with the go-sdk client over its stdin/stdout, a real
// filesystem server mounted behind it; closing stdin ends the command
// with no goroutine and no child process left.
func TestM3_GatewayServesTheGuardedServerOverStdio(t *testing.T) {
	cfg, dir := fsConfig(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(context.Background(), []string{"mcp", "serve", "--config", cfg}, inR, outW, &stderr)
		outW.Close()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range list.Tools {
		found = found || tl.Name == "mcp__fs__read_text_file"
	}
	if !found {
		t.Fatalf("tools: %d, no mcp__fs__read_text_file", len(list.Tools))
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fs__read_text_file", Arguments: map[string]any{"path": dir + "/a.txt"}})
	if err != nil || r.IsError || r.Content[0].(*mcp.TextContent).Text != "hello" {
		t.Fatalf("allowed call: %v %+v", err, r)
	}
	r, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__fs__write_file", Arguments: map[string]any{"path": dir + "/secret.txt", "content": "x"}})
	if err != nil || !r.IsError || fmt.Sprint(r.Meta["dsh/error"]) != "map[code:DENIED name:ToolDenied]" {
		t.Fatalf("denied call: %v %+v", err, r)
	}
	pids := childPIDs(t)
	cs.Close()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d: %s", code, stderr.String())
		}
	case <-time.After(budget):
		t.Fatal("dsh mcp serve did not return after its client left")
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); err == nil {
			t.Errorf("child process %d outlived the gateway", pid)
		}
	}
}

// childPIDs lists this process's children (the mounted servers).
func childPIDs(t *testing.T) []int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", os.Getpid(), os.Getpid()))
	if err != nil {
		t.Skipf("no /proc children list: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		var pid int
		fmt.Sscan(f, &pid)
		pids = append(pids, pid)
	}
	return pids
}

// TestM3_InspectorCLIAgainstTheBuiltGateway: the npm inspector CLI (a real,
// third-party MCP client) drives the dsh binary over stdio: it lists the
// tools and calls one allowed and one denied.
func TestM3_InspectorCLIAgainstTheBuiltGateway(t *testing.T) {
	t.Parallel() // with the other tests that run the built binary
	inspector := npmpeer.Bin(t, "mcp-inspector-cli")
	cfg, dir := fsConfig(t)
	bin := dshBinary(t)
	// The CLI reads its own package.json relative to its working
	// directory; "--" keeps dsh's --config from being read as the CLI's
	// own --config (an mcpServers file it would run directly).
	real, err := filepath.EvalSymlinks(inspector)
	if err != nil {
		t.Fatal(err)
	}
	inspect := func(args ...string) (map[string]any, error) {
		ctx, cancel := context.WithTimeout(context.Background(), budget)
		defer cancel()
		args = append(append([]string{"--cli"}, args...), "--", bin, "mcp", "serve", "--config", cfg)
		cmd := exec.CommandContext(ctx, inspector, args...)
		cmd.Dir = filepath.Dir(real)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("inspector %v: %v\n%s", args, err, stderr.String())
		}
		var v map[string]any
		if err := json.Unmarshal(out, &v); err != nil {
			return nil, fmt.Errorf("inspector output: %v\n%s", err, out)
		}
		return v, nil
	}
	// The three sessions are independent: they run at once.
	calls := [][]string{
		{"--method", "tools/list"},
		{"--tool-arg", "path=" + dir + "/a.txt", "--method", "tools/call", "--tool-name", "mcp__fs__read_text_file"},
		{"--tool-arg", "path=" + dir + "/secret.txt", "content=x", "--method", "tools/call", "--tool-name", "mcp__fs__write_file"},
	}
	res := make([]map[string]any, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	for i, args := range calls {
		wg.Go(func() { res[i], errs[i] = inspect(args...) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	list, ok, denied := res[0], res[1], res[2]
	if !strings.Contains(fmt.Sprint(list["tools"]), "name:mcp__fs__read_text_file") {
		t.Errorf("tools/list: %v", list)
	}
	if ok["isError"] == true || !strings.Contains(fmt.Sprint(ok["content"]), "text:hello") {
		t.Errorf("allowed call: %v", ok)
	}
	if denied["isError"] != true || !strings.Contains(fmt.Sprint(denied["_meta"]), "code:DENIED") {
		t.Errorf("denied call: %v", denied)
	}
	if _, err := os.Stat(filepath.Join(dir, "secret.txt")); err == nil {
		t.Error("the denied write happened")
	}
}

func TestGateway_ToolsCallAsksAtTheTerminal(t *testing.T) {
	cfg, dir := fsConfig(t, "mcp__fs__read_text_file")
	args := []string{"tools", "call", "--config", cfg, "mcp__fs__read_text_file", `{"path":"` + dir + `/a.txt"}`}
	code, out, stderr := runDsh(t, strings.NewReader("y\n"), args...)
	if code != 0 || strings.TrimSpace(out) != "hello" || !strings.Contains(stderr, "ask[0]") {
		t.Errorf("answered yes: exit %d %q\n%s", code, out, stderr)
	}
	code, _, stderr = runDsh(t, strings.NewReader("n\n"), args...)
	if code != exitFailure || !strings.Contains(stderr, "APPROVAL_REJECTED") {
		t.Errorf("answered no: exit %d\n%s", code, stderr)
	}
}
