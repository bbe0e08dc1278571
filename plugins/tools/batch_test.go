package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The batch tests run under testing/synctest: bodies wait on the bubble's
// fake clock, so an elapsed time is exact (50 ms of parallel bodies take
// exactly 50 ms) and a deadlock fails the test instead of hanging it.

// tev is one traced event of a batch: what happened, to which call.
type tev struct {
	kind string // pre, ask, ask-done, exec, exec-done, body, body-done, post, result
	i    int
}

// batchEnv is an env with the batch test tools and a trace of every
// stage of every call, in the order the stages ran.
type batchEnv struct {
	*env
	mu        sync.Mutex
	trace     []tev
	active    int // calls inside tools/execute
	maxActive int
	asking    int // approval asks in progress
	maxAsking int
	observed  map[int][]tools.Result // tools/result notices by call index
}

// The test tools: each body waits for its "ms" argument (fake time) or
// until its context is done, then answers its call id; "fail" makes it
// fail, "goexit" calls runtime.Goexit, "ctx" defers additional context,
// "conclude" asks to conclude the turn.
//
//   - par declares every call Parallel;
//   - exc declares nothing (exclusive);
//   - dyn is Parallel when its "p" argument is true, and its rule fails
//     for "rule": "panic" or "error" (and calls runtime.Goexit for
//     "goexit").
func newBatchEnv(t testing.TB) *batchEnv {
	t.Helper()
	return newBatchEnvWith(t, true)
}

// newBatchEnvWith is newBatchEnv, without the tools/pre-execute listener
// when pre is false: nothing then listens to the policy stages, and a
// batch's calls run whole on its runner (see ExecuteBatch).
func newBatchEnvWith(t testing.TB, pre bool) *batchEnv {
	t.Helper()
	e := &batchEnv{env: newEnv(t)}
	body := func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
		i := callIndex(x.CallID())
		e.add("body", i)
		defer e.add("body-done", i)
		if ms := x.Arg("ms").Int(); ms > 0 {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return tools.Output{}, ctx.Err()
			}
		}
		out := tools.Output{Content: []tools.Content{tools.Text(x.CallID())}, ConcludeTurn: x.Arg("conclude").Bool()}
		if c := x.Arg("ctx").String(); c != "" {
			out.AdditionalContext = []string{c}
		}
		switch {
		case x.Arg("fail").Bool():
			return out, errors.New("failed on purpose")
		case x.Arg("goexit").Bool():
			runtime.Goexit()
		}
		return out, nil
	}
	params := json.RawMessage(`{"type":"object","properties":{"ms":{"type":"integer"}}}`)
	for _, d := range []tools.Definition{
		{Name: "par", Description: "Parallel test tool.", Parameters: params, Execute: body, Concurrency: tools.Parallel},
		{Name: "exc", Description: "Exclusive test tool.", Parameters: params, Execute: body},
		{Name: "dyn", Description: "Per-call test tool.", Parameters: params, Execute: body,
			Concurrency: tools.ConcurrencyFunc(func(x *tools.Execution) (tools.Concurrency, error) {
				switch x.Arg("rule").String() {
				case "panic":
					panic("rule panicked")
				case "goexit":
					runtime.Goexit()
				case "error":
					return tools.Parallel, errors.New("rule failed")
				}
				if x.Arg("p").Bool() {
					return tools.Parallel, nil
				}
				return tools.Exclusive, nil
			})},
	} {
		mustRegister(t, e.reg, e.root, d)
	}
	if pre {
		e.onPre(t)
	}
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		i := callIndex(x.CallID())
		e.mu.Lock()
		e.trace = append(e.trace, tev{"exec", i})
		e.active++
		e.maxActive = max(e.maxActive, e.active)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.active--
			e.trace = append(e.trace, tev{"exec-done", i})
			e.mu.Unlock()
		}()
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		x := in.Execution()
		e.add("post", callIndex(x.CallID()))
		if ms := x.Arg("postMs").Int(); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		if x.Arg("block").Bool() {
			return tools.Blocked("blocked"), nil
		}
		return next(ctx)
	}))
	must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		i := callIndex(n.Execution().CallID())
		e.mu.Lock()
		e.trace = append(e.trace, tev{"result", i})
		if e.observed == nil {
			e.observed = map[int][]tools.Result{}
		}
		e.observed[i] = append(e.observed[i], n.Result())
		e.mu.Unlock()
		return nil
	}))
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(ctx context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		i := callIndex(r.CallID)
		e.mu.Lock()
		e.trace = append(e.trace, tev{"ask", i})
		e.asking++
		e.maxAsking = max(e.maxAsking, e.asking)
		e.mu.Unlock()
		defer func() {
			e.mu.Lock()
			e.asking--
			e.trace = append(e.trace, tev{"ask-done", i})
			e.mu.Unlock()
		}()
		ms := r.Execution.Arg("askMs").Int()
		select {
		case <-time.After(time.Duration(ms) * time.Millisecond):
		case <-ctx.Done():
			return tools.Cancelled, nil
		}
		if r.Execution.Arg("reject").Bool() {
			return tools.Rejected, nil
		}
		return tools.AllowedOnce, nil
	})))
	return e
}

