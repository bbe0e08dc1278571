package tools_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB1_B2_B3_PropertyRandomBatches runs random batches (a random mix of
// parallel, exclusive, per-call and unknown tools; random listener,
// approval and body delays; denials, rejections, listener errors, failing
// and Goexit-ing bodies; random caps; cancellation at a random moment or
// by a stop policy) and checks, for each batch:
//
//   - exactly one result per call, in model order, valid, with error info
//     on every failure; exactly one tools/result per call, in model order;
//   - pre-execute, approval asks and post-execute in model order, at most
//     one ask at a time;
//   - never more calls in tools/execute than the cap (instrumented);
//   - an exclusive call's events form a span that no event of another
//     call enters: everything before it finished first, nothing after it
//     started before it finished;
//   - ABORTED_BEFORE_DISPATCH only for calls whose body never started,
//     ABORTED only for calls whose body did; a denied call's body never
//     starts;
//   - every goroutine the batch started has ended (synctest fails the
//     bubble otherwise; goleak checks the package).
//
// The batches run with a tools/pre-execute listener, and without any
// policy listener and with 32 to 41 calls ("runner"), so that the calls
// run whole on the batch's runners (see ExecuteBatch).
func TestB1_B2_B3_PropertyRandomBatches(t *testing.T) {
	iterations := 300
	if testing.Short() {
		iterations = 60
	}
	for _, pre := range []bool{true, false} {
		name := "listened"
		if !pre {
			name = "runner"
		}
		t.Run(name, func(t *testing.T) {
			for iter := range iterations {
				rng := rand.New(rand.NewPCG(0xba7c4, uint64(iter)))
				synctest.Test(t, func(t *testing.T) {
					randomBatch(t, iter, rng, pre)
				})
				if t.Failed() {
					t.Fatalf("iteration %d failed", iter)
				}
			}
		})
	}
}

func randomBatch(t *testing.T, iter int, rng *rand.Rand, pre bool) {
	e := newBatchEnvWith(t, pre)
	n := 1 + rng.IntN(10)
	if !pre {
		n += 31 // enough for a runner (see runnerMinCalls)
	}
	calls := make([]tools.Call, n)
	denied := make([]bool, n)
	for i := range calls {
		var args []string
		add := func(format string, a ...any) { args = append(args, fmt.Sprintf(format, a...)) }
		tool := []string{"par", "par", "par", "exc", "dyn", "nope"}[rng.IntN(6)]
		if tool == "dyn" {
			add(`"p":%v`, rng.IntN(2) == 0)
			if rng.IntN(5) == 0 {
				add(`"rule":"panic"`)
			}
		}
		add(`"ms":%d`, rng.IntN(40))
		if rng.IntN(3) == 0 {
			add(`"preMs":%d`, rng.IntN(6))
		}
		if rng.IntN(3) == 0 {
			add(`"postMs":%d`, rng.IntN(4))
		}
		policy := rng.IntN(10)
		if !pre {
			policy = -1 // no listener to deny or ask
		}
		switch policy {
		case 0:
			add(`"pre":"deny"`)
			denied[i] = true
		case 1:
			add(`"pre":"error"`)
			denied[i] = true
		case 2, 3:
			add(`"pre":"ask","askMs":%d`, rng.IntN(8))
			if rng.IntN(3) == 0 {
				add(`"reject":true`)
				denied[i] = true
			}
		}
		switch rng.IntN(12) {
		case 0, 1:
			add(`"fail":true`)
		case 2:
			add(`"goexit":true`)
		case 3:
			add(`"block":true`)
		}
		if rng.IntN(4) == 0 {
			add(`"ctx":"c%d"`, i)
		}
		calls[i] = bcall(i, tool, strings.Join(args, ","))
	}
	class := make([]tools.Concurrency, n)
	for i, c := range calls {
		class[i] = e.reg.Concurrency(c)
	}
	opts := tools.BatchOptions{MaxParallel: rng.IntN(5)}
	limit := opts.MaxParallel
	if limit == 0 {
		limit = tools.DefaultMaxParallel
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch rng.IntN(4) {
	case 0:
		time.AfterFunc(time.Duration(rng.IntN(60))*time.Millisecond, cancel)
	case 1:
		opts.CancelWhen = func(r tools.Result) bool { return r.IsError }
	}
	res, _ := e.batch(ctx, calls, opts)
	evs := e.events()
	fail := func(format string, a ...any) {
		t.Helper()
		var b strings.Builder
		for _, c := range calls {
			fmt.Fprintf(&b, "\n  %s %s %s", c.ID, c.Name, c.Arguments)
		}
		t.Errorf("iteration %d (cap %d): %s\ncalls:%s\nevents: %v", iter, opts.MaxParallel, fmt.Sprintf(format, a...), b.String(), evs)
	}

	if len(res) != n {
		fail("%d results", len(res))
		return
	}
	bodied := map[int]bool{}
	for _, i := range order(evs, "body") {
		if bodied[i] {
			fail("call %d ran its body twice", i)
		}
		bodied[i] = true
	}
	for i, r := range res {
		if r.CallID != calls[i].ID {
			fail("result %d has id %q", i, r.CallID)
		}
		if err := r.Validate(); err != nil || r.IsError && r.Error == nil {
			fail("result %d invalid: %v %+v", i, err, r)
		}
		switch code(r) {
		case tools.CodeAbortedBeforeDispatch:
			if bodied[i] {
				fail("call %d is ABORTED_BEFORE_DISPATCH but its body ran", i)
			}
		case tools.CodeAborted:
			if !bodied[i] {
				fail("call %d is ABORTED but its body never ran", i)
			}
		}
		if denied[i] && bodied[i] {
			fail("denied call %d ran its body", i)
		}
	}
	if got := order(evs, "result"); !slices.Equal(got, seq(n)) {
		fail("tools/result order %v", got)
	}
	for i, rs := range e.observed {
		if len(rs) != 1 || rs[0].CallID != res[i].CallID || code(rs[0]) != code(res[i]) || text(rs[0]) != text(res[i]) {
			fail("call %d: observed %+v, returned %+v", i, rs, res[i])
		}
	}
	for _, kind := range []string{"pre", "ask", "post"} {
		got := order(evs, kind)
		if !slices.IsSorted(got) || len(slices.Compact(slices.Clone(got))) != len(got) {
			fail("%s order %v is not model order", kind, got)
		}
	}
	if e.maxAsking > 1 {
		fail("%d asks at once", e.maxAsking)
	}
	if e.maxActive > limit {
		fail("%d calls in tools/execute at once, cap %d", e.maxActive, limit)
	}
	for k := range calls {
		if class[k] != tools.Exclusive {
			continue
		}
		first, last := -1, -1
		for j, ev := range evs {
			if ev.i == k {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		for j, ev := range evs {
			if ev.i < k && j > first || ev.i > k && j < last {
				fail("event %d %+v crosses exclusive call %d's span [%d, %d]", j, ev, k, first, last)
				break
			}
		}
	}
}
