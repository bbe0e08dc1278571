package approval_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
)

// screen is the terminal's output: tests wait for text to appear on it.
type screen struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{}
}

func newScreen() *screen { return &screen{changed: make(chan struct{})} }

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Write(p)
	close(s.changed)
	s.changed = make(chan struct{})
	return len(p), nil
}

func (s *screen) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitCount waits until sub appears n times on the screen.
func (s *screen) waitCount(t *testing.T, sub string, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second) // a safety net, not a clock
	for {
		s.mu.Lock()
		got, ch := strings.Count(s.b.String(), sub), s.changed
		s.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("waited for %d× %q; screen:\n%s", n, sub, s.String())
		}
	}
}

const prompt = "Allow once? [y/N] "

func req(id string, card tools.CallView) tools.ApprovalRequest {
	return tools.ApprovalRequest{Agent: "a1", Tool: "bash", CallID: id, Reason: "writes files", Call: card}
}

func TestTerminalParsesAnswers(t *testing.T) {
	for _, tc := range []struct {
		input string
		want  tools.ApprovalOutcome
		asks  int
	}{
		{"y\n", tools.AllowedOnce, 1},
		{"  YES \r\n", tools.AllowedOnce, 1},
		{"Yes", tools.AllowedOnce, 1}, // last line without newline, then EOF
		{"n\n", tools.Rejected, 1},
		{"no\n", tools.Rejected, 1},
		{"\n", tools.Rejected, 1},
		{"", tools.Unavailable, 1},
		{"maybe\ny\n", tools.AllowedOnce, 2},
		{"maybe\nsure\n", tools.Unavailable, 3}, // then EOF
		{"a\nb\nc\ny\n", tools.Rejected, 3},     // bounded: the third bad answer rejects
	} {
		t.Run(strings.TrimSpace(tc.input), func(t *testing.T) {
			out := &strings.Builder{}
			term := approval.NewTerminal(strings.NewReader(tc.input), out)
			o, err := term.Answer(context.Background(), req("c1", nil))
			if err != nil || o != tc.want {
				t.Fatalf("Answer = %q, %v; want %q", o, err, tc.want)
			}
			if got := strings.Count(out.String(), prompt); got != tc.asks {
				t.Errorf("asked %d times, want %d:\n%s", got, tc.asks, out)
			}
			if tc.want == tools.Unavailable {
				// Input has ended: later requests are unavailable at once.
				if o, err := term.Answer(context.Background(), req("c2", nil)); o != tools.Unavailable || err != nil {
					t.Errorf("after EOF: %q, %v", o, err)
				}
			}
		})
	}
}

