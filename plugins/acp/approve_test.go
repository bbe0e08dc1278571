package acp_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/acp"
	"github.com/dsh-go/dsh/plugins/tools"
)

// fakePeer records updates and hands permission requests to answer.
type fakePeer struct {
	mu      sync.Mutex
	updates []acpsdk.SessionUpdate
	asks    []acpsdk.RequestPermissionRequest
	answer  func(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
	// update, when set, is called for each update (before recording).
	update func(ctx context.Context) error
}

func (p *fakePeer) SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error {
	if p.update != nil {
		if err := p.update(ctx); err != nil {
			return err
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.updates = append(p.updates, n.Update)
	return nil
}

func (p *fakePeer) RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	p.mu.Lock()
	p.asks = append(p.asks, r)
	p.mu.Unlock()
	return p.answer(ctx, r)
}

func (p *fakePeer) recorded() ([]acpsdk.SessionUpdate, []acpsdk.RequestPermissionRequest) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]acpsdk.SessionUpdate(nil), p.updates...), append([]acpsdk.RequestPermissionRequest(nil), p.asks...)
}

func selected(id acpsdk.PermissionOptionId) func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(id)}, nil
	}
}

const agentKey host.ScopeKey = "agent-1"

// attach attaches agentKey to a session on peer, closed at the end.
func attach(t *testing.T, r *rig, peer acp.Peer) *acp.Session {
	t.Helper()
	if _, err := r.root.Scope(agentKey); err != nil {
		t.Fatal(err)
	}
	s, err := r.bridge.Attach(agentKey, peer, "s1", acp.SessionOptions{Cwd: r.ws})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); <-s.Done() })
	return s
}

func bashCall(id, command string) tools.Call {
	return tools.Call{ID: id, Name: "bash", Arguments: args(map[string]any{"command": command, "description": "d"}), Agent: agentKey}
}

func code(res tools.Result) tools.ErrorCode {
	if res.Error == nil {
		return ""
	}
	return res.Error.Code
}

func TestApprove_OnceAnswersAreNotRemembered(t *testing.T) {
	for _, tc := range []struct {
		option acpsdk.PermissionOptionId
		want   tools.ErrorCode
	}{{acp.OptionAllowOnce, ""}, {acp.OptionRejectOnce, tools.CodeApprovalRejected}} {
		t.Run(string(tc.option), func(t *testing.T) {
			r := newRig(t, acp.Config{Approval: true})
			peer := &fakePeer{answer: selected(tc.option)}
			attach(t, r, peer)
			for _, id := range []string{"c1", "c2"} {
				if res := r.reg.Execute(context.Background(), bashCall(id, "true")); code(res) != tc.want {
					t.Fatalf("%s: %+v", id, res)
				}
			}
			if _, asks := peer.recorded(); len(asks) != 2 {
				t.Errorf("%d asks, want 2 (a once answer is not remembered)", len(asks))
			}
		})
	}
}

func TestApprove_AlwaysIsRememberedForTheSessionScopedToTheCommand(t *testing.T) {
	for _, tc := range []struct {
		option acpsdk.PermissionOptionId
		want   tools.ErrorCode
	}{{acp.OptionAllowAlways, ""}, {acp.OptionRejectAlways, tools.CodeApprovalRejected}} {
		t.Run(string(tc.option), func(t *testing.T) {
			r := newRig(t, acp.Config{Approval: true})
			peer := &fakePeer{answer: selected(tc.option)}
			attach(t, r, peer)
			ctx := context.Background()
			for _, id := range []string{"c1", "c2", "c3"} {
				if res := r.reg.Execute(ctx, bashCall(id, "true")); code(res) != tc.want {
					t.Fatalf("%s: %+v", id, res)
				}
			}
			if _, asks := peer.recorded(); len(asks) != 1 {
				t.Fatalf("%d asks, want 1", len(asks))
			}
			// Another command is not covered: asked again.
			r.reg.Execute(ctx, bashCall("c4", "true; rm -rf /"))
			if _, asks := peer.recorded(); len(asks) != 2 {
				t.Errorf("%d asks, want 2: a different command must be asked about", len(asks))
			}
		})
	}
}

type touchArgs struct {
	Paths []string `json:"paths" dsh:"required"`
}

