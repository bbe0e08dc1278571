package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/audit"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(crashChildEnv); db != "" {
		crashChild(db)
		return
	}
	goleak.VerifyTestMain(m)
}

type echoArgs struct {
	Text   string `json:"text" dsh:"required"`
	Secret string `json:"api_token,omitempty"`
}

// rig is a registry with an echo tool, a policy (deny "nope", ask for
// "danger"), a guard (denies text "guarded"), the recorder and,
// optionally, an approver.
type rig struct {
	h     *host.Host
	root  *host.Context
	reg   *tools.Registry
	rec   *audit.Recorder
	store audit.Store
	ran   atomic.Int32
	gate  chan struct{} // when set, the tool body waits on it
}

func newRig(t *testing.T, store audit.Store, wc audit.WriterConfig) *rig {
	t.Helper()
	r := &rig{store: store}
	r.h = host.New()
	t.Cleanup(func() { r.h.Close() })
	r.root = r.h.Root()
	if _, err := r.root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(r.root)
	if err != nil {
		t.Fatal(err)
	}
	r.reg = reg
	body := func(ctx context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
		r.ran.Add(1)
		if r.gate != nil {
			select {
			case <-r.gate:
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			}
		}
		return tools.TextOutput("echo: " + a.Text), nil
	}
	for _, name := range []string{"echo", "nope", "danger"} {
		if _, err := reg.Register(r.root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{Name: name, Description: "Echo.", Execute: body})); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := host.OnWaterfall(r.root, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		switch e.Name() {
		case "nope":
			return tools.Denied("not this one"), nil
		case "danger":
			return tools.Asked("dangerous"), nil
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Guard(r.root, func(e *tools.Execution) error {
		if e.Arg("text").String() == "guarded" {
			return errors.New("guarded text")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := audit.NewRecorder(audit.Config{Store: store, Instance: "gw1", Writer: wc,
		Session: func(a host.ScopeKey) audit.SessionInfo {
			return audit.SessionInfo{Identity: "alice", Session: string(a), Agent: "agent-" + string(a)}
		},
		Explain: func(e *tools.Execution) audit.Explanation {
			if e.Name() == "nope" {
				return audit.Explanation{Verdict: "deny", Rule: "nope"}
			}
			return audit.Explanation{Verdict: "allow"}
		}})
	if err != nil {
		t.Fatal(err)
	}
	r.rec = rec
	t.Cleanup(func() { rec.Close() })
	if err := rec.Install(r.root, reg); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rig) call(ctx context.Context, id, tool, args string) tools.Result {
	return r.reg.Execute(ctx, tools.Call{ID: id, Name: tool, Arguments: json.RawMessage(args), Agent: "s1"})
}

func byCallID(t *testing.T, s audit.Store) map[string]audit.Call {
	t.Helper()
	cs, err := s.Calls(context.Background(), audit.Query{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]audit.Call{}
	for _, c := range cs {
		if _, dup := m[c.CallID]; dup {
			t.Fatalf("two records for call %s", c.CallID)
		}
		m[c.CallID] = c
	}
	return m
}

func TestRecorder_EveryCallIsRecordedOnceWithItsDecisions(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		r := newRig(t, s, audit.WriterConfig{})
		ctx := context.Background()
		r.call(ctx, "ok", "echo", `{"text":"hi","api_token":"sekrit"}`)
		r.call(ctx, "denied", "nope", `{"text":"x"}`)
		r.call(ctx, "guarded", "echo", `{"text":"guarded"}`)
		r.call(ctx, "invalid", "echo", `{"nope":1}`)
		r.call(ctx, "asked", "danger", `{"text":"x"}`) // no approver: unavailable
		r.rec.Close()
		m := byCallID(t, s)
		if len(m) != 5 {
			t.Fatalf("%d records, want 5: %v", len(m), m)
		}
		ok := m["ok"]
		if ok.Unfinished() || ok.Code != "" || ok.Identity != "alice" || ok.Session != "s1" || ok.Agent != "agent-s1" || ok.Instance != "gw1" ||
			!strings.Contains(ok.Preview, "echo: hi") || ok.ResultSize == 0 || ok.Duration <= 0 {
			t.Errorf("ok: %+v", ok)
		}
		if strings.Contains(ok.Args, "sekrit") || !strings.Contains(ok.Args, `"api_token":"***"`) {
			t.Errorf("secret not redacted: %s", ok.Args)
		}
		names := []string{}
		for _, st := range ok.Stages {
			names = append(names, st.Name)
		}
		if got := strings.Join(names, ","); !strings.Contains(got, "pre-execute") || !strings.Contains(got, "dispatch") || !strings.Contains(got, "execute") {
			t.Errorf("stages: %s", got)
		}
		if d := m["denied"].Decisions; len(d) == 0 || d[0].Outcome != "deny" || d[0].By != "rule" || d[0].Rule != "nope" || m["denied"].Code != string(tools.CodeDenied) {
			t.Errorf("denied: %+v", m["denied"])
		}
		g := m["guarded"]
		if len(g.Decisions) < 2 || g.Decisions[1].By != "guard" || g.Decisions[1].Outcome != "deny" {
			t.Errorf("guarded: %+v", g.Decisions)
		}
		if m["invalid"].Code != string(tools.CodeInvalidArgs) || m["invalid"].Unfinished() {
			t.Errorf("invalid: %+v", m["invalid"])
		}
		a := m["asked"]
		if len(a.Decisions) < 2 || a.Decisions[0].Outcome != "ask" || a.Decisions[1].Stage != "approval" || a.Decisions[1].Outcome != "unavailable" {
			t.Errorf("asked: %+v", a.Decisions)
		}
	})
}

// The entry record is written before the call's body runs: a gateway that
// dies mid-call leaves the call on record, unfinished.
func TestRecorder_TheEntryRecordIsWrittenBeforeTheBodyRuns(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		r := newRig(t, s, audit.WriterConfig{})
		r.gate = make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			r.call(context.Background(), "slow", "echo", `{"text":"x"}`)
		}()
		for r.ran.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// The body runs: its record is already in the store, unfinished,
		// or (SQLite) in the entry journal the next open replays.
		if db := audit.DBPath(s); db != "" {
			j, err := os.ReadFile(audit.JournalPath(db, "gw1"))
			if err != nil || !strings.Contains(string(j), `"callId":"slow"`) {
				t.Fatalf("journal while running: %q %v", j, err)
			}
		} else {
			cs, err := s.Calls(context.Background(), audit.Query{Unfinished: true})
			if err != nil || len(cs) != 1 || cs[0].CallID != "slow" {
				t.Fatalf("unfinished while running: %+v %v", cs, err)
			}
		}
		close(r.gate)
		<-done
	})
}

// blockingStore is a store whose writes wait until released.
type blockingStore struct {
	audit.Store
	release chan struct{}
	mu      sync.Mutex
	written []audit.Call
}

func (b *blockingStore) Kind() string { return "blocking" }

func (b *blockingStore) Write(ctx context.Context, calls []audit.Call) error {
	<-b.release
	b.mu.Lock()
	b.written = append(b.written, calls...)
	b.mu.Unlock()
	return nil
}

func TestRecorder_AFullQueueFailsTheCallClosed(t *testing.T) {
	for _, mode := range []audit.OnFull{audit.Fail, audit.Block} {
		t.Run(string(mode), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bs := &blockingStore{release: make(chan struct{})}
				r := newRig(t, bs, audit.WriterConfig{Queue: 1, OnFull: mode, BlockTimeout: time.Minute})
				// The first call's entry record fills the queue (the
				// writer holds it, blocked in Write, until it is written).
				first := make(chan tools.Result, 1)
				go func() { first <- r.call(context.Background(), "c1", "echo", `{"text":"1"}`) }()
				synctest.Wait()
				start := time.Now()
				res := r.call(context.Background(), "c2", "echo", `{"text":"2"}`)
				if !res.IsError || res.Error.Code != audit.CodeUnavailable {
					t.Fatalf("second call: %+v", res)
				}
				waited := time.Since(start)
				if mode == audit.Fail && waited != 0 || mode == audit.Block && waited != time.Minute {
					t.Fatalf("%s waited %v", mode, waited)
				}
				if r.ran.Load() != 0 {
					t.Fatal("a body ran before its entry record was written")
				}
				close(bs.release)
				// Under Block the first call waited as long for its own
				// entry record, which was not written in time either.
				if res := <-first; res.IsError != (mode == audit.Block) || res.IsError && res.Error.Code != audit.CodeUnavailable {
					t.Fatalf("queued call: %+v", res)
				}
				r.rec.Close()
				// c2's one record (its failure) is written too: nothing
				// is dropped.
				got := map[string]bool{}
				for _, c := range bs.written {
					if !c.Unfinished() {
						got[c.CallID] = true
					}
				}
				if len(got) != 2 {
					t.Fatalf("final records: %v", got)
				}
			})
		})
	}
}