// onPre registers the tools/pre-execute listener that traces "pre" and
// acts on a call's preMs, pre (deny, ask, error) arguments.
func (e *batchEnv) onPre(t testing.TB) {
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		i := callIndex(x.CallID())
		e.add("pre", i)
		if ms := x.Arg("preMs").Int(); ms > 0 {
			time.Sleep(time.Duration(ms) * time.Millisecond)
		}
		switch x.Arg("pre").String() {
		case "deny":
			return tools.Denied("no"), nil
		case "ask":
			return tools.Asked("check"), nil
		case "error":
			return tools.PreDecision{}, errors.New("listener failed")
		}
		return next(ctx)
	}))
}

// batch runs ExecuteBatch on a goroutine of its own and returns its
// results, or, when that goroutine was ended by runtime.Goexit (which
// ExecuteBatch passes on from the calls it runs on it), returned false and
// the results tools/result observers saw (each call's first).
func (e *batchEnv) batch(ctx context.Context, calls []tools.Call, opts tools.BatchOptions) (res []tools.Result, returned bool) {
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		res = e.reg.ExecuteBatch(ctx, calls, opts)
		returned = true
	}()
	<-exited
	if returned {
		return res, true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	res = make([]tools.Result, len(calls))
	for i := range res {
		if len(e.observed[i]) > 0 {
			res[i] = e.observed[i][0]
		}
	}
	return res, false
}

func (e *batchEnv) add(kind string, i int) {
	e.mu.Lock()
	e.trace = append(e.trace, tev{kind, i})
	e.mu.Unlock()
}

func (e *batchEnv) events() []tev {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.trace)
}

// order returns the call indexes of the events of kind, in the order they
// happened.
func order(evs []tev, kind string) []int {
	var out []int
	for _, ev := range evs {
		if ev.kind == kind {
			out = append(out, ev.i)
		}
	}
	return out
}

func callIndex(id string) int {
	i, err := strconv.Atoi(id[1:])
	if err != nil {
		panic("test call id " + id)
	}
	return i
}

