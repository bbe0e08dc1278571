package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type env struct {
	h     *host.Host
	root  *host.Context
	agent *host.Context
	reg   *tools.Registry
	log   *toolstest.LogBuffer
	ran   atomic.Int32 // tool bodies run
}

// newEnv boots a host with the system prompt and the registry, an agent
// scope "a1", a tool "bash" (terminal card) and a pre-execute listener that
// asks for every call. No approval service is loaded.
func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{log: &toolstest.LogBuffer{}}
	e.h = host.New(host.WithLogger(zerolog.New(e.log)))
	t.Cleanup(func() { _ = e.h.Close() })
	e.root = e.h.Root()
	if err := toolstest.Setup(e.root); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.reg, err = tools.Service.Get(e.root); err != nil {
		t.Fatal(err)
	}
	if e.agent, err = e.root.Scope("a1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.reg.Register(e.root, tools.Definition{
		Name:        "bash",
		Description: "Run a shell command.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`),
		Execute: func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
			e.ran.Add(1)
			return tools.Output{Content: []tools.Content{tools.Text("ran " + x.Arg("command").String())}}, nil
		},
		PresentCall: func(args json.RawMessage) tools.CallView {
			var a struct{ Command string }
			if json.Unmarshal(args, &a) != nil {
				return nil
			}
			return tools.TerminalCall{Title: a.Command, Description: "Run it", Cwd: "/work"}
		},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		return tools.Asked("bash needs a human"), nil
	}); err != nil {
		t.Fatal(err)
	}
	return e
}

func mustLoad(t testing.TB, c *host.Context, p host.Plugin, cfg any) *host.Fiber {
	t.Helper()
	f, err := c.Plugin(p, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (e *env) approval(t testing.TB, cfg approval.Config) *host.Fiber {
	return mustLoad(t, e.root, approval.Plugin, cfg)
}

func (e *env) exec(ctx context.Context, id string, agent host.ScopeKey) tools.Result {
	return e.reg.Execute(ctx, tools.Call{ID: id, Name: "bash", Arguments: []byte(`{"command":"rm -rf build"}`), Agent: agent})
}

func code(r tools.Result) tools.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func answer(o tools.ApprovalOutcome) approval.AnswerFunc {
	return func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) { return o, nil }
}

// X2 and P4: every outcome through the real pipeline.
func TestX2_Outcomes(t *testing.T) {
	for _, tc := range []struct {
		outcome tools.ApprovalOutcome
		code    tools.ErrorCode
		ran     bool
	}{
		{tools.AllowedOnce, "", true},
		{tools.Rejected, tools.CodeApprovalRejected, false},
		{tools.Cancelled, tools.CodeApprovalCancelled, false},
		{tools.Unavailable, tools.CodeApprovalUnavailable, false},
	} {
		t.Run(string(tc.outcome), func(t *testing.T) {
			e := newEnv(t)
			var got tools.ApprovalRequest
			e.approval(t, approval.Config{Answerer: approval.AnswerFunc(func(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				got = req
				return tc.outcome, nil
			})})
			r := e.exec(context.Background(), "c1", "a1")
			if code(r) != tc.code || (e.ran.Load() == 1) != tc.ran || r.IsError == tc.ran {
				t.Fatalf("result %+v, body ran %d; want code %q, ran %v", r, e.ran.Load(), tc.code, tc.ran)
			}
			want := tools.TerminalCall{Title: "rm -rf build", Description: "Run it", Cwd: "/work"}
			if got.Agent != "a1" || got.Tool != "bash" || got.CallID != "c1" || got.Reason != "bash needs a human" || got.Call != want || got.Execution == nil {
				t.Errorf("request %+v", got)
			}
		})
	}
}

func TestP4_AskWithoutServiceOrAgentDenies(t *testing.T) {
	e := newEnv(t)
	if r := e.exec(context.Background(), "c1", "a1"); !r.IsError || e.ran.Load() != 0 {
		t.Fatalf("no service: %+v", r)
	}
	var asked atomic.Int32
	e.approval(t, approval.Config{Answerer: approval.AnswerFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		asked.Add(1)
		return tools.AllowedOnce, nil
	})})
	if r := e.exec(context.Background(), "c2", ""); !r.IsError || e.ran.Load() != 0 || asked.Load() != 0 {
		t.Fatalf("no agent: %+v (asked %d)", r, asked.Load())
	}
	if r := e.exec(context.Background(), "c3", "a1"); r.IsError || e.ran.Load() != 1 || asked.Load() != 1 {
		t.Fatalf("with both: %+v", r)
	}
}

