package acp_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

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

// TestSession_StuckPeerNeverHoldsACall: a peer that stops reading (its
// write never returns, whatever the context) cannot hold up tool calls:
// the queue overflows, the session breaks and asks become unavailable.
func TestSession_StuckPeerNeverHoldsACall(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true, MaxQueued: 4})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "a")
	stuck := make(chan struct{})
	writing := make(chan struct{}, 1)
	peer := &fakePeer{update: func(context.Context) error {
		select {
		case writing <- struct{}{}:
		default:
		}
		<-stuck
		return nil
	}, answer: selected(acp.OptionAllowOnce)}
	s := attach(t, r, peer)
	t.Cleanup(func() { close(stuck) }) // the transport closes: the write returns
	ctx := context.Background()
	read := func(i int) {
		t.Helper()
		if res := r.reg.Execute(ctx, tools.Call{ID: fmt.Sprint(i), Name: "read", Arguments: args(map[string]any{"path": "a.txt"}), Agent: agentKey}); res.IsError {
			t.Fatal(res)
		}
	}
	read(0)
	<-writing // the writer is stuck in its first write
	for i := 1; i < 5; i++ {
		read(i)
	}
	if err := s.Err(); !errors.Is(err, acp.ErrSessionBroken) {
		t.Fatalf("Err() = %v, want ErrSessionBroken", err)
	}
	if err := s.Flush(ctx); !errors.Is(err, acp.ErrSessionBroken) {
		t.Fatalf("Flush = %v", err)
	}
	if res := r.reg.Execute(ctx, bashCall("b", "true")); code(res) != tools.CodeApprovalUnavailable {
		t.Fatalf("ask on a broken session: %+v", res)
	}
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
