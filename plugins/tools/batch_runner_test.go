package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB3_RunnerRunsWholeCallsAndGoexitEndsOnlyIt: while nothing listens
// to the policy stages, a batch's parallel calls run whole, prefix
// included, on its runner: runtime.Goexit in a later call's concurrency
// rule ends the runner only (before: the prefix ran on the calling
// goroutine, which it ended, and ExecuteBatch did not return), as one in
// a parallel body does. An exclusive call's body still runs on the
// calling goroutine (the runner gives it back), and its Goexit ends that
// goroutine. Every call gets exactly one result and tools/result, in
// model order. With a tools/pre-execute listener, or in a batch of fewer
// than 32 calls (see runnerMinCalls), the rule runs on the calling
// goroutine, as before. The other batches have 40 calls.
func TestB3_RunnerRunsWholeCallsAndGoexitEndsOnlyIt(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pre      bool
		calls    []tools.Call
		want     []tools.ErrorCode
		returned bool
	}{
		{"rule", false, []tools.Call{bcall(0, "par", `"ms":1`), bcall(1, "par", ""), bcall(2, "dyn", `"p":true,"rule":"goexit"`), bcall(3, "par", ""), bcall(4, "exc", "")},
			[]tools.ErrorCode{"", "", tools.CodeInternal, "", ""}, true},
		{"rule in a short batch", false, []tools.Call{bcall(0, "par", `"ms":1`), bcall(1, "par", ""), bcall(2, "dyn", `"p":true,"rule":"goexit"`), bcall(3, "par", ""), bcall(4, "exc", "")},
			[]tools.ErrorCode{"", "", tools.CodeInternal, "", ""}, false},
		{"rule with a listener", true, []tools.Call{bcall(0, "par", `"ms":1`), bcall(1, "par", ""), bcall(2, "dyn", `"p":true,"rule":"goexit"`), bcall(3, "par", ""), bcall(4, "exc", "")},
			[]tools.ErrorCode{"", "", tools.CodeInternal, "", ""}, false},
		{"parallel body", false, []tools.Call{bcall(0, "par", ""), bcall(1, "par", `"goexit":true`), bcall(2, "par", `"ms":1`), bcall(3, "par", "")},
			[]tools.ErrorCode{"", tools.CodeToolError, "", ""}, true},
		{"exclusive body", false, []tools.Call{bcall(0, "par", ""), bcall(1, "par", ""), bcall(2, "exc", `"goexit":true`), bcall(3, "par", ""), bcall(4, "par", "")},
			[]tools.ErrorCode{"", "", tools.CodeToolError, "", ""}, false},
	} {
		// Enough calls after the first parallel one for a runner, but
		// for the short batch.
		for i := len(tc.calls); i < 40 && tc.name != "rule in a short batch"; i++ {
			tc.calls, tc.want = append(tc.calls, bcall(i, "par", "")), append(tc.want, "")
		}
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newBatchEnvWith(t, tc.pre)
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

// TestB2_RunnerStuckInABodyGivesUpTheChain: with nothing listening to
// the policy stages, call 0's body waits until call 1's body ran. The
// calling goroutine sees the runner make no progress in call 0's body
// and starts another runner from call 1 (without it the batch would
// never end); every call completes. One CPU keeps the runner from
// finishing before it is stuck.
func TestB2_RunnerStuckInABodyGivesUpTheChain(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ran1 := make(chan struct{})
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "rendezvous", Description: "Call 0 waits for call 1.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				switch x.CallID() {
				case "c0":
					<-ran1
				case "c1":
					close(ran1)
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		calls := make([]tools.Call, 40) // enough for a runner
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "rendezvous"}
		}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID || text(r) != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
	})
}

