package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// This file pins the guarantees that hold against hostile user code
// (BEHAVIORS G2, G3, G4), and the boundary checks that go with them.

// bodyCounter is a tool body that counts its runs.
func bodyCounter(name string, runs *atomic.Int32) tools.Definition {
	d := echo(name, "body ran")
	inner := d.Execute
	d.Execute = func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		runs.Add(1)
		return inner(ctx, x)
	}
	return d
}

// TestG2_CancelledCallNeverRunsTheBodyWhateverContextAWrapperPasses: the
// caller cancels while a tools/execute wrapper runs; the wrapper then calls
// next with a context that is not derived from the caller's. The body must
// not start, and the call is ABORTED_BEFORE_DISPATCH. (The caller's
// cancellation used to reach the body's context through context.AfterFunc,
// asynchronously, so the body nearly always started.)
func TestG2_CancelledCallNeverRunsTheBodyWhateverContextAWrapperPasses(t *testing.T) {
	for _, tc := range []struct {
		name string
		wctx func(context.Context) (context.Context, context.CancelFunc)
	}{
		{"background", func(context.Context) (context.Context, context.CancelFunc) {
			return context.Background(), func() {}
		}},
		{"without-cancel", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithoutCancel(ctx), func() {}
		}},
		{"own-cancel", func(context.Context) (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}},
		{"derived", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithValue(ctx, ctxKey{}, "v"), func() {}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var runs atomic.Int32
			mustRegister(t, e.reg, e.root, bodyCounter("t", &runs))
			var cancelCaller context.CancelFunc
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				cancelCaller()
				w, cancel := tc.wctx(ctx)
				defer cancel()
				return next(w)
			}))
			// Many tries: the old asynchronous propagation lost the race in
			// nearly every one; the check is now synchronous.
			for i := 0; i < 100; i++ {
				ctx, cancel := context.WithCancel(context.Background())
				cancelCaller = cancel
				res := e.reg.Execute(ctx, call("t", `{}`))
				if code(res) != tools.CodeAbortedBeforeDispatch || runs.Load() != 0 {
					t.Fatalf("try %d: result %s %q, body ran %d times; want ABORTED_BEFORE_DISPATCH and no run", i, code(res), text(res), runs.Load())
				}
			}
		})
	}
}

// TestG2_WrapperShortCircuitAfterCancellationIsAbortedBeforeDispatch: a
// wrapper that returns a result of its own (without next, or after next was
// refused) once the caller cancelled: the body never ran, so the code is
// ABORTED_BEFORE_DISPATCH, not ABORTED.
func TestG2_WrapperShortCircuitAfterCancellationIsAbortedBeforeDispatch(t *testing.T) {
	for _, callsNext := range []bool{false, true} {
		t.Run(fmt.Sprint("callsNext=", callsNext), func(t *testing.T) {
			e := newEnv(t)
			var runs atomic.Int32
			mustRegister(t, e.reg, e.root, bodyCounter("t", &runs))
			ctx, cancel := context.WithCancel(context.Background())
			var nextSaw tools.Result
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(wctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				cancel()
				if callsNext {
					nextSaw, _ = next(context.Background())
				}
				return tools.Result{Content: []tools.Content{tools.Text("from the cache")}}, nil
			}))
			res := e.reg.Execute(ctx, call("t", `{}`))
			if code(res) != tools.CodeAbortedBeforeDispatch || runs.Load() != 0 {
				t.Errorf("result %s %q, body ran %d times; want ABORTED_BEFORE_DISPATCH", code(res), text(res), runs.Load())
			}
			if callsNext && code(nextSaw) != tools.CodeAbortedBeforeDispatch {
				t.Errorf("next after the caller cancelled returned %s %q", code(nextSaw), text(nextSaw))
			}
		})
	}
	// Once a body started, a cancellation is ABORTED.
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		cancel()
		return tools.Output{Content: []tools.Content{tools.Text("done")}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	if res := e.reg.Execute(ctx, call("t", `{}`)); code(res) != tools.CodeAborted {
		t.Errorf("cancelled during the body: %s %q, want ABORTED", code(res), text(res))
	}
}

