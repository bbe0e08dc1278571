package codemode_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestSubCallAllocations pins the cost of one sub-call (issue 24): 1,000 sequential awaited calls of a
// trivial tool through run_code, in process, with a session log and an agent (so both dispatch
// events are appended), allocate at most 65 objects per sub-call beyond an empty run's. Before the
// bridge shared one context among its sub-calls, built the log's context once per run and skipped
// the dispatch-log copy with no listener, a sub-call allocated 100.7 here (83.9 after; 73.0 once the
// goja engine serialized arguments in Go instead of through JSON.stringify; 71.3 once a call's
// numbered context was kept in its jsengine.Call; 68.5 once a short string result's UTF-16 units
// were staged on the stack; 67.5 once a logged sub-call's timing stayed on the stack; 63.8–66.0 over 200 runs once a repeated
// short string result reused its value and a one-text result's canonical value was quoted in one
// buffer; 62.8–65.0 once a sub-call's entry shared its Execution's allocation; 60.8–63.0 once a
// binding call's short arguments shared the call's allocation: the empty run's count varies, so
// the budget keeps 2 of margin).
func TestSubCallAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: inProcess})
	mustRegister(t, e.reg, e.root, trivial())
	ctx := context.Background()
	allocs := func(src, want string) float64 {
		c := runCode("c1", src, "agent")
		return testing.AllocsPerRun(5, func() {
			e.log.mu.Lock()
			e.log.events = e.log.events[:0]
			e.log.mu.Unlock()
			if res := e.reg.Execute(ctx, c); res.IsError || text(res) != want {
				t.Fatalf("result = %+v", res)
			}
		})
	}
	const n = 1000 // the empty run's count varies by a few hundred (the next VM is prepared meanwhile)
	empty := allocs("return 0", "0")
	calls := allocs("let n = 0\nfor (let i = 0; i < 1000; i++) { if (await tools.trivial({ x: i }) === 'ok') n++ }\nreturn n", "1000")
	per := (calls - empty) / n
	t.Logf("%.1f allocations per sub-call (%.0f for the run, %.0f for an empty one)", per, calls, empty)
	if per > 65 {
		t.Errorf("a sub-call allocates %.1f objects, want at most 65", per)
	}
}
