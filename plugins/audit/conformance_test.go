package audit_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/audit"
	"github.com/dsh-go/dsh/plugins/audit/audittest"
)

// forEachStore runs f on a fresh store of each kind: one conformance
// suite, both implementations.
func forEachStore(t *testing.T, f func(t *testing.T, s audit.Store)) {
	for _, kind := range audittest.Kinds {
		t.Run(kind, func(t *testing.T) { f(t, audittest.Open(t, kind)) })
	}
}

var t0 = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

func call(id, tool string, at time.Time) audit.Call {
	return audit.Call{ID: id, Instance: "i1", Started: at, Tool: tool, Identity: "alice", Session: "mcp-1", Agent: "mcp-1",
		Args: `{"path":"/tmp/x"}`, Decisions: []audit.Decision{{Stage: "pre-execute", Outcome: "allow", By: "rule", Rule: tool}}}
}

func finished(c audit.Call, code string, d time.Duration) audit.Call {
	c.Finished, c.Duration, c.Code, c.IsError = c.Started.Add(d), d, code, code != ""
	c.Stages = []audit.Stage{{Name: "execute", Start: time.Millisecond, Duration: d - time.Millisecond}}
	c.ResultSize, c.Preview = 5, "hello"
	return c
}

func TestConformance_EntryThenCompletionAndQueries(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		ctx := context.Background()
		a, b, c := call("a", "mcp__fs__read_file", t0), call("b", "mcp__fs__write_file", t0.Add(time.Second)), call("c", "echo", t0.Add(2*time.Second))
		c.Identity = "bob"
		if err := s.Write(ctx, []audit.Call{a, b, c}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Call(ctx, "a")
		if err != nil || !got.Unfinished() || got.Tool != "mcp__fs__read_file" || got.Args != a.Args || len(got.Decisions) != 1 || got.Decisions[0].Rule != "mcp__fs__read_file" {
			t.Fatalf("entry record: %+v, %v", got, err)
		}
		if err := s.Write(ctx, []audit.Call{finished(a, "", 3*time.Millisecond), finished(b, "DENIED", 2*time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Call(ctx, "b")
		if got.Unfinished() || got.Code != "DENIED" || !got.IsError || got.Duration != 2*time.Millisecond || len(got.Stages) != 1 || got.Preview != "hello" || !got.Started.Equal(b.Started) {
			t.Fatalf("completed record: %+v", got)
		}
		ids := func(q audit.Query) string {
			cs, err := s.Calls(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			out := ""
			for _, c := range cs {
				out += c.ID
			}
			return out
		}
		for _, tc := range []struct {
			q    audit.Query
			want string
		}{
			{audit.Query{}, "cba"},
			{audit.Query{Tool: "mcp__fs__*"}, "ba"},
			{audit.Query{Tool: "echo"}, "c"},
			{audit.Query{Identity: "bob"}, "c"},
			{audit.Query{Code: "DENIED"}, "b"},
			{audit.Query{Code: "ok"}, "a"},
			{audit.Query{Unfinished: true}, "c"},
			{audit.Query{Since: t0.Add(time.Second)}, "cb"},
			{audit.Query{Until: t0.Add(time.Second)}, "a"},
			{audit.Query{Limit: 1}, "c"},
			{audit.Query{FinishedAfter: t0}, "ab"},
			{audit.Query{FinishedAfter: t0.Add(time.Second)}, "b"},
			{audit.Query{Tool: "%"}, ""},
		} {
			if got := ids(tc.q); got != tc.want {
				t.Errorf("query %+v = %q, want %q", tc.q, got, tc.want)
			}
		}
		if _, err := s.Call(ctx, "nope"); !errors.Is(err, audit.ErrNotFound) {
			t.Errorf("missing record: %v", err)
		}
	})
}

func ask(id, instance string) audit.Ask {
	return audit.Ask{ID: id, Call: "rec-" + id, Instance: instance, Created: t0, Tool: "mcp__fs__write_file",
		Identity: "alice", Session: "mcp-1", Reason: "writes", Rule: "mcp__fs__write_file", Args: `{"path":"/tmp/x"}`, Card: "card"}
}

func TestConformance_AnAskIsAnsweredExactlyOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		ctx := context.Background()
		if err := s.Register(ctx, "live", "gw"); err != nil {
			t.Fatal(err)
		}
		var notices atomic.Int32
		unsub := s.Subscribe(func(n audit.Notice) {
			if n.Kind == "ask" && n.ID == "q1" {
				notices.Add(1)
			}
		})
		defer unsub()
		if err := s.PutAsk(ctx, ask("q1", "live")); err != nil {
			t.Fatal(err)
		}
		const answerers = 16
		var (
			wg  sync.WaitGroup
			won atomic.Int32
		)
		for i := range answerers {
			wg.Go(func() {
				answer := audit.AnswerAllow
				if i%2 == 1 {
					answer = audit.AnswerReject
				}
				_, err := s.AnswerAsk(ctx, "q1", answer, fmt.Sprint("person", i))
				switch {
				case err == nil:
					won.Add(1)
				case !errors.Is(err, audit.ErrNotPending):
					t.Errorf("answer %d: %v", i, err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 {
			t.Fatalf("%d answers taken, want exactly 1", won.Load())
		}
		a, err := s.Ask(ctx, "q1")
		if err != nil || a.State != audit.AskAnswered || a.AnsweredBy == "" || a.AnsweredAt.IsZero() {
			t.Fatalf("answered ask: %+v %v", a, err)
		}
		if ok, err := s.Transition(ctx, "q1", []audit.AskState{audit.AskAnswered}, audit.AskApplied); !ok || err != nil {
			t.Fatalf("applied: %v %v", ok, err)
		}
		if ok, _ := s.Transition(ctx, "q1", []audit.AskState{audit.AskAnswered}, audit.AskLate); ok {
			t.Fatal("an applied ask moved again")
		}
		if _, err := s.AnswerAsk(ctx, "q1", audit.AnswerAllow, "late"); !errors.Is(err, audit.ErrNotPending) {
			t.Fatalf("answer after apply: %v", err)
		}
		if _, err := s.AnswerAsk(ctx, "q1", "yes please", "x"); err == nil {
			t.Fatal("unknown answer accepted")
		}
		deadline := time.Now().Add(30 * time.Second)
		for notices.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		if notices.Load() == 0 {
			t.Fatal("no notice of the ask reached the subscriber")
		}
	})
}

func TestConformance_AnAskOfAGoneGatewayIsAbandonedNeverAnswered(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		ctx := context.Background()
		if err := s.Register(ctx, "live", "gw"); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAsk(ctx, ask("dead1", "never-registered")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAsk(ctx, ask("dead2", "never-registered")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutAsk(ctx, ask("ok", "live")); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AnswerAsk(ctx, "dead1", audit.AnswerAllow, "alice"); !errors.Is(err, audit.ErrAbandoned) {
			t.Fatalf("answer to a gone gateway's ask: %v", err)
		}
		a, _ := s.Ask(ctx, "dead1")
		if a.State != audit.AskAbandoned || a.Answer != "" {
			t.Fatalf("dead1: %+v", a)
		}
		pending, err := s.Asks(ctx, audit.AskPending, 0)
		if err != nil || len(pending) != 1 || pending[0].ID != "ok" {
			t.Fatalf("pending after sweep: %+v %v", pending, err)
		}
		a, _ = s.Ask(ctx, "dead2")
		if a.State != audit.AskAbandoned {
			t.Fatalf("dead2 not swept: %+v", a)
		}
		all, _ := s.Asks(ctx, "", 0)
		if len(all) != 3 {
			t.Fatalf("all asks: %d", len(all))
		}
	})
}

// Reopening a store runs no migration twice and keeps what was written;
// a call whose gateway stopped before its completion stays unfinished.
func TestConformance_RecordsSurviveReopenAndMigrationsRunOnce(t *testing.T) {
	ctx := context.Background()
	for _, kind := range audittest.Kinds {
		t.Run(kind, func(t *testing.T) {
			var open func() (audit.Store, error)
			switch kind {
			case "sqlite":
				p := audittest.SQLitePath(t)
				open = func() (audit.Store, error) { return audit.OpenSQLite(ctx, p) }
			default:
				dsn := audittest.PostgresDSN(t)
				open = func() (audit.Store, error) { return audit.OpenPostgres(ctx, dsn) }
			}
			s, err := open()
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Write(ctx, []audit.Call{call("mid", "slow", t0)}); err != nil {
				t.Fatal(err)
			}
			s.Close()
			// Two concurrent opens: the migrations are serialized.
			var wg sync.WaitGroup
			stores := make([]audit.Store, 2)
			for i := range stores {
				wg.Go(func() {
					var err error
					if stores[i], err = open(); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			for _, s := range stores {
				if s != nil {
					defer s.Close()
				}
			}
			if t.Failed() {
				return
			}
			got, err := stores[0].Calls(ctx, audit.Query{Unfinished: true})
			if err != nil || len(got) != 1 || got[0].ID != "mid" {
				t.Fatalf("unfinished after reopen: %+v %v", got, err)
			}
		})
	}
}

// Batches may commit in any order (PostgreSQL runs several at once): an
// entry record written after its completion does not undo it.
func TestConformance_AnEntryNeverReplacesACompletedRecord(t *testing.T) {
	forEachStore(t, func(t *testing.T, s audit.Store) {
		ctx := context.Background()
		c := call("x", "echo", t0)
		done := finished(c, "DENIED", time.Millisecond)
		done.Decisions = append(done.Decisions, audit.Decision{Stage: "guards", Outcome: "deny", By: "guard"})
		if err := s.Write(ctx, []audit.Call{done}); err != nil {
			t.Fatal(err)
		}
		if err := s.Write(ctx, []audit.Call{c}); err != nil {
			t.Fatal(err)
		}
		got, err := s.Call(ctx, "x")
		if err != nil || got.Unfinished() || got.Code != "DENIED" || len(got.Decisions) != 2 || got.Preview != "hello" || len(got.Stages) != 1 {
			t.Fatalf("after a late entry record: %+v %v", got, err)
		}
	})
}