// TestG2_AnApprovalAnsweredAfterWithdrawalGrantsNothing: an approver that
// answers once the call's context is done (the request was withdrawn).
// No answer may grant anything then: the call is ABORTED_BEFORE_DISPATCH,
// no later stage (wrappers, body) runs; a rejection is kept as the
// more specific denial.
func TestG2_AnApprovalAnsweredAfterWithdrawalGrantsNothing(t *testing.T) {
	for _, tc := range []struct {
		outcome tools.ApprovalOutcome
		err     error
		want    tools.ErrorCode
	}{
		{tools.AllowedOnce, nil, tools.CodeAbortedBeforeDispatch},
		{tools.Cancelled, nil, tools.CodeAbortedBeforeDispatch},
		{tools.Unavailable, nil, tools.CodeAbortedBeforeDispatch},
		{"maybe", nil, tools.CodeAbortedBeforeDispatch},
		{"", errors.New("answerer gone"), tools.CodeAbortedBeforeDispatch},
		{tools.AllowedOnce, errors.New("answerer gone"), tools.CodeAbortedBeforeDispatch},
		{tools.Rejected, nil, tools.CodeApprovalRejected},
	} {
		t.Run(fmt.Sprintf("%s/%v", tc.outcome, tc.err), func(t *testing.T) {
			e := newEnv(t)
			var runs, later atomic.Int32
			mustRegister(t, e.reg, e.root, bodyCounter("t", &runs))
			must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
				return tools.Asked("needs a human"), nil
			}))
			must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
				later.Add(1)
				return next(context.Background())
			}))
			ctx, cancel := context.WithCancel(context.Background())
			must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(actx context.Context, _ tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				go cancel() // the request is withdrawn while the user looks at it
				<-actx.Done()
				return tc.outcome, tc.err // ... and the answer arrives late
			})))
			c := call("t", `{}`)
			c.Agent = "a"
			res := e.reg.Execute(ctx, c)
			if code(res) != tc.want || runs.Load() != 0 || later.Load() != 0 {
				t.Errorf("result %s %q; body runs %d, later stages ran %d times; want %s and nothing after approval", code(res), text(res), runs.Load(), later.Load(), tc.want)
			}
		})
	}
}

// TestG3_ExecuteWaitsForABodyAWrapperLeftRunning: a naive wrapper runs next
// on another goroutine and returns without waiting for it. Execute must not
// return, nor emit tools/result, while that body still runs: the body is
// cancelled (cause ErrAbandoned) and waited for.
func TestG3_ExecuteWaitsForABodyAWrapperLeftRunning(t *testing.T) {
	e := newEnv(t)
	var bodyDone atomic.Bool
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	var cause error
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "slow", Description: "Slow.",
		Execute: func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
			started <- struct{}{}
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
			case <-release:
			}
			bodyDone.Store(true)
			return tools.Output{Content: []tools.Content{tools.Text("body finished")}}, nil
		},
	})
	var spawned sync.WaitGroup
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		spawned.Go(func() { _, _ = next(ctx) })
		<-started
		return tools.Result{Content: []tools.Content{tools.Text("the wrapper gave up")}, IsError: true}, nil
	}))
	var doneAtResult []bool
	must2(t)(host.On(e.root, tools.ResultEvent, func(context.Context, tools.ResultNotice) error {
		doneAtResult = append(doneAtResult, bodyDone.Load())
		return nil
	}))
	res := e.reg.Execute(context.Background(), call("slow", `{}`))
	doneAtReturn := bodyDone.Load()
	close(release)
	spawned.Wait()
	if !doneAtReturn || len(doneAtResult) != 1 || !doneAtResult[0] {
		t.Fatalf("body finished before Execute returned: %v; before tools/result: %v", doneAtReturn, doneAtResult)
	}
	if !errors.Is(cause, tools.ErrAbandoned) {
		t.Errorf("the abandoned body's context cause = %v, want ErrAbandoned", cause)
	}
	if text(res) != "the wrapper gave up" {
		t.Errorf("result %q: the wrapper's own result should stand", text(res))
	}
}

