package approval_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
)

// hangGuard is how long a case that must return at once (it takes well
// under a millisecond) may take before it counts as hung: a safety net
// that turns an endless walk of a cyclic error into a failure, not a clock.
const hangGuard = time.Minute

// within runs f and fails the test if it has not returned within
// hangGuard. A hung f is left running: the test has failed anyway.
func within(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatalf("%s did not return within %v (an unbounded walk of a cyclic error?)", what, hangGuard)
	}
}

// selfWrap is an error whose Unwrap returns itself: errors.Is and
// errors.As walk it forever.
type selfWrap struct{}

func (selfWrap) Error() string   { return "self-wrapping error" }
func (e selfWrap) Unwrap() error { return e }

// selfJoin is an error whose Unwrap() []error contains itself: errors.Is
// and errors.As recurse into it without end, and the stack overflow that
// follows kills the process (it cannot be recovered). So that an unbounded
// read fails the test instead of ending the test binary, this one stops
// containing itself after selfJoinDepth calls, and counts them in unwraps:
// a bounded reader calls it at most safeerr.MaxChain (64) times a walk.
type selfJoin struct{ unwraps *atomic.Int64 }

const (
	selfJoinDepth = 100_000
	// maxUnwraps bounds the Unwrap calls of the few bounded walks one
	// Approve (or one call through the registry) makes.
	maxUnwraps = 1000
)

func (selfJoin) Error() string { return "self-joining error" }
func (e selfJoin) Unwrap() []error {
	if e.unwraps.Add(1) > selfJoinDepth {
		return nil
	}
	return []error{e}
}

// panicText is an error whose Error method panics.
type panicText struct{}

func (panicText) Error() string { panic("Error exploded") }

// panicString is a panic value whose String method panics.
type panicString struct{}

func (panicString) String() string { panic("String exploded") }

// hostileAnswers are answerer failures whose error (or panic value) is
// hostile. An answer is made for each run, with its own count of the
// Unwrap calls of its selfJoin errors.
var hostileAnswers = []struct {
	name   string
	answer func(unwraps *atomic.Int64) approval.AnswerFunc
	want   string // in the result's text
}{
	{"Unwrap returns itself", fails(selfWrap{}), "failed: self-wrapping error"},
	{"behind %w", fails(fmt.Errorf("ui: %w", selfWrap{})), "failed: ui: self-wrapping error"},
	{"in errors.Join", fails(errors.Join(io.EOF, selfWrap{})), "self-wrapping error"},
	{"as tools.Error.Err", fails(&tools.Error{Message: "tool", Err: selfWrap{}}), "failed: tool: self-wrapping error"},
	{"an AnswererError wrapping itself", func(*atomic.Int64) approval.AnswerFunc {
		return func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
			ae := &approval.AnswererError{Tool: "bash", CallID: "forged"}
			ae.Err = ae
			return "", ae
		}
	}, "wraps this one"},
	{"Error panics", fails(panicText{}), "whose Error method panicked"},
	{"panic value's String panics", func(*atomic.Int64) approval.AnswerFunc {
		return func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) { panic(panicString{}) }
	}, "String exploded"},
	{"Unwrap []error contains itself", func(n *atomic.Int64) approval.AnswerFunc { return fail(selfJoin{n}) }, "failed: self-joining error"},
	{"behind %w %w", func(n *atomic.Int64) approval.AnswerFunc {
		return fail(fmt.Errorf("%w; %w", io.EOF, selfJoin{n}))
	}, "failed: EOF; self-joining error"},
	{"in errors.Join twice", func(n *atomic.Int64) approval.AnswerFunc { return fail(errors.Join(selfJoin{n}, selfWrap{})) }, "self-joining error"},
}

// fails is the answer failing with err, whatever the count.
func fails(err error) func(*atomic.Int64) approval.AnswerFunc {
	return func(*atomic.Int64) approval.AnswerFunc { return fail(err) }
}

// errorText is err's message, or what its Error method panicked with.
func errorText(err error) (s string) {
	defer func() {
		if v := recover(); v != nil {
			s = fmt.Sprintf("(Error panicked: %v)", v)
		}
	}()
	if err == nil {
		return ""
	}
	return err.Error()
}