// tools.ApprovalService must answer asks of "danger" with the inbox.
func provideInbox(t *testing.T, r *rig, in *audit.Inbox) {
	t.Helper()
	if _, err := tools.ApprovalService.Provide(r.root, in); err != nil {
		t.Fatal(err)
	}
}

func waitPending(t *testing.T, s audit.Store) audit.Ask {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		as, err := s.Asks(context.Background(), audit.AskPending, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) > 0 {
			return as[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("no pending ask")
	return audit.Ask{}
}

func waitState(t *testing.T, s audit.Store, id string, want audit.AskState) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		a, err := s.Ask(context.Background(), id)
		if err == nil && a.State == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	a, _ := s.Ask(context.Background(), id)
	t.Fatalf("ask %s is %s, want %s", id, a.State, want)
}

func TestInbox_AConsoleAnswerAppliesOnceWhileTheCallerWaits(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		r := newRig(t, s, audit.WriterConfig{})
		in, err := audit.NewInbox(context.Background(), audit.InboxConfig{Store: s, Instance: "gw1",
			Rule: func(tools.ApprovalRequest) string { return "danger" }})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		provideInbox(t, r, in)
		ctx := context.Background()
		for _, tc := range []struct {
			answer string
			code   tools.ErrorCode
		}{{audit.AnswerReject, tools.CodeApprovalRejected}, {audit.AnswerAllow, ""}, {audit.AnswerAlways, ""}} {
			res := make(chan tools.Result, 1)
			go func() { res <- r.call(ctx, "c-"+tc.answer, "danger", `{"text":"x","api_token":"t0p"}`) }()
			a := waitPending(t, s)
			if a.Tool != "danger" || a.Rule != "danger" || a.Reason != "dangerous" || a.Call == "" || strings.Contains(a.Args, "t0p") || !strings.Contains(a.Card, "danger") {
				t.Fatalf("stored ask: %+v", a)
			}
			if _, err := s.AnswerAsk(ctx, a.ID, tc.answer, "carol"); err != nil {
				t.Fatal(err)
			}
			got := <-res
			if code := errCode(got); code != tc.code {
				t.Fatalf("%s: result %+v", tc.answer, got)
			}
			waitState(t, s, a.ID, audit.AskApplied)
		}
		// "always": the next call of the tool in the session is not asked.
		if got := r.call(ctx, "again", "danger", `{"text":"x"}`); got.IsError {
			t.Fatalf("after always: %+v", got)
		}
		if as, _ := s.Asks(ctx, "", 0); len(as) != 3 {
			t.Fatalf("%d asks, want 3 (the fourth call was granted by always)", len(as))
		}
		r.rec.Close()
		m := byCallID(t, s)
		d := m["c-allow"].Decisions
		if len(d) < 2 || d[1].Approver != "carol" || d[1].Channel != "console" || d[1].Outcome != string(tools.AllowedOnce) {
			t.Fatalf("allow decisions: %+v", d)
		}
		if d := m["again"].Decisions; len(d) < 2 || d[1].Channel != "always" || d[1].Approver != "carol" {
			t.Fatalf("always decisions: %+v", d)
		}
	})
}