// TestG3_NextCalledAfterTheStageEndedStartsNoBody: a wrapper leaves a
// goroutine that calls next only after the call returned; that next is
// refused (ABORTED_BEFORE_DISPATCH) and the body never runs.
func TestG3_NextCalledAfterTheStageEndedStartsNoBody(t *testing.T) {
	e := newEnv(t)
	var runs atomic.Int32
	mustRegister(t, e.reg, e.root, bodyCounter("t", &runs))
	gate := make(chan struct{})
	late := make(chan tools.Result, 1)
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		go func() {
			<-gate
			r, _ := next(context.Background())
			late <- r
		}()
		return tools.Result{Content: []tools.Content{tools.Text("short")}}, nil
	}))
	res := e.reg.Execute(context.Background(), call("t", `{}`))
	close(gate)
	if r := <-late; code(r) != tools.CodeAbortedBeforeDispatch || runs.Load() != 0 {
		t.Errorf("late next: %s %q, body ran %d times", code(r), text(r), runs.Load())
	}
	if text(res) != "short" {
		t.Errorf("result %+v", res)
	}
}

// Hostile error values: each method of the error protocol misbehaves.
type (
	errorPanics  struct{}
	codePanics   struct{}
	namePanics   struct{}
	asPanics     struct{}
	isPanics     struct{}
	deepPanic    struct{} // Error panics with a value whose Error panics
	badUTF8Error struct{}
	cyclicError  struct{}
	cyclicJoin   struct{}
	nilPtrError  struct{ msg string }
)

func (errorPanics) Error() string  { panic("Error exploded") }
func (codePanics) Error() string   { return "code panics" }
func (codePanics) Code() string    { panic("Code exploded") }
func (namePanics) Error() string   { return "name panics" }
func (namePanics) Code() string    { return "E_NAMED" }
func (namePanics) Name() string    { panic("Name exploded") }
func (asPanics) Error() string     { return "as panics" }
func (asPanics) As(any) bool       { panic("As exploded") }
func (isPanics) Error() string     { return "is panics" }
func (isPanics) Is(error) bool     { panic("Is exploded") }
func (deepPanic) Error() string    { panic(errorPanics{}) }
func (badUTF8Error) Error() string { return "bad \xff text" }
func (e *cyclicError) Error() string {
	return "cyclic"
}
func (e *cyclicError) Unwrap() error { return e }
func (cyclicJoin) Error() string     { return "cyclic join" }
func (c cyclicJoin) Unwrap() []error { return []error{c, c} }
func (e *nilPtrError) Error() string { return e.msg }
func (e *nilPtrError) Code() string  { return "E_" + e.msg }

func hostileErrors() map[string]error {
	var nilPtr *nilPtrError
	return map[string]error{
		"Error panics":          errorPanics{},
		"Code panics":           codePanics{},
		"Name panics":           namePanics{},
		"As panics":             asPanics{},
		"Is panics":             isPanics{},
		"nested panic":          deepPanic{},
		"invalid UTF-8":         badUTF8Error{},
		"typed nil pointer":     nilPtr,
		"cyclic Unwrap":         &cyclicError{},
		"cyclic Unwrap []error": cyclicJoin{},
	}
}