// bcall is call i of a batch: tool with the given arguments (JSON object
// members, without braces).
func bcall(i int, tool, args string) tools.Call {
	return tools.Call{ID: fmt.Sprint("b", i), Name: tool, Arguments: json.RawMessage("{" + args + "}"), Agent: "agent"}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// TestB1_ConcurrencyIsParallelOnlyWhenTheToolDeclaresTheCallSafe: the
// registry's per-call answer, for each way a call can fail to opt in.
func TestB1_ConcurrencyIsParallelOnlyWhenTheToolDeclaresTheCallSafe(t *testing.T) {
	e := newBatchEnv(t)
	other := e.scope(t, "other")
	must2(t)(e.reg.Restrict(other, tools.Restriction{Deny: []string{"par"}}))
	typed := tools.MustDefine(tools.TypedTool[struct {
		N int `json:"n"`
	}, tools.Output]{Name: "typed", Description: "Typed parallel tool.", Concurrency: tools.Parallel,
		Execute: func(context.Context, struct {
			N int `json:"n"`
		}, *tools.Execution) (tools.Output, error) {
			return tools.Output{}, nil
		}})
	mustRegister(t, e.reg, e.root, typed)
	for _, tc := range []struct {
		name string
		call tools.Call
		want tools.Concurrency
	}{
		{"declared parallel", bcall(0, "par", ""), tools.Parallel},
		{"no declaration", bcall(0, "exc", ""), tools.Exclusive},
		{"per call: safe", bcall(0, "dyn", `"p":true`), tools.Parallel},
		{"per call: not safe", bcall(0, "dyn", `"p":false`), tools.Exclusive},
		{"rule panics", bcall(0, "dyn", `"p":true,"rule":"panic"`), tools.Exclusive},
		{"rule errors", bcall(0, "dyn", `"p":true,"rule":"error"`), tools.Exclusive},
		{"unknown tool", bcall(0, "nope", ""), tools.Exclusive},
		{"hidden from the agent", tools.Call{ID: "b0", Name: "par", Agent: "other"}, tools.Exclusive},
		{"invalid arguments", bcall(0, "par", `"ms":"x","ms":1`), tools.Exclusive},
		{"invalid call id", tools.Call{ID: "b\x00", Name: "par"}, tools.Exclusive},
		{"typed, valid", tools.Call{ID: "b0", Name: "typed", Arguments: json.RawMessage(`{"n":1}`)}, tools.Parallel},
		{"typed, fails validation", tools.Call{ID: "b0", Name: "typed", Arguments: json.RawMessage(`{"n":"x"}`)}, tools.Exclusive},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := e.reg.Concurrency(tc.call); got != tc.want {
				t.Errorf("Concurrency = %v, want %v", got, tc.want)
			}
		})
	}
	if got := tools.DescribeConcurrency(nil); got != "exclusive" {
		t.Errorf("nil rule: %q", got)
	}
	for name, want := range map[string]string{"par": "parallel", "exc": "exclusive", "dyn": "per call"} {
		tl, _ := e.reg.Get(name, "")
		if got := tools.DescribeConcurrency(tl.ConcurrencyRule()); got != want {
			t.Errorf("%s: DescribeConcurrency = %q, want %q", name, got, want)
		}
	}
	d := echo("weird", "x")
	d.Concurrency = tools.Concurrency(7)
	if _, err := e.reg.Register(e.root, d); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("registering Concurrency(7): %v, want ErrInvalidDefinition", err)
	}
}

// TestB1_CodeModeDirectCallsAndTheTransportAreExclusive: under Code a
// direct call of a parallel tool is refused by the mode, and run_code
// itself is exclusive.
func TestB1_CodeModeDirectCallsAndTheTransportAreExclusive(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	d := echo("par", "x")
	d.Concurrency = tools.Parallel
	mustRegister(t, e.reg, e.root, d)
	if got := e.reg.Concurrency(tools.Call{ID: "c", Name: "par", Agent: "agent"}); got != tools.Exclusive {
		t.Errorf("direct call under code: %v", got)
	}
	if got := e.reg.Concurrency(runCode("c", "return 1", "agent")); got != tools.Exclusive {
		t.Errorf("run_code: %v", got)
	}
}

// TestB1_ParallelCallsOverlapAndAnExclusiveCallIsABarrier: ten parallel
// bodies of 50 ms take 50 ms together; an exclusive call in the middle
// waits for the five before it and holds back the four after it (150 ms),
// and no event of another call falls inside its span.
func TestB1_ParallelCallsOverlapAndAnExclusiveCallIsABarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnv(t)
		calls := make([]tools.Call, 10)
		for i := range calls {
			calls[i] = bcall(i, "par", `"ms":50`)
		}
		start := time.Now()
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		if d := time.Since(start); d != 50*time.Millisecond {
			t.Errorf("10 parallel bodies of 50ms took %v, want 50ms", d)
		}
		checkOK(t, res, calls)

		e = newBatchEnv(t)
		calls[5] = bcall(5, "exc", `"ms":50`)
		start = time.Now()
		res = e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		if d := time.Since(start); d != 150*time.Millisecond {
			t.Errorf("with an exclusive call in the middle: %v, want 150ms", d)
		}
		checkOK(t, res, calls)
		evs := e.events()
		first := slices.IndexFunc(evs, func(ev tev) bool { return ev.i == 5 })
		last := first
		for k, ev := range evs {
			if ev.i == 5 {
				last = k
			}
		}
		for k, ev := range evs {
			switch {
			case ev.i < 5 && k > first, ev.i > 5 && k < last, ev.i != 5 && k > first && k < last:
				t.Errorf("event %d %+v is not outside the exclusive call's span [%d, %d]", k, ev, first, last)
			}
		}
	})
}

