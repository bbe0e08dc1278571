package acp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

func summaries(ws string, us []acpsdk.SessionUpdate) []string {
	out := make([]string, 0, len(us))
	for _, u := range us {
		out = append(out, summary(ws, u))
	}
	return out
}

func statusOf(u acpsdk.SessionUpdate) (acpsdk.ToolCallId, string) {
	if u.ToolCall != nil {
		return u.ToolCall.ToolCallId, "tool_call:" + string(u.ToolCall.Status)
	}
	s := ""
	if u.ToolCallUpdate.Status != nil {
		s = string(*u.ToolCallUpdate.Status)
	}
	return u.ToolCallUpdate.ToolCallId, s
}

func TestBatch_ParallelCallsKeepEachCallsUpdatesInOrder(t *testing.T) {
	r := newRig(t, acp.Config{})
	peer := &fakePeer{}
	s := attach(t, r, peer)
	const n = 12
	calls := make([]tools.Call, n)
	for i := range calls {
		name := fmt.Sprintf("f%d.txt", i)
		writeFile(t, filepath.Join(r.ws, name), name)
		calls[i] = tools.Call{ID: fmt.Sprintf("r%d", i), Name: "read", Arguments: args(map[string]any{"path": name}), Agent: agentKey}
	}
	// Reads are parallel: several bodies overlap.
	res := r.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{MaxParallel: 4})
	for i, x := range res {
		if x.IsError {
			t.Fatalf("call %d: %+v", i, x)
		}
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	updates, _ := peer.recorded()
	seen := map[acpsdk.ToolCallId][]string{}
	for _, u := range updates {
		id, st := statusOf(u)
		seen[id] = append(seen[id], st)
	}
	if len(seen) != n || len(updates) != 3*n {
		t.Fatalf("%d calls, %d updates:\n%s", len(seen), len(updates), strings.Join(summaries(r.ws, updates), "\n"))
	}
	for id, sts := range seen {
		if got := strings.Join(sts, ","); got != "tool_call:pending,in_progress,completed" {
			t.Errorf("%s: %s", id, got)
		}
	}
}

func TestUpdates_CallRejectedBeforePolicyIsPendingThenFailed(t *testing.T) {
	r := newRig(t, acp.Config{})
	peer := &fakePeer{}
	s := attach(t, r, peer)
	ctx := context.Background()
	r.reg.Execute(ctx, tools.Call{ID: "c1", Name: "read", Arguments: []byte(`{"path": 7}`), Agent: agentKey})
	r.reg.Execute(ctx, tools.Call{ID: "c2", Name: "nope", Agent: agentKey})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	updates, _ := peer.recorded()
	got := summaries(r.ws, updates)
	if len(got) != 4 ||
		got[0] != `tool_call c1 pending other "read"` || !strings.HasPrefix(got[1], `tool_call_update c1 failed | text "`) ||
		got[2] != `tool_call c2 pending other "nope"` || !strings.HasPrefix(got[3], `tool_call_update c2 failed | text "`) {
		t.Fatalf("updates:\n%s", strings.Join(got, "\n"))
	}
}