func fail(err error) approval.AnswerFunc {
	return func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		return tools.AllowedOnce, err
	}
}

// Defect: Service.Approve read the answerer's error with errors.As,
// unbounded: a cyclic chain hung Approve (and with it the call) or, for an
// Unwrap() []error containing itself, overflowed the stack and killed the
// process. Every such error is now a denial (APPROVAL_FAILED) saying what
// the answerer returned, at once, read with a bounded number of Unwrap
// calls.
func TestHostileAnswererErrorIsADenial(t *testing.T) {
	for _, tc := range hostileAnswers {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("Approve", func(t *testing.T) {
				var unwraps atomic.Int64
				s := mustNew(t, approval.Config{Answerer: tc.answer(&unwraps)}, nil)
				defer s.Close()
				var (
					o   tools.ApprovalOutcome
					err error
					msg string
				)
				within(t, "Approve", func() {
					o, err = s.Approve(context.Background(), tools.ApprovalRequest{Agent: "a1", Tool: "bash", CallID: "c1"})
					msg = errorText(err)
				})
				if n := unwraps.Load(); n > maxUnwraps {
					t.Fatalf("the answerer's error was unwrapped %d times: read unbounded", n)
				}
				ae, ok := err.(*approval.AnswererError)
				if o != "" || !ok || ae.CallID != "c1" {
					t.Fatalf("Approve = %q, %T; want \"\" and the service's *AnswererError for c1", o, err)
				}
				if !ae.Is(approval.ErrAnswerer) || !strings.Contains(msg, tc.want) {
					t.Fatalf("error %q; want it to match ErrAnswerer and contain %q", msg, tc.want)
				}
			})
			t.Run("registry", func(t *testing.T) {
				var unwraps atomic.Int64
				e := newEnv(t)
				e.approval(t, approval.Config{Answerer: tc.answer(&unwraps)})
				var r tools.Result
				within(t, "Execute", func() { r = e.exec(context.Background(), "c1", "a1") })
				if n := unwraps.Load(); n > maxUnwraps {
					t.Fatalf("the answerer's error was unwrapped %d times: read unbounded", n)
				}
				if code(r) != tools.CodeApprovalFailed || e.ran.Load() != 0 {
					t.Fatalf("result %+v; want APPROVAL_FAILED, body not run", r)
				}
				if !strings.Contains(r.Content[0].Text, tc.want) {
					t.Errorf("text %q lacks %q", r.Content[0].Text, tc.want)
				}
				if !strings.Contains(e.log.String(), `"level":"error"`) {
					t.Errorf("failure not logged:\n%s", e.log.String())
				}
			})
		})
	}
}

// Defect: the Terminal's withdrawal line read the withdrawal's cause (the
// caller's, from context.Cause) with errors.Is: a cyclic cause kept the
// answerer in an endless walk, so disposing the approval plugin (and
// closing the host) hung, waiting for it. The line now says the call was
// cancelled, and the plugin is disposed at once.
func TestTerminalCyclicCauseDoesNotHangDispose(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cause error
	}{
		{"Unwrap returns itself", selfWrap{}},
		{"behind %w %w", fmt.Errorf("%w; %w", io.EOF, selfWrap{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inR, inW := io.Pipe()
			defer inW.Close() // ends the read still waiting for the withdrawn question's line
			out := newScreen()
			e := newEnv(t)
			f := e.approval(t, approval.Config{Answerer: approval.NewTerminal(inR, out)})
			ctx, cancel := context.WithCancelCause(context.Background())
			done := make(chan tools.Result, 1)
			go func() { done <- e.exec(ctx, "c1", "a1") }()
			out.waitCount(t, prompt, 1)
			cancel(tc.cause)
			var r tools.Result
			within(t, "Execute", func() { r = <-done })
			if code(r) != tools.CodeAbortedBeforeDispatch || e.ran.Load() != 0 {
				t.Fatalf("result %+v; want ABORTED_BEFORE_DISPATCH", r)
			}
			out.waitCount(t, "[withdrawn] tool bash, call c1: the call was cancelled. Press Enter to continue.", 1)
			within(t, "disposing the approval plugin", func() {
				if err := f.Dispose(); err != nil {
					t.Error(err)
				}
			})
			within(t, "closing the host", func() { _ = e.h.Close() })
		})
	}
}