// TestB2_CapBoundsTheDispatchesAtOnce: a rolling pool of MaxParallel
// tools/execute stages (instrumented by a wrapper).
func TestB2_CapBoundsTheDispatchesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		cap  int
		want time.Duration
	}{{1, 500 * time.Millisecond}, {3, 200 * time.Millisecond}, {0, 50 * time.Millisecond}, {-1, 50 * time.Millisecond}, {20, 50 * time.Millisecond}} {
		t.Run(fmt.Sprint("cap ", tc.cap), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBatchEnv(t)
				calls := make([]tools.Call, 10)
				for i := range calls {
					calls[i] = bcall(i, "par", `"ms":50`)
				}
				start := time.Now()
				res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{MaxParallel: tc.cap})
				if d := time.Since(start); d != tc.want {
					t.Errorf("took %v, want %v", d, tc.want)
				}
				checkOK(t, res, calls)
				wantMax := min(max(tc.cap, 0), 10)
				if tc.cap <= 0 {
					wantMax = 10 // DefaultMaxParallel
				}
				if e.maxActive != wantMax {
					t.Errorf("at most %d calls in tools/execute at once, want %d", e.maxActive, wantMax)
				}
			})
		})
	}
}

// TestB2_PolicyStagesRunInModelOrder: pre-execute listeners and approvers
// that take different times, bodies that finish in reverse order: every
// policy stage still sees the calls in model order, one ask at a time (the
// ask for call 3 is never shown before call 2's was answered), and the
// results come back in model order.
func TestB2_PolicyStagesRunInModelOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnv(t)
		const n = 8
		calls := make([]tools.Call, n)
		for i := range calls {
			args := fmt.Sprintf(`"ms":%d,"preMs":%d,"postMs":%d`, 10*(n-i), (i*7)%5, (i*3)%4)
			if i%2 == 1 {
				args += fmt.Sprintf(`,"pre":"ask","askMs":%d`, 5*(n-i))
			}
			calls[i] = bcall(i, "par", args)
		}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		checkOK(t, res, calls)
		evs := e.events()
		for _, kind := range []string{"pre", "ask", "post", "result"} {
			want := seq(n)
			if kind == "ask" {
				want = []int{1, 3, 5, 7}
			}
			if got := order(evs, kind); !slices.Equal(got, want) {
				t.Errorf("%s order = %v, want %v", kind, got, want)
			}
		}
		if e.maxAsking != 1 {
			t.Errorf("%d approval asks at once", e.maxAsking)
		}
		// Bodies did overlap, and finished in reverse: only they did.
		if got := order(evs, "body-done"); slices.Equal(got, seq(n)) {
			t.Errorf("bodies finished in model order %v; the test wants them to overlap", got)
		}
		// An ask for call k+1 starts after the ask for call k was answered.
		if got := order(evs, "ask-done"); !slices.Equal(got, []int{1, 3, 5, 7}) {
			t.Errorf("ask-done order = %v", got)
		}
	})
}

// TestB2_PolicyOfALaterCallMayOverlapEarlierBodies: while call 0's long
// body runs, call 1 goes through pre-execute and approval (the entry is
// released at dispatch), but its post-execute waits for call 0's result.
func TestB2_PolicyOfALaterCallMayOverlapEarlierBodies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnv(t)
		calls := []tools.Call{bcall(0, "par", `"ms":100`), bcall(1, "par", `"ms":1,"pre":"ask","askMs":10`)}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		checkOK(t, res, calls)
		evs := e.events()
		at := func(kind string, i int) int { return slices.Index(evs, tev{kind, i}) }
		if !(at("ask", 1) < at("body-done", 0) && at("body-done", 1) < at("body-done", 0)) {
			t.Errorf("call 1 did not run during call 0's body: %v", evs)
		}
		if !(at("result", 0) < at("post", 1)) {
			t.Errorf("call 1's post-execute ran before call 0's result: %v", evs)
		}
	})
}

