package main

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/audit"
	"github.com/dsh-go/dsh/plugins/audit/audittest"
)

// gatewayProc is a `dsh mcp serve --http --console` process.
type gatewayProc struct {
	cmd     *exec.Cmd
	stderr  *syncBuf
	exited  chan int
	done    chan struct{} // closed when the process has exited
	mcp     string
	console string
}

// startGatewayProc runs the built dsh on cfg in a process of its own.
func startGatewayProc(t *testing.T, cfg string) *gatewayProc {
	t.Helper()
	p := &gatewayProc{stderr: newSyncBuf(), exited: make(chan int, 1), done: make(chan struct{})}
	p.cmd = exec.Command(dshBinary(t), "mcp", "serve", "--config", cfg, "--http", "127.0.0.1:0", "--console", "127.0.0.1:0")
	p.cmd.Env = append(os.Environ(), tokenEnv+"="+testToken, consoleTokenEnv+"="+testConsoleToken)
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.cmd.Wait()
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		p.exited <- code
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(budget):
			_ = p.cmd.Process.Kill()
			t.Error("dsh did not stop")
		}
	})
	p.console = p.stderr.waitFor(t, consoleRE, p.exited)[1]
	p.mcp = p.stderr.waitFor(t, servingRE, p.exited)[1]
	return p
}

// Two gateways share one PostgreSQL store: an ask raised on one is
// answered in the console of the other, and the call proceeds on the
// first. A gateway killed while its ask waits leaves the ask abandoned:
// the other's console cannot grant it.
func TestConsole_TwoGatewaysSharingPostgres(t *testing.T) {
	dsn := audittest.PostgresDSN(t)
	cfg := testServerConfig(t, map[string]any{
		"permissions": map[string]any{"ask": []string{"mcp__t__echo"}},
		"approval":    map[string]any{"approver": "console"},
		"audit":       map[string]any{"store": "postgres", "dsn": dsn},
	})
	a, b := startGatewayProc(t, cfg), startGatewayProc(t, cfg)
	cs, err := connect(t, a.mcp, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := asyncEcho(cs, "across gateways")
	ask := waitAsk(t, b.console) // seen in B's console
	if st, m := api(t, "POST", b.console+"api/asks/"+ask.ID, url.Values{"answer": {"allow"}}, bearer(testConsoleToken)); st != http.StatusOK {
		t.Fatalf("answer in B: %d %v", st, m)
	}
	if r := <-res; r.IsError || resultText(r) != "across gateways" {
		t.Fatalf("call on A: %+v %q\n%s", r.IsError, resultText(r), a.stderr.String())
	}
	waitAskState(t, b.console, ask.ID, audit.AskApplied)
	// Its completion is written (asynchronously: a gateway killed before
	// then would leave the call unfinished, its outcome unknown).
	waitCalls(t, b.console, "code=ok", 1)

	// The asking gateway dies mid-ask.
	_ = asyncEcho(cs, "orphan")
	orphan := waitAsk(t, b.console)
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	// Once PostgreSQL has seen A's connection close, B's inbox lists the
	// ask as abandoned, and an answer is refused.
	waitAskState(t, b.console, orphan.ID, audit.AskAbandoned)
	if st, m := api(t, "POST", b.console+"api/asks/"+orphan.ID, url.Values{"answer": {"allow"}}, bearer(testConsoleToken)); st != http.StatusConflict {
		t.Fatalf("answer to a dead gateway's ask: %d %v", st, m)
	}
	// A's call is on record, unfinished.
	st, m := api(t, "GET", b.console+"api/calls?unfinished=1", nil, bearer(testConsoleToken))
	if calls, _ := m["calls"].([]any); st != 200 || len(calls) != 1 || !strings.Contains(calls[0].(map[string]any)["args"].(string), "orphan") {
		t.Fatalf("unfinished record of the dead gateway: %d %v", st, m)
	}
}

func waitAskState(t *testing.T, console, id string, want audit.AskState) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		// The list marks the asks of gone gateways abandoned first.
		_, m := api(t, "GET", console+"api/asks", nil, bearer(testConsoleToken))
		as, _ := m["asks"].([]any)
		for _, a := range as {
			if a := a.(map[string]any); a["id"] == id && a["state"] == string(want) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("ask %s: %v, want %s", id, m, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitCalls waits until the console's record has n calls matching query.
func waitCalls(t *testing.T, console, query string, n int) {
	t.Helper()
	deadline := time.Now().Add(budget)
	for {
		_, m := api(t, "GET", console+"api/calls?"+query, nil, bearer(testConsoleToken))
		if calls, _ := m["calls"].([]any); len(calls) == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls %s: %v, want %d", query, m, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// With SQLite, `dsh console` in another process answers a gateway's ask:
// the answer is stored, and the gateway, which hears nothing from SQLite,
// finds it when it looks again.
func TestConsole_StandaloneConsoleAnswersAGatewayOverSQLite(t *testing.T) {
	cfg := testServerConfig(t, map[string]any{
		"permissions": map[string]any{"ask": []string{"mcp__t__echo"}},
		"approval":    map[string]any{"approver": "console"},
		"audit":       map[string]any{},
	})
	gw := startGatewayProc(t, cfg)
	t.Setenv(consoleTokenEnv, testConsoleToken)
	ctx, stop := context.WithCancel(context.Background())
	errOut := newSyncBuf()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"console", "--config", cfg, "--listen", "127.0.0.1:0"}, strings.NewReader(""), newSyncBuf(), errOut)
	}()
	defer func() {
		stop()
		if code := <-done; code != 0 {
			t.Errorf("dsh console exited %d:\n%s", code, errOut.String())
		}
	}()
	console := errOut.waitFor(t, consoleRE, done)[1]
	cs, err := connect(t, gw.mcp, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := asyncEcho(cs, "over sqlite")
	ask := waitAsk(t, console)
	if st, m := api(t, "POST", console+"api/asks/"+ask.ID, url.Values{"answer": {"allow"}}, bearer(testConsoleToken)); st != http.StatusOK {
		t.Fatalf("answer: %d %v", st, m)
	}
	if r := <-res; r.IsError || resultText(r) != "over sqlite" {
		t.Fatalf("call: %+v %q\n%s", r.IsError, resultText(r), gw.stderr.String())
	}
	waitAskState(t, console, ask.ID, audit.AskApplied)
}