func TestTerminalRendersCards(t *testing.T) {
	old := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	for _, tc := range []struct {
		name string
		req  tools.ApprovalRequest
		want string
	}{
		{"terminal", req("c1", tools.TerminalCall{Title: "go test ./...", Description: "Run the tests", Cwd: "/repo"}), `Approval requested: tool bash, call c1, agent a1
  # Run the tests
  (in /repo)
  $ go test ./...
  reason: writes files
`},
		{"generic", req("c2", tools.GenericCall{Title: "Read main.go", Kind: "read", RawInput: json.RawMessage(`{ "path": "main.go" }`),
			Locations: []tools.Location{{Path: "main.go", Line: 12}, {Path: "go.mod"}}}), `Approval requested: tool bash, call c2, agent a1
  Read main.go [read]
  locations: main.go:12, go.mod
  input: {"path":"main.go"}
  reason: writes files
`},
		{"diff", req("c3", tools.DiffCall{Title: "Edit x.txt", Diffs: []tools.FileDiff{
			{Path: "x.txt", OldText: &old, NewText: "a\nb\nC\nd\ne\nf\ng\nh\ni\nj\nk\n"},
			{Path: "new.txt", NewText: "hello\n"},
		}}), `Approval requested: tool bash, call c3, agent a1
  Edit x.txt
  --- x.txt
  +++ x.txt
  @@ -1,5 +1,5 @@
   a
   b
  -c
  +C
   d
   e
  @@ -9,2 +9,3 @@
   i
   j
  +k
  new file new.txt (1 lines)
  +hello
  reason: writes files
`},
		{"no card", tools.ApprovalRequest{Tool: "bash", CallID: "c4"}, `Approval requested: tool bash, call c4
  bash
`},
		{"escapes", req("c5", tools.TerminalCall{Title: "echo \x1b[2Jhi\u202e", Description: "two\nlines"}), `Approval requested: tool bash, call c5, agent a1
  # two\nlines
  $ echo \x1b[2Jhi\u202e
  reason: writes files
`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := approval.Render(tc.req); got != tc.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Without a card the prompt shows the tool name and its raw arguments,
// through the real pipeline.
func TestTerminalShowsRawArgumentsWithoutCard(t *testing.T) {
	e := newEnv(t)
	out := newScreen()
	e.approval(t, approval.Config{Answerer: approval.NewTerminal(strings.NewReader("y\n"), out)})
	if _, err := e.reg.Register(e.agent, tools.Definition{
		Name: "plain", Description: "No card.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
	}); err != nil {
		t.Fatal(err)
	}
	r := e.reg.Execute(context.Background(), tools.Call{ID: "c9", Name: "plain", Arguments: []byte(`{"b":1,"a":"x"}`), Agent: "a1"})
	if r.IsError {
		t.Fatalf("%+v", r)
	}
	want := "Approval requested: tool plain, call c9, agent a1\n  plain\n  input: {\"b\":1,\"a\":\"x\"}\n  reason: bash needs a human\n" + prompt
	if out.String() != want {
		t.Errorf("got:\n%q\nwant:\n%q", out.String(), want)
	}
}

// Several calls ask at once: one question at a time, each answer
// attributed to the question on screen when it was typed.
func TestTerminalOneQuestionAtATime(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	out := newScreen()
	term := approval.NewTerminal(inR, out)
	type res struct {
		id string
		o  tools.ApprovalOutcome
	}
	results := make(chan res, 3)
	for _, id := range []string{"c1", "c2", "c3"} {
		go func() {
			o, err := term.Answer(context.Background(), req(id, tools.TerminalCall{Title: "cmd " + id}))
			if err != nil {
				t.Error(err)
			}
			results <- res{id, o}
		}()
	}
	want := map[string]tools.ApprovalOutcome{"y": tools.AllowedOnce, "n": tools.Rejected, "yes": tools.AllowedOnce}
	answered := map[string]bool{}
	for i, a := range []string{"y", "n", "yes"} {
		out.waitCount(t, prompt, i+1)
		s := out.String()
		if got := strings.Count(s, "Approval requested"); got != i+1 {
			t.Fatalf("%d questions on screen, want %d:\n%s", got, i+1, s)
		}
		last := s[strings.LastIndex(s, "Approval requested"):]
		shown := strings.TrimSuffix(strings.Fields(last)[5], ",") // "Approval requested: tool bash, call c1, agent a1"
		io.WriteString(inW, a+"\n")
		r := <-results
		if r.id != shown || r.o != want[a] {
			t.Errorf("answer %q: %s got %q; the screen showed %s", a, r.id, r.o, shown)
		}
		if answered[r.id] {
			t.Errorf("%s answered twice", r.id)
		}
		answered[r.id] = true
	}
}

// A request cancelled while queued is never shown; one cancelled while
// shown gets a withdrawal line, and input typed for it is not attributed to
// the next question.
func TestTerminalWithdrawal(t *testing.T) {
	inR, inW := io.Pipe()
	defer inW.Close()
	out := newScreen()
	term := approval.NewTerminal(inR, out)

	ctx1, cancel1 := context.WithCancel(context.Background())
	ctx2, cancel2 := context.WithCancel(context.Background())
	type res struct {
		o   tools.ApprovalOutcome
		err error
	}
	r1, r2, r3 := make(chan res, 1), make(chan res, 1), make(chan res, 1)
	go func() { o, err := term.Answer(ctx1, req("c1", nil)); r1 <- res{o, err} }()
	out.waitCount(t, prompt, 1)
	go func() { o, err := term.Answer(ctx2, req("c2", nil)); r2 <- res{o, err} }()

	// c2 is withdrawn while waiting: it is never shown.
	cancel2()
	if r := <-r2; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("c2: %+v", r)
	}
	go func() { o, err := term.Answer(context.Background(), req("c3", nil)); r3 <- res{o, err} }()

	// c1 is withdrawn while shown.
	cancel1()
	if r := <-r1; !errors.Is(r.err, context.Canceled) {
		t.Fatalf("c1: %+v", r)
	}
	out.waitCount(t, "[withdrawn] tool bash, call c1: the call was cancelled. Press Enter to continue.", 1)
	// The line being read belonged to c1: it is discarded, and only then
	// is c3 (not the withdrawn c2) shown.
	io.WriteString(inW, "y\n")
	out.waitCount(t, prompt, 2)
	if strings.Contains(out.String(), "call c2") {
		t.Fatalf("withdrawn queued request was shown:\n%s", out)
	}
	if !strings.Contains(out.String(), "call c3") {
		t.Fatalf("c3 not shown:\n%s", out)
	}
	io.WriteString(inW, "n\n")
	if r := <-r3; r.o != tools.Rejected || r.err != nil {
		t.Fatalf("c3: %+v (the stale \"y\" must not approve it)", r)
	}
}

// A question waiting behind a withdrawn one's pending line can itself be
// withdrawn without being shown.
func TestTerminalWithdrawnWhileWaitingForStaleLine(t *testing.T) {
	inR, inW := io.Pipe()
	out := newScreen()
	term := approval.NewTerminal(inR, out)
	ctx1, cancel1 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := term.Answer(ctx1, req("c1", nil)); done <- err }()
	out.waitCount(t, prompt, 1)
	cancel1()
	<-done
	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { _, err := term.Answer(ctx2, req("c2", nil)); done <- err }()
	cancel2()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("c2: %v", err)
	}
	if strings.Contains(out.String(), "call c2") {
		t.Fatalf("c2 shown:\n%s", out)
	}
	// Ending the input ends the pending read; later requests are
	// unavailable.
	inW.Close()
	if o, err := term.Answer(context.Background(), req("c3", nil)); o != tools.Unavailable || err != nil {
		t.Fatalf("c3: %q, %v", o, err)
	}
}

// The deadline withdraws a question on screen: unavailable after exactly
// the timeout, and the person is told.
func TestX2_TerminalDeadlineWithdrawal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = 20 * time.Millisecond
		inR, inW := io.Pipe()
		defer inW.Close() // ends the read still waiting for the withdrawn question's line
		out := newScreen()
		s := mustNew(t, approval.Config{Answerer: approval.NewTerminal(inR, out), Timeout: timeout}, nil)
		defer s.Close()
		start := time.Now()
		o, err := s.Approve(context.Background(), req("c1", nil))
		if o != tools.Unavailable || err != nil || time.Since(start) != timeout {
			t.Fatalf("%q, %v after %v; want unavailable after %v", o, err, time.Since(start), timeout)
		}
		out.waitCount(t, "[withdrawn] tool bash, call c1: no answer before the deadline (unavailable). Press Enter to continue.", 1)
	})
}

func TestTerminalWriteFailureIsUnavailable(t *testing.T) {
	term := approval.NewTerminal(strings.NewReader("y\n"), failWriter{})
	if o, err := term.Answer(context.Background(), req("c1", nil)); o != tools.Unavailable || err != nil {
		t.Fatalf("%q, %v", o, err)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("closed") }