// TestB3_CancellingTheBatch: cancelled while two bodies run and the rest
// wait (one for a slot, one behind a barrier): the running ones end
// ABORTED, every other ABORTED_BEFORE_DISPATCH without its body, each with
// exactly one tools/result, in model order.
func TestB3_CancellingTheBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnv(t)
		calls := []tools.Call{
			bcall(0, "par", `"ms":1000`), bcall(1, "par", `"ms":1000`), bcall(2, "par", `"ms":1000`),
			bcall(3, "exc", `"ms":1000`), bcall(4, "par", `"ms":1000`),
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan []tools.Result)
		go func() { done <- e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{MaxParallel: 2}) }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		res := <-done
		want := []tools.ErrorCode{tools.CodeAborted, tools.CodeAborted, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch}
		for i, r := range res {
			if r.CallID != calls[i].ID || code(r) != want[i] {
				t.Errorf("result %d = %s %s, want %s", i, r.CallID, code(r), want[i])
			}
		}
		evs := e.events()
		if got := order(evs, "body"); !slices.Equal(got, []int{0, 1}) && !slices.Equal(got, []int{1, 0}) {
			t.Errorf("bodies that started: %v, want 0 and 1 only", got)
		}
		if got := order(evs, "result"); !slices.Equal(got, seq(5)) {
			t.Errorf("tools/result order = %v", got)
		}
		if got := order(evs, "post"); !slices.Equal(got, seq(5)) {
			t.Errorf("post-execute order = %v", got)
		}
	})
}

// TestB3_AFailureNeverCancelsItsSiblingsUnlessCancelWhenAsks: call 1 fails
// at once while its neighbours run (call 0 for 10 ms, the others longer); without a stop policy they complete;
// with CancelWhen(isError) the calls after it are cancelled (cause
// ErrBatchStopped) and the one before it is unaffected.
func TestB3_AFailureNeverCancelsItsSiblingsUnlessCancelWhenAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, "par", `"fail":true`), bcall(2, "par", `"ms":50`), bcall(3, "par", `"ms":50`), bcall(4, "exc", `"ms":50`)}
		e := newBatchEnv(t)
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		for i, r := range res {
			if (i == 1) != r.IsError {
				t.Errorf("without a stop policy, result %d = %+v", i, r)
			}
		}
		e = newBatchEnv(t)
		var seen []string
		res = e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{CancelWhen: func(r tools.Result) bool {
			seen = append(seen, r.CallID)
			return r.IsError
		}})
		want := []tools.ErrorCode{"", tools.CodeToolError, tools.CodeAborted, tools.CodeAborted, tools.CodeAbortedBeforeDispatch}
		for i, r := range res {
			if code(r) != want[i] {
				t.Errorf("with CancelWhen, result %d = %s %q, want %s", i, code(r), text(r), want[i])
			}
		}
		if r := res[2]; !r.IsError || !strings.Contains(text(r), tools.ErrBatchStopped.Error()) {
			t.Errorf("a stopped call does not name ErrBatchStopped: %q", text(r))
		}
		if !slices.Equal(seen, []string{"b0", "b1", "b2", "b3", "b4"}) {
			t.Errorf("CancelWhen saw %v, want every result in model order", seen)
		}
		if got := order(e.events(), "body"); slices.Contains(got, 4) {
			t.Errorf("the call after the stop started its body: %v", got)
		}
		// A panicking stop policy stops the batch.
		e = newBatchEnv(t)
		calls = []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, "par", `"ms":50`), bcall(2, "exc", "")}
		res = e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{CancelWhen: func(tools.Result) bool { panic("policy") }})
		if code(res[0]) != "" || code(res[1]) != tools.CodeAborted || code(res[2]) != tools.CodeAbortedBeforeDispatch {
			t.Errorf("panicking CancelWhen: %s %s %s", code(res[0]), code(res[1]), code(res[2]))
		}
	})
}