func errCode(r tools.Result) tools.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// An answer given after the caller stopped waiting grants nothing: the
// ask is withdrawn, and a later answer is refused.
func TestInbox_AnAnswerAfterTheCallerLeftGrantsNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		r := newRig(t, s, audit.WriterConfig{})
		in, err := audit.NewInbox(context.Background(), audit.InboxConfig{Store: s, Instance: "gw1"})
		if err != nil {
			t.Fatal(err)
		}
		defer in.Close()
		provideInbox(t, r, in)
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan tools.Result, 1)
		go func() { res <- r.call(ctx, "c1", "danger", `{"text":"x"}`) }()
		a := waitPending(t, s)
		cancel()
		if got := <-res; errCode(got) != tools.CodeAbortedBeforeDispatch {
			t.Fatalf("cancelled: %+v", got)
		}
		waitState(t, s, a.ID, audit.AskWithdrawn)
		if _, err := s.AnswerAsk(context.Background(), a.ID, audit.AnswerAllow, "carol"); !errors.Is(err, audit.ErrNotPending) {
			t.Fatalf("late answer: %v", err)
		}
		if r.ran.Load() != 0 {
			t.Fatal("the body ran")
		}
	})
}

// crashChildEnv, set to a SQLite path, makes the test binary a gateway
// that records into it a call whose body blocks, after creating the file
// "<path>.running"; its parent kills it there.
const crashChildEnv = "DSH_AUDIT_CRASH_CHILD"

