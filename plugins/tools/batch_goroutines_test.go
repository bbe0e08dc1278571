package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB2_GoroutinesStayWithinTheCap: while the first call of a batch of
// 200 parallel calls is held back, every later one dispatches and waits
// for its result's turn (model order); none of them keeps a goroutine
// meanwhile, so the batch runs on at most MaxParallel + a constant
// goroutines (before: one per waiting call). Every call still gets its one
// result, in order.
func TestB2_GoroutinesStayWithinTheCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		release := make(chan struct{})
		mustRegister(t, e.reg, e.root, tools.Definition{
			Name: "gate", Description: "The first call waits for the test.", Concurrency: tools.Parallel,
			Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
				if x.CallID() == "c0" {
					<-release
				}
				return tools.Output{Content: []tools.Content{tools.Text(x.CallID())}}, nil
			},
		})
		calls := make([]tools.Call, 200)
		for i := range calls {
			calls[i] = tools.Call{ID: fmt.Sprint("c", i), Name: "gate"}
		}
		const maxParallel = 4
		before := runtime.NumGoroutine()
		done := make(chan []tools.Result)
		go func() {
			done <- e.reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{MaxParallel: maxParallel})
		}()
		synctest.Wait() // c0 is held; every other call dispatched and waits for its turn
		during := runtime.NumGoroutine() - before
		close(release)
		res := <-done
		if limit := maxParallel + 3; during > limit {
			t.Errorf("%d goroutines during the batch, want at most %d (the cap %d + 3)", during, limit, maxParallel)
		}
		for i, r := range res {
			if r.IsError || r.CallID != calls[i].ID || len(r.Content) != 1 || r.Content[0].Text != calls[i].ID {
				t.Fatalf("result %d: %+v", i, r)
			}
		}
	})
}
