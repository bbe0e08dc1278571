package tools_test

import (
	"context"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestSubCallAllocatesAsExecute: a sub-call of a trivial tool through SubCalls (its Entry and
// Run) allocates no more than the same call through Execute (3, see
// TestPerf24_ExecuteAllocations): its entry in the batch shares the Execution's allocation (4
// when each had its own).
func TestSubCallAllocatesAsExecute(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, trivial())
	c := tools.Call{ID: "c", Name: "trivial", Arguments: benchArgs}
	direct := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, c) })
	subs := e.reg.NewSubCalls(nil)
	n := int64(0)
	sub := testing.AllocsPerRun(200, func() {
		n++
		sink = subs.Run(ctx, subs.Entry(n), c)
	})
	if sink.IsError {
		t.Fatalf("result = %+v", sink)
	}
	if sub > direct {
		t.Errorf("a sub-call allocates %v times, Execute %v: want no more", sub, direct)
	}
}