// TestB3_CancellingARunnerBatch is TestB3_CancellingTheBatch with
// nothing listening to the policy stages and 35 more calls (the calls run
// on runners): the
// running bodies end ABORTED, every other call ABORTED_BEFORE_DISPATCH
// without its body, each with exactly one tools/result, in model order.
func TestB3_CancellingARunnerBatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newBatchEnvWith(t, false)
		calls := []tools.Call{
			bcall(0, "par", `"ms":1000`), bcall(1, "par", `"ms":1000`), bcall(2, "par", `"ms":1000`),
			bcall(3, "exc", `"ms":1000`), bcall(4, "par", `"ms":1000`),
		}
		want := []tools.ErrorCode{tools.CodeAborted, tools.CodeAborted, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch, tools.CodeAbortedBeforeDispatch}
		for i := len(calls); i < 40; i++ { // enough for a runner
			calls, want = append(calls, bcall(i, "par", `"ms":1000`)), append(want, tools.CodeAbortedBeforeDispatch)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan []tools.Result)
		go func() { done <- e.reg.ExecuteBatch(ctx, calls, tools.BatchOptions{MaxParallel: 2}) }()
		time.Sleep(10 * time.Millisecond)
		cancel()
		res := <-done
		for i, r := range res {
			if r.CallID != calls[i].ID || code(r) != want[i] {
				t.Errorf("result %d = %s %s, want %s", i, r.CallID, code(r), want[i])
			}
		}
		evs := e.events()
		if got := order(evs, "body"); !slices.Equal(got, []int{0, 1}) && !slices.Equal(got, []int{1, 0}) {
			t.Errorf("bodies that started: %v, want 0 and 1 only", got)
		}
		if got := order(evs, "result"); !slices.Equal(got, seq(len(calls))) {
			t.Errorf("tools/result order = %v", got)
		}
		if got := order(evs, "post"); !slices.Equal(got, seq(len(calls))) {
			t.Errorf("post-execute order = %v", got)
		}
	})
}

// TestB2_AListenerAddedMidBatchSeesTheLaterPrefixesInOrder: a batch
// starts with nothing listening to the policy stages (its calls run on a
// runner); call 3's body registers a tools/pre-execute listener. The
// listener sees the prefixes of the calls entered after that, each once,
// in model order: calls 4 to 39, the runner entering each after the call
// before it (one CPU keeps a later call from entering while call 3's
// body runs, which ExecuteBatch allows).
func TestB2_AListenerAddedMidBatchSeesTheLaterPrefixesInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var mu sync.Mutex
		var seen []string
		listen := func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			mu.Lock()
			seen = append(seen, x.CallID())
			mu.Unlock()
			return next(ctx)
		}
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "listen", Description: "Call 3 adds a pre-execute listener.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				if x.CallID() == "c3" {
					must2(t)(host.OnWaterfall(e.root, tools.PreExecute, listen))
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		calls := make([]tools.Call, 40) // enough for a runner
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "listen"}
		}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		var want []string
		for i := 4; i < len(calls); i++ {
			want = append(want, fmt.Sprint("c", i))
		}
		if !slices.Equal(seen, want) {
			t.Fatalf("the listener saw %v, want %v", seen, want)
		}
	})
}

// TestB2_ARunnerThatYieldsInABodyKeepsTheChain: with nothing listening
// to the policy stages, call 0's body yields 20 times before it returns.
// The calling goroutine looks at the runner only every 32 of its own
// yields and takes the chain after two looks without progress (before: a
// look a yield, eight looks), so no other runner starts and no other
// body runs meanwhile: the bodies run one at a time, in model order. One
// CPU makes the calling goroutine and the body yield in turn.
func TestB2_ARunnerThatYieldsInABodyKeepsTheChain(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var mu sync.Mutex
		var bodies []string // "+c3" as call 3's body starts, "-c3" as it ends
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "yielder", Description: "Call 0 yields 20 times.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				mu.Lock()
				bodies = append(bodies, "+"+x.CallID())
				mu.Unlock()
				if x.CallID() == "c0" {
					for range 20 {
						runtime.Gosched()
					}
				}
				mu.Lock()
				bodies = append(bodies, "-"+x.CallID())
				mu.Unlock()
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		calls := make([]tools.Call, 40) // enough for a runner
		var want []string
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "yielder"}
			want = append(want, fmt.Sprint("+c", i), fmt.Sprint("-c", i))
		}
		res := e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{})
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID || text(r) != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(bodies, want) {
			t.Fatalf("bodies ran %v, want one at a time in model order", bodies)
		}
	})
}