// TestB3_GoexitStillGivesEveryCallOneResult: runtime.Goexit in a
// parallel call's body ends only the batch's goroutine running it: the
// call gets its Goexit result and ExecuteBatch returns every result. On
// the calling goroutine (an exclusive call's body, any call's policy
// prefix) it ends that goroutine, as Execute does: ExecuteBatch does not
// return, but the rest of the batch still runs and every call gets
// exactly one tools/result, in model order, before the goroutine exits.
func TestB3_GoexitStillGivesEveryCallOneResult(t *testing.T) {
	for _, tc := range []struct {
		name     string
		calls    []tools.Call
		want     []tools.ErrorCode
		returned bool
	}{
		{"parallel body", []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, "par", `"ms":5,"goexit":true`), bcall(2, "par", `"ms":1`)},
			[]tools.ErrorCode{"", tools.CodeToolError, ""}, true},
		{"exclusive body", []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, "exc", `"goexit":true`), bcall(2, "par", `"ms":1`), bcall(3, "exc", "")},
			[]tools.ErrorCode{"", tools.CodeToolError, "", ""}, false},
		{"pre-execute", []tools.Call{bcall(0, "par", `"ms":10`), bcall(1, "par", `"preGoexit":true`), bcall(2, "par", `"ms":1`), bcall(3, "exc", "")},
			[]tools.ErrorCode{"", tools.CodeListenerError, "", ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBatchEnv(t)
				must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
					if x.Arg("preGoexit").Bool() {
						runtime.Goexit()
					}
					return next(ctx)
				}))
				res, returned := e.batch(context.Background(), tc.calls, tools.BatchOptions{})
				if returned != tc.returned {
					t.Errorf("ExecuteBatch returned: %v, want %v", returned, tc.returned)
				}
				for i, r := range res {
					if r.CallID != tc.calls[i].ID || code(r) != tc.want[i] {
						t.Errorf("result %d = %s %s %q, want %s", i, r.CallID, code(r), text(r), tc.want[i])
					}
					if tc.want[i] != "" && r.Error.Name != "Goexit" {
						t.Errorf("result %d named %q", i, r.Error.Name)
					}
				}
				if got := order(e.events(), "result"); !slices.Equal(got, seq(len(tc.calls))) {
					t.Errorf("tools/result order = %v", got)
				}
			})
		})
	}
}

// TestB3_DeferredContextAndTurnControl: each result carries its own
// additional context (kept on a failure), BatchContext joins them in model
// order, and only a successful result concludes the turn.
func TestB3_DeferredContextAndTurnControl(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnv(t)
		calls := []tools.Call{
			bcall(0, "par", `"ms":30,"ctx":"zero"`), bcall(1, "par", `"ms":10,"ctx":"one","fail":true,"conclude":true`),
			bcall(2, "par", `"ms":20,"ctx":"two","block":true,"conclude":true`), bcall(3, "exc", `"ctx":"three"`),
		}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		if got := tools.BatchContext(res); !slices.Equal(got, []string{"zero", "one", "two", "three"}) {
			t.Errorf("BatchContext = %q", got)
		}
		if tools.ConcludesTurn(res) {
			t.Errorf("a failed and a blocked call concluded the turn: %+v", res)
		}
		calls[3] = bcall(3, "exc", `"conclude":true`)
		res = e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		if !tools.ConcludesTurn(res) || !res[3].ConcludeTurn || res[1].ConcludeTurn || res[2].ConcludeTurn {
			t.Errorf("conclude: %v %v %v", res[1].ConcludeTurn, res[2].ConcludeTurn, res[3].ConcludeTurn)
		}
	})
}

// TestB3_BatchOfExclusiveCallsIsSequentialExecute: with no parallel calls
// a batch is the calls executed one after the other.
func TestB3_BatchOfExclusiveCallsIsSequentialExecute(t *testing.T) {
	e := newBatchEnv(t)
	calls := []tools.Call{bcall(0, "exc", ""), bcall(1, "nope", ""), bcall(2, "exc", `"pre":"deny"`), bcall(3, "exc", `"ms":"x"`), bcall(4, "exc", "")}
	res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
	for i, c := range calls {
		want := e.reg.Execute(context.Background(), c)
		if res[i].CallID != want.CallID || code(res[i]) != code(want) || text(res[i]) != text(want) {
			t.Errorf("call %d: batch %s %q, Execute %s %q", i, code(res[i]), text(res[i]), code(want), text(want))
		}
	}
	if len(e.reg.ExecuteBatch(context.Background(), nil, tools.BatchOptions{})) != 0 {
		t.Error("an empty batch has results")
	}
}

func checkOK(t *testing.T, res []tools.Result, calls []tools.Call) {
	t.Helper()
	if len(res) != len(calls) {
		t.Fatalf("%d results for %d calls", len(res), len(calls))
	}
	for i, r := range res {
		if r.IsError || r.CallID != calls[i].ID || text(r) != calls[i].ID {
			t.Errorf("result %d = %+v", i, r)
		}
	}
}