func TestUpdates_ToolCallIDsStayUniqueInTheSession(t *testing.T) {
	r := newRig(t, acp.Config{})
	peer := &fakePeer{}
	s := attach(t, r, peer)
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	read := args(map[string]any{"path": "a.txt"})
	// One after the other with the same id, then without an id.
	for _, id := range []string{"dup", "dup", ""} {
		r.reg.Execute(context.Background(), tools.Call{ID: id, Name: "read", Arguments: read, Agent: agentKey})
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	updates, _ := peer.recorded()
	var ids []string
	for _, u := range updates {
		if u.ToolCall != nil {
			ids = append(ids, string(u.ToolCall.ToolCallId))
		}
	}
	uniq := map[string]bool{}
	for _, id := range ids {
		if id == "" || uniq[id] {
			t.Fatalf("tool call ids %q", ids)
		}
		uniq[id] = true
	}
	if len(ids) != 3 || ids[0] != "dup" {
		t.Fatalf("tool call ids %q", ids)
	}
}

func TestUpdates_UnattachedScopesAreNotReported(t *testing.T) {
	r := newRig(t, acp.Config{})
	peer := &fakePeer{}
	s := attach(t, r, peer)
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	for _, agent := range []host.ScopeKey{"", "agent-2"} {
		r.reg.Execute(context.Background(), tools.Call{ID: "x", Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agent})
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if updates, _ := peer.recorded(); len(updates) != 0 {
		t.Fatalf("updates for other scopes: %v", summaries(r.ws, updates))
	}
}

// stuckPeer is a peer whose first write never returns (whatever the
// context) until release is closed; writing receives once it started.
func stuckPeer() (p *fakePeer, writing chan struct{}, release chan struct{}) {
	writing, release = make(chan struct{}, 1), make(chan struct{})
	p = &fakePeer{update: func(context.Context) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-release
		return nil
	}, answer: selected(acp.OptionAllowOnce)}
	return p, writing, release
}

func readCall(id string) tools.Call {
	return tools.Call{ID: id, Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agentKey}
}

// TestSession_StuckPeerNeverHoldsACall: a peer that stops reading (its
// write never returns, whatever the context) holds a call at most
// StallTimeout: then the session breaks, and asks become unavailable.
func TestSession_StuckPeerNeverHoldsACall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, acp.Config{Approval: true, MaxQueued: 4, StallTimeout: time.Minute})
		writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
		peer, writing, release := stuckPeer()
		s := attach(t, r, peer)
		t.Cleanup(func() { close(release) }) // the transport closes: the write returns
		ctx := context.Background()
		r.reg.Execute(ctx, readCall("0"))
		<-writing                         // the writer is stuck in its first write; 2 updates queued
		r.reg.Execute(ctx, readCall("1")) // 3 more: 4 queued, and the final one past the bound
		start := time.Now()
		r.reg.Execute(ctx, readCall("2")) // its pending update waits for room
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("the call waited %v, want the stall timeout", waited)
		}
		if err := s.Err(); !errors.Is(err, acp.ErrSessionBroken) || !strings.Contains(err.Error(), "read nothing for 1m0s") {
			t.Fatalf("Err() = %v, want ErrSessionBroken", err)
		}
		start = time.Now()
		r.reg.Execute(ctx, readCall("3"))
		if res := r.reg.Execute(ctx, bashCall("b", "true")); code(res) != tools.CodeApprovalUnavailable {
			t.Fatalf("ask on a broken session: %+v", res)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("calls on a broken session waited %v", waited)
		}
		if err := s.Flush(ctx); !errors.Is(err, acp.ErrSessionBroken) {
			t.Fatalf("Flush = %v", err)
		}
	})
}

// TestSession_FlushOnAStuckPeerReturnsAfterStallTimeout: Flush needs no
// deadline of its own to return from a peer that stopped reading.
func TestSession_FlushOnAStuckPeerReturnsAfterStallTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, acp.Config{StallTimeout: time.Minute})
		writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
		peer, writing, release := stuckPeer()
		s := attach(t, r, peer)
		t.Cleanup(func() { close(release) })
		r.reg.Execute(context.Background(), readCall("0"))
		<-writing
		start := time.Now()
		if err := s.Flush(context.Background()); !errors.Is(err, acp.ErrSessionBroken) {
			t.Fatalf("Flush = %v", err)
		}
		if waited := time.Since(start); waited != time.Minute {
			t.Errorf("Flush waited %v", waited)
		}
	})
}

// TestSession_SlowPeerIsWaitedFor: a peer that keeps reading, however
// slowly, gets every update: a full queue makes calls wait, it does not
// break the session.
func TestSession_SlowPeerIsWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, acp.Config{MaxQueued: 2, StallTimeout: 10 * time.Second})
		writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
		peer := &fakePeer{update: func(context.Context) error { time.Sleep(9 * time.Second); return nil }}
		s := attach(t, r, peer)
		for i := range 5 {
			r.reg.Execute(context.Background(), readCall(fmt.Sprint(i)))
		}
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		if updates, _ := peer.recorded(); len(updates) != 15 {
			t.Errorf("%d updates, want 15", len(updates))
		}
	})
}

// TestSession_CancelledCallDoesNotWaitForRoom: a call whose context is
// done does not wait for a full queue; its updates still go out, past the
// bound (up to twice it).
func TestSession_CancelledCallDoesNotWaitForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, acp.Config{MaxQueued: 2, StallTimeout: time.Hour})
		writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
		peer, writing, release := stuckPeer()
		s := attach(t, r, peer)
		r.reg.Execute(context.Background(), readCall("0"))
		<-writing // 2 queued: full
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		start := time.Now()
		r.reg.Execute(ctx, readCall("1"))
		if waited := time.Since(start); waited != 0 {
			t.Errorf("a cancelled call waited %v", waited)
		}
		if err := s.Err(); err != nil {
			t.Errorf("Err() = %v", err)
		}
		close(release)
		if err := s.Flush(context.Background()); err != nil {
			t.Fatal(err)
		}
		updates, _ := peer.recorded()
		if got := strings.Join(summaries(r.ws, updates), "\n"); !strings.HasSuffix(got, `tool_call 1 pending read "Read a.txt" @$WS/a.txt`+"\n"+`tool_call_update 1 failed | text "Tool call aborted before it started: context canceled"`) {
			t.Errorf("updates:\n%s", got)
		}
	})
}

func TestSession_FlushReturnsWhenItsContextIsDone(t *testing.T) {
	r := newRig(t, acp.Config{})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	stuck := make(chan struct{})
	s := attach(t, r, &fakePeer{update: func(context.Context) error { <-stuck; return nil }})
	t.Cleanup(func() { close(stuck) })
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agentKey})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Flush(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Flush = %v", err)
	}
}