func TestP4_DenialPassesThroughPostExecute(t *testing.T) {
	e := newEnv(t)
	e.approval(t, approval.Config{Answerer: answer(tools.Rejected)})
	var seen tools.ErrorCode
	if _, err := host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next events.Next[tools.PostDecision]) (tools.PostDecision, error) {
		seen = code(in.Result())
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	e.exec(context.Background(), "c1", "a1")
	if seen != tools.CodeApprovalRejected {
		t.Fatalf("post-execute saw %q", seen)
	}
}

func TestX2_CancelWhileWaitingIsAbortedBeforeDispatch(t *testing.T) {
	e := newEnv(t)
	q := approval.NewQueue()
	e.approval(t, approval.Config{Answerer: q})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan tools.Result)
	go func() { done <- e.exec(ctx, "c1", "a1") }()
	p := <-q.Requests()
	if p.Request.CallID != "c1" {
		t.Fatalf("request %+v", p.Request)
	}
	cancel()
	r := <-done
	if code(r) != tools.CodeAbortedBeforeDispatch || e.ran.Load() != 0 {
		t.Fatalf("result %+v", r)
	}
	<-p.Done() // withdrawn
	if w, why := p.Withdrawn(); !w || !errors.Is(why, context.Canceled) {
		t.Errorf("Withdrawn() = %v, %v", w, why)
	}
	if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) {
		t.Errorf("late Respond: %v, want ErrWithdrawn", err)
	}
}

func TestX2_DeadlineMakesUnansweredUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		q := approval.NewQueue()
		e.approval(t, approval.Config{Answerer: q, Timeout: 30 * time.Second})
		start := time.Now()
		done := make(chan tools.Result)
		go func() { done <- e.exec(context.Background(), "c1", "a1") }()
		p := <-q.Requests()
		r := <-done
		if code(r) != tools.CodeApprovalUnavailable || time.Since(start) != 30*time.Second {
			t.Fatalf("result %+v after %v, want APPROVAL_UNAVAILABLE after 30s", r, time.Since(start))
		}
		<-p.Done()
		if w, why := p.Withdrawn(); !w || !errors.Is(why, approval.ErrTimeout) {
			t.Errorf("Withdrawn() = %v, %v", w, why)
		}
	})
}

// A request nobody receives within the deadline is never delivered.
func TestX2_DeadlineBeforeDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		q := approval.NewQueue()
		e.approval(t, approval.Config{Answerer: q, Timeout: time.Second})
		if r := e.exec(context.Background(), "c1", "a1"); code(r) != tools.CodeApprovalUnavailable {
			t.Fatalf("result %+v", r)
		}
		select {
		case p := <-q.Requests():
			t.Fatalf("withdrawn request delivered: %+v", p.Request)
		default:
		}
	})
}

func TestX2_AnsweredBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		q := approval.NewQueue()
		e.approval(t, approval.Config{Answerer: q, Timeout: 30 * time.Second})
		go func() {
			p := <-q.Requests()
			time.Sleep(29 * time.Second)
			if err := p.Respond(tools.AllowedOnce); err != nil {
				t.Error(err)
			}
			if err := p.Respond(tools.Rejected); !errors.Is(err, approval.ErrAnswered) {
				t.Errorf("second Respond: %v", err)
			}
		}()
		if r := e.exec(context.Background(), "c1", "a1"); r.IsError || e.ran.Load() != 1 {
			t.Fatalf("result %+v", r)
		}
	})
}