// TestG4_HostileErrorValuesBecomeOrdinaryResults: an error value whose
// methods panic, lie or loop, handed back by a tool body, a panicking body,
// a listener, a wrapper or an approver, still becomes an ordinary, valid
// isError result that went through tools/post-execute (never
// INTERNAL_ERROR), with exactly one tools/result.
func TestG4_HostileErrorValuesBecomeOrdinaryResults(t *testing.T) {
	type source struct {
		name  string
		codes []tools.ErrorCode // acceptable codes
		// cyclic chains hang errors.As inside the host's own listener
		// failure logging; they are checked for the sources the pipeline
		// reads alone.
		noCycles bool
	}
	sources := []source{
		{name: "body", codes: []tools.ErrorCode{tools.CodeToolError, "E_NAMED"}},
		{name: "body panic", codes: []tools.ErrorCode{tools.CodeToolError}},
		{name: "body during cancellation", codes: []tools.ErrorCode{tools.CodeToolError, tools.CodeAborted, "E_NAMED"}},
		{name: "pre-execute", codes: []tools.ErrorCode{tools.CodeListenerError, "E_NAMED"}, noCycles: true},
		{name: "execute wrapper", codes: []tools.ErrorCode{tools.CodeListenerError, "E_NAMED"}, noCycles: true},
		{name: "post-execute", codes: []tools.ErrorCode{tools.CodeListenerError, "E_NAMED"}, noCycles: true},
		{name: "approver", codes: []tools.ErrorCode{tools.CodeApprovalFailed}},
		{name: "guard panic", codes: []tools.ErrorCode{tools.CodeGuardFailed}},
	}
	for _, src := range sources {
		for name, herr := range hostileErrors() {
			if src.noCycles && strings.HasPrefix(name, "cyclic") {
				continue
			}
			t.Run(src.name+"/"+name, func(t *testing.T) {
				e := newEnv(t)
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				d := echo("t", "ok")
				d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
					switch src.name {
					case "body":
						return tools.Output{}, herr
					case "body panic":
						panic(herr)
					case "body during cancellation":
						cancel()
						return tools.Output{}, herr
					}
					return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
				}
				mustRegister(t, e.reg, e.root, d)
				switch src.name {
				case "pre-execute":
					must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
						return tools.PreDecision{}, herr
					}))
				case "execute wrapper":
					must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(context.Context, *tools.Execution, tools.ExecuteNext) (tools.Result, error) {
						return tools.Result{}, herr
					}))
				case "approver":
					must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
						return tools.Asked("check"), nil
					}))
					must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
						return tools.AllowedOnce, herr
					})))
				case "guard panic":
					must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { panic(herr) }))
				}
				var postSaw []tools.ErrorCode
				must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
					postSaw = append(postSaw, code(in.Result()))
					if src.name == "post-execute" {
						return tools.PostDecision{}, herr
					}
					return next(ctx)
				}))
				var rc recorder
				rc.listen(t, e.root)
				c := call("t", `{}`)
				c.Agent = "a"
				res := e.reg.Execute(ctx, c)
				if !res.IsError || !contains(src.codes, code(res)) {
					t.Errorf("result %s %q, want isError with one of %v", code(res), text(res), src.codes)
				}
				if err := res.Validate(); err != nil || !utf8.ValidString(text(res)) {
					t.Errorf("invalid result: %v", err)
				}
				want := code(res)
				if src.name == "post-execute" {
					want = "" // it saw the success it then failed
				}
				if len(postSaw) != 1 || postSaw[0] != want {
					t.Errorf("post-execute saw %v, want exactly %q", postSaw, want)
				}
				if rc.count() != 1 {
					t.Errorf("%d tools/result notices", rc.count())
				}
			})
		}
	}
}