func TestApprove_RejectAlwaysWinsOverAllowAlways(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	answers := []acpsdk.PermissionOptionId{acp.OptionAllowAlways, acp.OptionRejectAlways}
	var mu sync.Mutex
	peer := &fakePeer{answer: func(ctx context.Context, q acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(answers) == 0 {
			t.Errorf("unexpected ask for %s", q.ToolCall.ToolCallId)
			return selected(acp.OptionRejectOnce)(ctx, q)
		}
		id := answers[0]
		answers = answers[1:]
		return selected(id)(ctx, q)
	}}
	attach(t, r, peer)
	// touch shows its paths as locations, so rules are scoped to them.
	d, err := tools.Define(tools.TypedTool[touchArgs, tools.Output]{Name: "touch", Description: "Touch files.",
		Execute: func(context.Context, touchArgs, *tools.Execution) (tools.Output, error) {
			return tools.TextOutput("ok"), nil
		},
		PresentCall: func(a touchArgs) tools.CallView {
			c := tools.GenericCall{Title: "touch"}
			for _, p := range a.Paths {
				c.Locations = append(c.Locations, tools.Location{Path: p})
			}
			return c
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.reg.Register(r.root, d); err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		return tools.Asked(""), nil
	}); err != nil {
		t.Fatal(err)
	}
	touch := func(id string, paths ...string) tools.ErrorCode {
		return code(r.reg.Execute(context.Background(), tools.Call{ID: id, Name: "touch", Agent: agentKey, Arguments: args(map[string]any{"paths": paths})}))
	}
	for _, c := range []struct {
		id    string
		paths []string
		want  tools.ErrorCode
	}{
		{"t1", []string{"a", "b"}, ""},                         // asked: allow_always {a, b}
		{"t2", []string{"a", "c"}, tools.CodeApprovalRejected}, // not covered: asked: reject_always {a, c}
		{"t3", []string{"a"}, tools.CodeApprovalRejected},      // covered by both: the rejection wins
		{"t4", []string{"b"}, ""},                              // covered by the allow only
		{"t5", []string{"c"}, tools.CodeApprovalRejected},      // covered by the rejection only
	} {
		if got := touch(c.id, c.paths...); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.id, c.paths, got, c.want)
		}
	}
	if _, asks := peer.recorded(); len(asks) != 2 {
		t.Errorf("%d asks, want 2", len(asks))
	}
}

func TestApprove_ToolCallIsDeliveredBeforeTheRequestNamingIt(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	var mu sync.Mutex
	var log []string
	peer := &fakePeer{}
	peer.update = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		log = append(log, "update")
		return nil
	}
	peer.answer = func(ctx context.Context, q acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		mu.Lock()
		log = append(log, "ask "+string(q.ToolCall.ToolCallId))
		mu.Unlock()
		return selected(acp.OptionAllowOnce)(ctx, q)
	}
	s := attach(t, r, peer)
	r.reg.Execute(context.Background(), bashCall("c1", "true"))
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(log, ", "); got != "update, ask c1, update, update" {
		t.Errorf("sequence: %s", got)
	}
}

func TestApprove_AlwaysForPathsCoversOnlyThosePaths(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	writeFile(t, filepath.Join(r.ws, "a.txt"), "one two three")
	writeFile(t, filepath.Join(r.ws, "b.txt"), "one")
	peer := &fakePeer{answer: selected(acp.OptionAllowAlways)}
	attach(t, r, peer)
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if e.Name() == "edit" {
			return tools.Asked(""), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	edit := func(id, path, old, new string) tools.Result {
		return r.reg.Execute(context.Background(), tools.Call{ID: id, Name: "edit", Agent: agentKey,
			Arguments: args(map[string]any{"path": path, "old_string": old, "new_string": new})})
	}
	for _, c := range []struct{ id, path, old, new string }{
		{"e1", "a.txt", "one", "1"},
		{"e2", "./a.txt", "two", "2"},                      // the same file, spelled differently: covered
		{"e3", filepath.Join(r.ws, "a.txt"), "three", "3"}, // absolute: covered
		{"e4", "b.txt", "one", "1"},                        // another file: asked
	} {
		if res := edit(c.id, c.path, c.old, c.new); res.IsError {
			t.Fatalf("%s: %+v", c.id, res)
		}
	}
	_, asks := peer.recorded()
	var ids []string
	for _, a := range asks {
		ids = append(ids, string(a.ToolCall.ToolCallId))
	}
	if got := strings.Join(ids, ","); got != "e1,e4" {
		t.Errorf("asked for %s, want e1,e4", got)
	}
	if n := asks[0].Options[1].Name; n != "Always allow edit on "+filepath.Join(r.ws, "a.txt") {
		t.Errorf("allow_always named %q", n)
	}
}

func TestApprove_UnknownOptionDeniesWithAClearReason(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	attach(t, r, &fakePeer{answer: selected("yes please")})
	res := r.reg.Execute(context.Background(), bashCall("c1", "true"))
	if code(res) != tools.CodeApprovalFailed || !strings.Contains(res.Content[0].Text, `option "yes please", which was not offered`) {
		t.Fatalf("%+v", res)
	}
}

func TestApprove_AnswerWithoutOutcomeDenies(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	attach(t, r, &fakePeer{answer: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return acpsdk.RequestPermissionResponse{}, nil
	}})
	res := r.reg.Execute(context.Background(), bashCall("c1", "true"))
	if code(res) != tools.CodeApprovalFailed || !strings.Contains(res.Content[0].Text, "without an outcome") {
		t.Fatalf("%+v", res)
	}
}

