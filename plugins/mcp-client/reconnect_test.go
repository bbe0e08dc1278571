package mcpclient_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/host"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type stamped struct {
	at time.Duration
	s  mcpclient.Status
}

// record returns the statuses, stamped with the (bubble) time since start.
func record(t *testing.T, e *env, start time.Time) *[]stamped {
	var log []stamped
	if _, err := host.On(e.root, mcpclient.StatusChanged, func(_ context.Context, s mcpclient.Status) error {
		log = append(log, stamped{time.Since(start), s})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return &log
}

func TestReconnectBacksOffExponentiallyAfterAFailedStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ms := newMemServer(nil)
		addEcho(ms.srv, "echo")
		ms.failDial = 4 // the start and three retries fail
		start := time.Now()
		log := record(t, e, start)
		e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial,
			Reconnect: mcpclient.Reconnect{MaxAttempts: 10, InitialDelay: mcpclient.Duration(time.Second), MaxDelay: mcpclient.Duration(5 * time.Second)}})
		if got := e.names(); len(got) != 0 {
			t.Fatalf("tools before connecting: %v", got)
		}
		r := e.call(context.Background(), "mcp__mem__echo", nil)
		if code(r) != tools.CodeUnknownTool {
			t.Fatalf("call before connecting = %+v", r)
		}
		time.Sleep(time.Hour) // bubble time: every retry happens meanwhile
		synctest.Wait()
		// Retries 1..4 after 1s, 2s, 4s, 5s (capped): at 1, 3, 7, 12 s.
		want := []stamped{
			{0, mcpclient.Status{Server: "mem", State: mcpclient.StateReconnecting, Attempt: 1, Err: "connecting: dial refused"}},
			{1 * time.Second, mcpclient.Status{Server: "mem", State: mcpclient.StateReconnecting, Attempt: 2, Err: "connecting: dial refused"}},
			{3 * time.Second, mcpclient.Status{Server: "mem", State: mcpclient.StateReconnecting, Attempt: 3, Err: "connecting: dial refused"}},
			{7 * time.Second, mcpclient.Status{Server: "mem", State: mcpclient.StateReconnecting, Attempt: 4, Err: "connecting: dial refused"}},
			{12 * time.Second, mcpclient.Status{Server: "mem", State: mcpclient.StateConnected, Tools: 1}},
		}
		if len(*log) != len(want) {
			t.Fatalf("statuses = %+v", *log)
		}
		for i := range want {
			if (*log)[i] != want[i] {
				t.Errorf("status %d = %+v, want %+v", i, (*log)[i], want[i])
			}
		}
		if r := e.call(context.Background(), "mcp__mem__echo", map[string]any{"text": "up"}); r.IsError || text(r) != "up" {
			t.Fatalf("call after connecting = %+v", r)
		}
	})
}

func TestReconnectAfterALostSessionAndGiveUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ms := newMemServer(nil)
		addEcho(ms.srv, "echo")
		start := time.Now()
		log := record(t, e, start)
		e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial,
			Reconnect: mcpclient.Reconnect{MaxAttempts: 2, InitialDelay: mcpclient.Duration(time.Second)}})
		// The server drops the session and refuses every new one.
		ms.mu.Lock()
		ms.failDial = 1000
		ms.mu.Unlock()
		// Let the session settle first: the SDK's server Close misses a
		// subscriptions/listen request that is still being set up.
		synctest.Wait()
		_ = ms.last().Close()
		synctest.Wait()
		// While it retries, the tool stays and fails fast.
		if r := e.call(context.Background(), "mcp__mem__echo", nil); code(r) != mcpclient.CodeServerUnavailable {
			t.Fatalf("call while disconnected = %+v", r)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		var states []mcpclient.State
		for _, s := range *log {
			states = append(states, s.s.State)
		}
		want := []mcpclient.State{mcpclient.StateConnected, mcpclient.StateDisconnected,
			mcpclient.StateReconnecting, mcpclient.StateReconnecting, mcpclient.StateFailed}
		if len(states) != len(want) {
			t.Fatalf("states = %v, want %v", states, want)
		}
		for i := range want {
			if states[i] != want[i] {
				t.Fatalf("states = %v, want %v", states, want)
			}
		}
		last := (*log)[len(*log)-1]
		if last.s.Attempt != 2 || last.s.Tools != 0 || last.at != 3*time.Second {
			t.Fatalf("failed status = %+v", last)
		}
		if got := e.names(); len(got) != 0 {
			t.Fatalf("tools after giving up: %v", got)
		}
	})
}

func TestFailOnStartErrorFailsThePlugin(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	addEcho(ms.srv, "echo")
	ms.failDial = 1
	f, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "mem", Dial: ms.dial, FailOnStartError: true})
	if err == nil || f.State() != host.Failed || !errors.Is(f.Err(), err) && f.Err() == nil {
		t.Fatalf("plugin = %v, %v (%v)", f.State(), err, f.Err())
	}
	if got := e.names(); len(got) != 0 {
		t.Fatalf("tools: %v", got)
	}
	if len(f.Effects()) != 0 {
		t.Fatalf("effects left: %v", f.Effects())
	}
}

func TestPanickingDialIsAFailedAttempt(t *testing.T) {
	e := newEnv(t)
	f, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "x", FailOnStartError: true,
		Dial: func(context.Context) (mcp.Transport, error) { panic("no network") }})
	if err == nil || f.State() != host.Failed || !strings.Contains(err.Error(), "no network") {
		t.Fatalf("plugin = %v, %v", f.State(), err)
	}
}

func TestPanickingTransportIsContained(t *testing.T) {
	e := newEnv(t)
	f, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "x", FailOnStartError: true,
		Dial: func(context.Context) (mcp.Transport, error) { return panicTransport{}, nil }})
	if err == nil || f.State() != host.Failed || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("plugin = %v, %v", f.State(), err)
	}
}

type panicTransport struct{}

func (panicTransport) Connect(context.Context) (mcp.Connection, error) { panic("transport bug") }

func TestReconnectReListsTheTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ms := newMemServer(nil)
		addEcho(ms.srv, "old")
		e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial,
			Reconnect: mcpclient.Reconnect{InitialDelay: mcpclient.Duration(time.Second)}})
		synctest.Wait()
		_ = ms.last().Close()
		synctest.Wait() // disconnected; no session hears the changes below
		ms.srv.RemoveTools("old")
		addEcho(ms.srv, "new")
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := e.names(); len(got) != 1 || got[0] != "mcp__mem__new" {
			t.Fatalf("tools after reconnecting = %v", got)
		}
		if r := e.call(context.Background(), "mcp__mem__new", map[string]any{"text": "n"}); r.IsError || text(r) != "n" {
			t.Fatalf("call = %+v", r)
		}
	})
}