func contains(list []tools.ErrorCode, s tools.ErrorCode) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestG4_GoexitInUserCodeStillYieldsExactlyOneResult: runtime.Goexit (what
// t.FailNow does) in a body, validator, listener, guard, approver or
// wrapper ends the goroutine running Execute, as Go requires; the call
// still gets exactly one tools/result, an isError naming the stage. A body
// a wrapper left running is waited for first.
func TestG4_GoexitInUserCodeStillYieldsExactlyOneResult(t *testing.T) {
	for _, tc := range []struct {
		where string
		code  tools.ErrorCode
		// bare registers no listener, wrapper or guard: the stage calls
		// the body itself.
		bare bool
		// timeout is the tool's declared Timeout.
		timeout time.Duration
	}{
		{where: "body", code: tools.CodeToolError},
		{where: "body", code: tools.CodeToolError, bare: true},
		{where: "body", code: tools.CodeToolError, bare: true, timeout: time.Hour},
		{where: "body", code: tools.CodeToolError, timeout: time.Hour},
		{where: "validate", code: tools.CodeInvalidArgs},
		{where: "pre-execute", code: tools.CodeListenerError},
		{where: "approver", code: tools.CodeApprovalFailed},
		{where: "guard", code: tools.CodeGuardFailed},
		{where: "wrapper", code: tools.CodeListenerError},
		{where: "wrapper with a body running", code: tools.CodeListenerError},
		{where: "post-execute", code: tools.CodeListenerError},
	} {
		name := tc.where
		if tc.bare {
			name += ", no listeners"
		}
		if tc.timeout > 0 {
			name += ", declared timeout"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			var bodyDone atomic.Bool
			started := make(chan struct{})
			d := echo("t", "ok")
			d.Timeout = tc.timeout
			d.Execute = func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
				switch tc.where {
				case "body":
					runtime.Goexit()
				case "wrapper with a body running":
					close(started)
					<-ctx.Done()
					bodyDone.Store(true)
				}
				return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
			}
			if tc.where == "validate" {
				d.ValidateArgs = func(*tools.Execution) error { runtime.Goexit(); return nil }
			}
			mustRegister(t, e.reg, e.root, d)
			goexitIn := func(where string) {
				if tc.where == where {
					runtime.Goexit()
				}
			}
			var spawned sync.WaitGroup
			postRan := false
			if !tc.bare {
				must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
					goexitIn("pre-execute")
					if tc.where == "approver" {
						return tools.Asked("check"), nil
					}
					return next(ctx)
				}))
				must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
					goexitIn("approver")
					return tools.AllowedOnce, nil
				})))
				must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { goexitIn("guard"); return nil }))
				must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
					goexitIn("wrapper")
					if tc.where == "wrapper with a body running" {
						spawned.Go(func() { _, _ = next(ctx) })
						<-started
						runtime.Goexit()
					}
					return next(ctx)
				}))
				must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
					postRan = true
					goexitIn("post-execute")
					return next(ctx)
				}))
			}
			var notices []tools.Result
			var doneAtResult bool
			must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
				notices = append(notices, n.Result())
				doneAtResult = bodyDone.Load()
				return nil
			}))
			c := call("t", `{}`)
			c.Agent = "a"
			returned := false
			exited := make(chan struct{})
			go func() {
				defer close(exited)
				e.reg.Execute(context.Background(), c)
				returned = true
			}()
			<-exited
			spawned.Wait()
			if returned {
				t.Fatal("Execute returned although its goroutine called runtime.Goexit")
			}
			if len(notices) != 1 {
				t.Fatalf("%d tools/result notices, want exactly 1", len(notices))
			}
			r := notices[0]
			if !r.IsError || code(r) != tc.code || r.Error.Name != "Goexit" || !strings.Contains(text(r), "runtime.Goexit") || r.Validate() != nil || r.CallID != c.ID {
				t.Errorf("result %+v %q, want %s named Goexit", r.Error, text(r), tc.code)
			}
			if tc.where == "wrapper with a body running" && !doneAtResult {
				t.Error("tools/result was emitted while the body still ran")
			}
			if postRan != (tc.where == "post-execute") {
				t.Errorf("post-execute ran: %v", postRan)
			}
		})
	}
	// A Goexit in a tools/result observer ends that one delivery.
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "ok"))
	var rc recorder
	rc.listen(t, e.root)
	must2(t)(host.On(e.root, tools.ResultEvent, func(context.Context, tools.ResultNotice) error { runtime.Goexit(); return nil }))
	exited := make(chan struct{})
	go func() { defer close(exited); e.reg.Execute(context.Background(), call("t", `{}`)) }()
	<-exited
	if rc.count() != 1 {
		t.Errorf("%d tools/result notices with a Goexit in a later observer, want 1", rc.count())
	}
}

// TestP4_DegradedAskKeepsThePolicysReason: an ask that cannot be put to
// anyone (no approval service, no agent, the service answers unavailable)
// denies with the policy's own reason in the text the model sees, and says
// why it could not ask.
func TestP4_DegradedAskKeepsThePolicysReason(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("t", "ok"))
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
		return tools.Asked("writes outside the workspace need approval"), nil
	}))
	exec := func(agent host.ScopeKey) tools.Result {
		c := call("t", `{}`)
		c.Agent = agent
		return e.reg.Execute(context.Background(), c)
	}
	check := func(what string, res tools.Result, why string) {
		t.Helper()
		if code(res) != tools.CodeApprovalUnavailable || !strings.Contains(text(res), "writes outside the workspace need approval") || !strings.Contains(text(res), why) {
			t.Errorf("%s: %s %q, want APPROVAL_UNAVAILABLE with the policy's reason and %q", what, code(res), text(res), why)
		}
	}
	check("no service", exec("a"), "no approval service")
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		return tools.Unavailable, nil
	})))
	check("no agent", exec(""), "no agent")
	check("unavailable", exec("a"), "unavailable")
}