func TestX2_MisbehavingAnswererFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   approval.AnswerFunc
		want string
	}{
		{"panic", func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) { panic("boom") }, "panicked: boom"},
		{"error", func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
			return tools.AllowedOnce, errors.New("ui crashed")
		}, "ui crashed"},
		{"unknown outcome", answer("allowed-forever"), `unknown outcome "allowed-forever"`},
		{"empty outcome", answer(""), `unknown outcome ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.approval(t, approval.Config{Answerer: tc.fn})
			r := e.exec(context.Background(), "c1", "a1")
			if code(r) != tools.CodeApprovalFailed || e.ran.Load() != 0 {
				t.Fatalf("result %+v", r)
			}
			if !strings.Contains(r.Content[0].Text, tc.want) {
				t.Errorf("text %q lacks %q", r.Content[0].Text, tc.want)
			}
			if !strings.Contains(e.log.String(), `"level":"error"`) {
				t.Errorf("failure not logged:\n%s", e.log.String())
			}
		})
	}
}

func TestServiceApproveDirect(t *testing.T) {
	req := tools.ApprovalRequest{Agent: "a1", Tool: "bash", CallID: "c1"}
	t.Run("no answerer", func(t *testing.T) {
		s := mustNew(t, approval.Config{}, nil)
		defer s.Close()
		if o, err := s.Approve(context.Background(), req); o != tools.Unavailable || err != nil {
			t.Fatalf("%q, %v", o, err)
		}
	})
	t.Run("answerer error is typed", func(t *testing.T) {
		s := mustNew(t, approval.Config{Answerer: approval.AnswerFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
			return "", errors.New("x")
		})}, nil)
		defer s.Close()
		_, err := s.Approve(context.Background(), req)
		var ae *approval.AnswererError
		if !errors.Is(err, approval.ErrAnswerer) || !errors.As(err, &ae) || ae.CallID != "c1" {
			t.Fatalf("%v", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		s := mustNew(t, approval.Config{Answerer: answer(tools.AllowedOnce)}, nil)
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Approve(ctx, req); !errors.Is(err, context.Canceled) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("answerer ignoring its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			release := make(chan struct{})
			var returned atomic.Bool
			s := mustNew(t, approval.Config{Timeout: time.Second, Answerer: approval.AnswerFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				<-release
				returned.Store(true)
				return tools.AllowedOnce, nil
			})}, nil)
			start := time.Now()
			if o, err := s.Approve(context.Background(), req); o != tools.Unavailable || err != nil || time.Since(start) != time.Second {
				t.Fatalf("%q, %v after %v", o, err, time.Since(start))
			}
			closed := make(chan struct{})
			go func() { s.Close(); close(closed) }()
			synctest.Wait()
			select {
			case <-closed:
				t.Fatal("Close returned while an answerer was still running")
			default:
			}
			close(release)
			<-closed
			if !returned.Load() {
				t.Fatal("answerer abandoned")
			}
		})
	})
	t.Run("caller deadline is the caller's", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := mustNew(t, approval.Config{Timeout: time.Minute, Answerer: approval.NewQueue()}, nil)
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			if o, err := s.Approve(ctx, req); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("%q, %v; want the caller's DeadlineExceeded", o, err)
			}
		})
	})
}

func TestPluginLifecycle(t *testing.T) {
	e := newEnv(t)
	q := approval.NewQueue()
	f := e.approval(t, approval.Config{Answerer: q})
	if _, ok := tools.ApprovalService.Lookup(e.root); !ok {
		t.Fatal("service not provided")
	}
	done := make(chan tools.Result)
	go func() { done <- e.exec(context.Background(), "c1", "a1") }()
	p := <-q.Requests()
	// Disposing the plugin withdraws the waiting request: unavailable.
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if r := <-done; code(r) != tools.CodeApprovalUnavailable {
		t.Fatalf("result %+v", r)
	}
	if w, why := p.Withdrawn(); !w || !errors.Is(why, approval.ErrClosed) {
		t.Errorf("Withdrawn() = %v, %v", w, why)
	}
	if _, ok := tools.ApprovalService.Lookup(e.root); ok {
		t.Fatal("service still provided")
	}
	for _, cfg := range []any{approval.Config{Timeout: -1}, "x"} {
		f, err := e.root.Plugin(approval.Plugin, cfg)
		if err == nil || f.State() != host.Failed {
			t.Errorf("config %v: state %v, err %v", cfg, f.State(), err)
		}
		f.Dispose()
	}
}

func TestQueueConcurrentRequests(t *testing.T) {
	e := newEnv(t)
	q := approval.NewQueue()
	e.approval(t, approval.Config{Answerer: q})
	const n = 8
	results := make(chan tools.Result, n)
	for i := range n {
		go func() { results <- e.exec(context.Background(), "c"+string(rune('0'+i)), "a1") }()
	}
	for range n {
		p := <-q.Requests()
		o := tools.Rejected
		if p.Request.CallID[1]%2 == 0 {
			o = tools.AllowedOnce
		}
		if err := p.Respond(o); err != nil {
			t.Fatal(err)
		}
	}
	var allowed int
	for range n {
		if r := <-results; !r.IsError {
			allowed++
		}
	}
	if allowed != n/2 || e.ran.Load() != n/2 {
		t.Fatalf("allowed %d, ran %d", allowed, e.ran.Load())
	}
}

func mustNew(t testing.TB, cfg approval.Config, log *zerolog.Logger) *approval.Service {
	t.Helper()
	s, err := approval.New(cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	if _, err := approval.New(approval.Config{Timeout: -time.Second}, nil); err == nil {
		t.Fatal("a negative timeout was accepted")
	}
}