// stuckStore never finishes a write: what reaches the database cannot
// explain a record found after the crash, only the journal can.
type stuckStore struct{ audit.Store }

func (stuckStore) Write(ctx context.Context, _ []audit.Call) error {
	<-ctx.Done()
	select {} // until killed
}

func crashChild(db string) {
	ctx := context.Background()
	s, err := audit.OpenSQLite(ctx, db)
	if err != nil {
		panic(err)
	}
	h := host.New()
	root := h.Root()
	if _, err := root.Plugin(tools.Plugin, tools.Config{}); err != nil {
		panic(err)
	}
	reg, _ := tools.Service.Get(root)
	reg.Register(root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{Name: "echo", Description: "Echo.",
		Execute: func(context.Context, echoArgs, *tools.Execution) (tools.Output, error) {
			os.WriteFile(db+".running", nil, 0o600)
			select {}
		}}))
	reg.Register(root, tools.MustDefine(tools.TypedTool[echoArgs, tools.Output]{Name: "fast", Description: "Echo.",
		Execute: func(_ context.Context, a echoArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.TextOutput(a.Text), nil
		}}))
	rec, err := audit.NewRecorder(audit.Config{Store: stuckStore{s}, Instance: "crash",
		Writer: audit.WriterConfig{Journal: audit.JournalPath(db, "crash")}})
	if err != nil {
		panic(err)
	}
	if err := rec.Install(root, reg); err != nil {
		panic(err)
	}
	reg.Execute(ctx, tools.Call{ID: "done", Name: "fast", Arguments: json.RawMessage(`{"text":"x"}`), Agent: "a"})
	reg.Execute(ctx, tools.Call{ID: "mid-call", Name: "echo", Arguments: json.RawMessage(`{"text":"x"}`), Agent: "a"})
}

// A gateway killed while a call runs leaves the call on record,
// unfinished, and the call it completed before on record as completed,
// though nothing reached the database before the kill: the journal is
// replayed at the next open.
func TestRecorder_SQLiteEntrySurvivesAKill(t *testing.T) {
	db := filepath.Join(t.TempDir(), "audit.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+db)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(db + ".running"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child never ran the call")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	s, err := audit.OpenSQLite(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs, err := s.Calls(context.Background(), audit.Query{Unfinished: true})
	if err != nil || len(cs) != 1 || cs[0].CallID != "mid-call" || cs[0].Tool != "echo" || cs[0].Instance != "crash" {
		t.Fatalf("after the kill: %+v %v", cs, err)
	}
	// The call that completed before the kill is on record as completed.
	cs, err = s.Calls(context.Background(), audit.Query{Code: "ok"})
	if err != nil || len(cs) != 1 || cs[0].CallID != "done" || cs[0].Preview != "x" {
		t.Fatalf("completed before the kill: %+v %v", cs, err)
	}
	if m, _ := filepath.Glob(db + ".journal-*"); len(m) != 0 {
		t.Fatalf("journal left after replay: %v", m)
	}
}
