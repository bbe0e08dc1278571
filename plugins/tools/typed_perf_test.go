package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// emptyTyped is a typed tool without arguments (struct{}) whose body
// returns its text.
func emptyTyped() tools.Definition {
	return tools.MustDefine(tools.TypedTool[struct{}, tools.Output]{
		Name: "empty", Description: "Takes no arguments.",
		Execute: func(context.Context, struct{}, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	})
}

// TestPerf24_TypedEmptyArgumentsAllocations: a typed tool whose arguments
// are struct{} allocates per call no more than an untyped one (3, see
// TestPerf24_ExecuteAllocations; before: 4, a holder for the decoded
// value, which has no bytes), and its calls, sharing one holder, run
// concurrently and each get their result (run it with -race).
func TestPerf24_TypedEmptyArgumentsAllocations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, emptyTyped())
	c := tools.Call{ID: "c", Name: "empty", Arguments: json.RawMessage(`{}`)}
	if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, c) }); n > 3 {
		t.Errorf("%v allocations per Execute, want at most 3", n)
	}
	if text(sink) != "ok" || sink.IsError {
		t.Fatalf("result %+v", sink)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if r := e.reg.Execute(ctx, c); text(r) != "ok" || r.IsError {
					t.Errorf("result %+v", r)
					return
				}
			}
		})
	}
	wg.Wait()
	bad := tools.Call{ID: "c", Name: "empty", Arguments: json.RawMessage(`{"x":1}`)}
	if r := e.reg.Execute(ctx, bad); !r.IsError || r.Error == nil || r.Error.Code != tools.CodeInvalidArgs {
		t.Fatalf("an argument struct{} does not declare: %+v", r)
	}
}
