package approval_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
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
// and errors.As recurse into it until the stack overflows, which kills the
// process (it cannot be recovered).
type selfJoin struct{}

func (selfJoin) Error() string     { return "self-joining error" }
func (e selfJoin) Unwrap() []error { return []error{e} }

// panicText is an error whose Error method panics.
type panicText struct{}

func (panicText) Error() string { panic("Error exploded") }

// panicString is a panic value whose String method panics.
type panicString struct{}

func (panicString) String() string { panic("String exploded") }

// hostileAnswers are answerer failures whose error (or panic value) is
// hostile. crashes marks the ones that, read unbounded, overflow the stack:
// they run in a child process so that the crash fails the test instead of
// ending the test binary.
var hostileAnswers = []struct {
	name    string
	crashes bool
	fn      approval.AnswerFunc
	want    string // in the result's text
}{
	{"Unwrap returns itself", false, fail(selfWrap{}), "failed: self-wrapping error"},
	{"behind %w", false, fail(fmt.Errorf("ui: %w", selfWrap{})), "failed: ui: self-wrapping error"},
	{"in errors.Join", false, fail(errors.Join(io.EOF, selfWrap{})), "self-wrapping error"},
	{"as tools.Error.Err", false, fail(&tools.Error{Message: "tool", Err: selfWrap{}}), "failed: tool: self-wrapping error"},
	{"an AnswererError wrapping itself", false, func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		ae := &approval.AnswererError{Tool: "bash", CallID: "forged"}
		ae.Err = ae
		return "", ae
	}, "wraps this one"},
	{"Error panics", false, fail(panicText{}), "whose Error method panicked"},
	{"panic value's String panics", false, func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		panic(panicString{})
	}, "String exploded"},
	{"Unwrap []error contains itself", true, fail(selfJoin{}), "failed: self-joining error"},
	{"behind %w %w", true, fail(fmt.Errorf("%w; %w", io.EOF, selfJoin{})), "failed: EOF; self-joining error"},
	{"in errors.Join twice", true, fail(errors.Join(selfJoin{}, selfWrap{})), "self-joining error"},
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

// childCase names the hostile case a child process runs (see inChild).
const childCase = "DSH_APPROVAL_HOSTILE_CASE"

// Defect: Service.Approve read the answerer's error with errors.As,
// unbounded: a cyclic chain hung Approve (and with it the call) or, for an
// Unwrap() []error containing itself, overflowed the stack and killed the
// process. Every such error is now a denial (APPROVAL_FAILED) saying what
// the answerer returned, at once.
func TestHostileAnswererErrorIsADenial(t *testing.T) {
	only := os.Getenv(childCase)
	for _, tc := range hostileAnswers {
		if only != "" && only != tc.name {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			if tc.crashes && only == "" {
				inChild(t, tc.name)
				return
			}
			t.Run("Approve", func(t *testing.T) {
				s := mustNew(t, approval.Config{Answerer: tc.fn}, nil)
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
				ae, ok := err.(*approval.AnswererError)
				if o != "" || !ok || ae.CallID != "c1" {
					t.Fatalf("Approve = %q, %T; want \"\" and the service's *AnswererError for c1", o, err)
				}
				if !ae.Is(approval.ErrAnswerer) || !strings.Contains(msg, tc.want) {
					t.Fatalf("error %q; want it to match ErrAnswerer and contain %q", msg, tc.want)
				}
			})
			t.Run("registry", func(t *testing.T) {
				e := newEnv(t)
				e.approval(t, approval.Config{Answerer: tc.fn})
				var r tools.Result
				within(t, "Execute", func() { r = e.exec(context.Background(), "c1", "a1") })
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

// inChild runs the hostile case name in a child process (this test binary,
// this test, only that case) and fails if the child fails, crashes or hangs.
func inChild(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestHostileAnswererErrorIsADenial$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), childCase+"="+name)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHostileAnswererErrorIsADenial/"+strings.ReplaceAll(name, " ", "_")) {
		const max = 4000
		s := string(out)
		if len(s) > max {
			s = s[:max] + "\n[...]"
		}
		t.Fatalf("child process for %q: %v\n%s", name, err, s)
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