func TestApprove_PeerErrorDenies(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	attach(t, r, &fakePeer{answer: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return acpsdk.RequestPermissionResponse{}, errors.New("peer disconnected before response")
	}})
	res := r.reg.Execute(context.Background(), bashCall("c1", "true"))
	if code(res) != tools.CodeApprovalFailed || !strings.Contains(res.Content[0].Text, "peer disconnected") {
		t.Fatalf("%+v", res)
	}
}

func TestApprove_ClientCancelledOutcomeIsCancelled(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	attach(t, r, &fakePeer{answer: func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeCancelled()}, nil
	}})
	if res := r.reg.Execute(context.Background(), bashCall("c1", "true")); code(res) != tools.CodeApprovalCancelled {
		t.Fatalf("%+v", res)
	}
}

// neverAnswers is a client that receives the request and never answers
// (it ignores its context too): asked receives each request.
func neverAnswers(asked chan<- struct{}, release <-chan struct{}) func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
	return func(context.Context, acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		asked <- struct{}{}
		<-release
		return acpsdk.RequestPermissionResponse{Outcome: acpsdk.NewRequestPermissionOutcomeSelected(acp.OptionAllowOnce)}, nil
	}
}

func TestApprove_SilentClientDoesNotHoldTheCallPastItsContext(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	asked, release := make(chan struct{}, 1), make(chan struct{})
	s := attach(t, r, &fakePeer{answer: neverAnswers(asked, release)})
	t.Cleanup(func() { close(release) }) // runs before the session's cleanup
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	res := r.reg.Execute(ctx, bashCall("c1", "true"))
	if code(res) != tools.CodeAbortedBeforeDispatch {
		t.Fatalf("%+v", res)
	}
	if err := s.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestApprove_SessionCancelAnswersCancelled(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	asked, release := make(chan struct{}, 1), make(chan struct{})
	silent := neverAnswers(asked, release)
	s := attach(t, r, &fakePeer{answer: func(ctx context.Context, q acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error) {
		if q.ToolCall.ToolCallId == "c1" {
			return silent(ctx, q)
		}
		return selected(acp.OptionAllowOnce)(ctx, q)
	}})
	t.Cleanup(func() { close(release) })
	go func() { <-asked; s.Cancel() }()
	if res := r.reg.Execute(context.Background(), bashCall("c1", "true")); code(res) != tools.CodeApprovalCancelled {
		t.Fatalf("%+v", res)
	}
	// The next turn asks again normally.
	if res := r.reg.Execute(context.Background(), bashCall("c2", "true")); res.IsError {
		t.Fatalf("after Cancel, a new ask: %+v", res)
	}
}

func TestApprove_ClosedSessionAnswersUnavailable(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	asked, release := make(chan struct{}, 1), make(chan struct{})
	s := attach(t, r, &fakePeer{answer: neverAnswers(asked, release)})
	t.Cleanup(func() { close(release) })
	go func() { <-asked; s.Close() }()
	if res := r.reg.Execute(context.Background(), bashCall("c1", "true")); code(res) != tools.CodeApprovalUnavailable {
		t.Fatalf("%+v", res)
	}
}

func TestApprove_UnattachedScopeGoesToFallbackOrIsUnavailable(t *testing.T) {
	call := tools.Call{ID: "c1", Name: "bash", Arguments: args(map[string]any{"command": "true", "description": "d"}), Agent: "other"}
	r := newRig(t, acp.Config{Approval: true})
	if res := r.reg.Execute(context.Background(), call); code(res) != tools.CodeApprovalUnavailable {
		t.Fatalf("%+v", res)
	}
	var got tools.ApprovalRequest
	r2 := newRig(t, acp.Config{Approval: true, Fallback: tools.ApproverFunc(func(_ context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		got = req
		return tools.AllowedOnce, nil
	})})
	if res := r2.reg.Execute(context.Background(), call); res.IsError {
		t.Fatalf("%+v", res)
	}
	if got.CallID != "c1" || got.Agent != "other" {
		t.Errorf("fallback got %+v", got)
	}
}

func TestApprove_AlwaysRulesBelongToOneSession(t *testing.T) {
	r := newRig(t, acp.Config{Approval: true})
	p1 := &fakePeer{answer: selected(acp.OptionAllowAlways)}
	p2 := &fakePeer{answer: selected(acp.OptionAllowOnce)}
	attach(t, r, p1)
	s2, err := r.bridge.Attach("agent-2", p2, "s2", acp.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close(); <-s2.Done() })
	ctx := context.Background()
	r.reg.Execute(ctx, bashCall("a1", "true"))
	r.reg.Execute(ctx, bashCall("a2", "true")) // remembered in s1
	other := bashCall("b1", "true")
	other.Agent = "agent-2"
	r.reg.Execute(ctx, other) // asked in s2
	if err := s2.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	_, asks1 := p1.recorded()
	_, asks2 := p2.recorded()
	if len(asks1) != 1 || len(asks2) != 1 || asks2[0].SessionId != "s2" {
		t.Errorf("asks: s1 %d, s2 %d", len(asks1), len(asks2))
	}
	if u, _ := p2.recorded(); len(u) == 0 {
		t.Error("agent-2's calls went to no session")
	}
}