func TestSession_WriteErrorBreaksTheSession(t *testing.T) {
	r := newRig(t, acp.Config{})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	s := attach(t, r, &fakePeer{update: func(context.Context) error { return errors.New("broken pipe") }})
	r.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agentKey})
	if err := s.Flush(context.Background()); !errors.Is(err, acp.ErrSessionBroken) || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("Flush = %v", err)
	}
}

func TestAttach_RefusesASecondSessionAndBadInput(t *testing.T) {
	r := newRig(t, acp.Config{})
	attach(t, r, &fakePeer{})
	if _, err := r.bridge.Attach(agentKey, &fakePeer{}, "s2", acp.SessionOptions{}); !errors.Is(err, acp.ErrScopeBound) {
		t.Errorf("second Attach: %v", err)
	}
	for name, f := range map[string]func() error{
		"nil peer":   func() error { _, err := r.bridge.Attach("a", nil, "s", acp.SessionOptions{}); return err },
		"no session": func() error { _, err := r.bridge.Attach("a", &fakePeer{}, "", acp.SessionOptions{}); return err },
		"no scope":   func() error { _, err := r.bridge.Attach("", &fakePeer{}, "s", acp.SessionOptions{}); return err },
		"relative cwd": func() error {
			_, err := r.bridge.Attach("a", &fakePeer{}, "s", acp.SessionOptions{Cwd: "rel"})
			return err
		},
	} {
		if f() == nil {
			t.Errorf("%s: Attach accepted it", name)
		}
	}
}

func TestPlugin_DisposeRemovesListenersAndClosesSessions(t *testing.T) {
	r := newRig(t, acp.Config{})
	peer := &fakePeer{}
	s, err := r.bridge.Attach(agentKey, peer, "s1", acp.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := r.h.Stats().Listeners
	if err := r.fiber.Dispose(); err != nil {
		t.Fatal(err)
	}
	<-s.Done()
	if !errors.Is(s.Err(), acp.ErrSessionClosed) {
		t.Errorf("session Err() = %v", s.Err())
	}
	if _, ok := r.bridge.Session(agentKey); ok {
		t.Error("session still attached")
	}
	if _, err := r.bridge.Attach(agentKey, peer, "s2", acp.SessionOptions{}); err == nil {
		t.Error("Attach on a disposed bridge")
	}
	after := r.h.Stats().Listeners
	for _, ev := range []string{"tools/pre-execute", "tools/execute", "tools/result"} {
		if after[ev] != before[ev]-1 {
			t.Errorf("%s listeners %d → %d, want one fewer", ev, before[ev], after[ev])
		}
	}
	if _, err := acp.Service.Get(r.root); err == nil {
		t.Error("service still provided")
	}
}

// TestUpdates_PendingIsSentBeforeOtherPolicyRuns: the bridge's
// tools/pre-execute listener goes first, so a policy listener registered
// before the plugin was loaded already finds the call's tool_call sent.
func TestUpdates_PendingIsSentBeforeOtherPolicyRuns(t *testing.T) {
	r := newRig(t, acp.Config{})
	if err := r.fiber.Dispose(); err != nil {
		t.Fatal(err)
	}
	var s *acp.Session
	peer := &fakePeer{}
	var sawPending bool
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if err := s.Flush(ctx); err != nil {
			return tools.PreDecision{}, err
		}
		updates, _ := peer.recorded()
		sawPending = len(updates) == 1 && updates[0].ToolCall != nil && updates[0].ToolCall.ToolCallId == acpsdk.ToolCallId(e.CallID())
		return tools.Denied("probe"), nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.root.Plugin(acp.Plugin, acp.Config{}); err != nil {
		t.Fatal(err)
	}
	b, err := acp.Service.Get(r.root)
	if err != nil {
		t.Fatal(err)
	}
	s, err = b.Attach(agentKey, peer, "s1", acp.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); <-s.Done() })
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	r.reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agentKey})
	if !sawPending {
		t.Error("the policy listener ran before the tool_call was sent")
	}
}

func TestSession_PanickingPeerIsContained(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	var writerBug atomic.Bool
	peer := &fakePeer{answer: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		panic("client bug")
	}, update: func(context.Context) error {
		if writerBug.Load() {
			panic("writer bug")
		}
		return nil
	}}
	s := attach(t, r, peer)
	if res := r.reg.Execute(context.Background(), bashCall("b", "true")); code(res) != tools.CodeApprovalFailed || !strings.Contains(res.Content[0].Text, "the peer panicked: client bug") {
		t.Fatalf("%+v", res)
	}
	writerBug.Store(true)
	r.reg.Execute(context.Background(), readCall("r"))
	if err := s.Flush(context.Background()); !errors.Is(err, acp.ErrSessionBroken) || !strings.Contains(err.Error(), "writer bug") {
		t.Fatalf("Flush = %v", err)
	}
}