// TestP10_InvalidCallIDIsRejectedAndRepaired: a call id that cannot
// survive JSON (invalid UTF-8) or a log line (control characters), or is
// absurdly long, is rejected before any policy runs with INVALID_CALL;
// the result's CallID is repaired so the result itself survives JSON.
func TestP10_InvalidCallIDIsRejectedAndRepaired(t *testing.T) {
	e := newEnv(t)
	var runs, policy atomic.Int32
	mustRegister(t, e.reg, e.root, bodyCounter("t", &runs))
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		policy.Add(1)
		return next(ctx)
	}))
	var rc recorder
	rc.listen(t, e.root)
	long := strings.Repeat("é", tools.MaxCallIDLen/2) + "x"
	for id, want := range map[string]string{
		"id-\xff":         "id-\uFFFD",
		"id-\xed\xa0\x80": "id-\uFFFD",
		"id\n2":           "id\uFFFD2",
		"id\x00":          "id\uFFFD",
		"id\u0085":        "id\uFFFD",
		long:              long[:tools.MaxCallIDLen],
	} {
		c := call("t", `{}`)
		c.ID = id
		res := e.reg.Execute(context.Background(), c)
		if code(res) != tools.CodeInvalidCall || res.CallID != want {
			t.Errorf("id %q: %s %q, CallID %q; want INVALID_CALL with CallID %q", id, code(res), text(res), res.CallID, want)
		}
		b, err := json.Marshal(res)
		var back tools.Result
		if err != nil || json.Unmarshal(b, &back) != nil || back.CallID != res.CallID || res.Validate() != nil {
			t.Errorf("id %q: the result does not survive JSON: %s", id, b)
		}
	}
	if runs.Load() != 0 || policy.Load() != 0 || rc.count() != 6 {
		t.Errorf("body ran %d, policy ran %d, %d results", runs.Load(), policy.Load(), rc.count())
	}
	if n := rc.notices[0].Execution().CallID(); !utf8.ValidString(n) {
		t.Errorf("the execution carries the invalid id %q", n)
	}
	// Valid ids, exotic or empty, go through unchanged.
	for _, id := range []string{"", "call_01ABC", "toolu_é✓ 🙂", "x:code:3", long[:tools.MaxCallIDLen]} {
		c := call("t", `{}`)
		c.ID = id
		if res := e.reg.Execute(context.Background(), c); res.IsError || res.CallID != id {
			t.Errorf("valid id %q: %+v", id, res)
		}
	}
}

// TestG4_GoexitAsDispatchBeginsIsTheTools: a runtime.Goexit from the
// moment the body is dispatched (here: in a tracer's BeginStage of
// dispatch, with no tools/execute wrapper, for a tool with and without a
// declared Timeout) is reported as the tool's, TOOL_ERROR, as for a body
// behind wrappers.
func TestG4_GoexitAsDispatchBeginsIsTheTools(t *testing.T) {
	for _, timeout := range []time.Duration{0, time.Hour} {
		e := newEnv(t)
		d := echo("t", "ok")
		d.Timeout = timeout
		mustRegister(t, e.reg, e.root, d)
		must2(t)(e.reg.Trace(e.root, stageHook{stage: tools.TraceDispatch, begin: runtime.Goexit}))
		var notices []tools.Result
		must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
			notices = append(notices, n.Result())
			return nil
		}))
		exited := make(chan struct{})
		go func() { defer close(exited); e.reg.Execute(context.Background(), call("t", `{}`)) }()
		<-exited
		if len(notices) != 1 || code(notices[0]) != tools.CodeToolError || notices[0].Error.Name != "Goexit" {
			t.Errorf("timeout %v: results %+v", timeout, notices)
		}
	}
}
