package codemode_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestC5_ARunCodeCallOfTheLongestIDMakesValidSubCalls: MaxCallIDLen bounds
// the ids callers give; a sub-call's id, "<outer id>:code:<n>", may exceed
// it by its suffix, so a run_code call whose id is MaxCallIDLen bytes long
// still dispatches its sub-calls (an outer id one byte longer is refused
// itself, as INVALID_CALL).
func TestC5_ARunCodeCallOfTheLongestIDMakesValidSubCalls(t *testing.T) {
	e := newCodeEnv(t, codeOpts{})
	mustRegister(t, e.reg, e.root, toolFunc("read", func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("text")}}, nil
	}))
	var (
		mu   sync.Mutex
		seen []string
	)
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if x.Name() == "read" {
			mu.Lock()
			seen = append(seen, x.CallID())
			mu.Unlock()
		}
		return next(ctx)
	}))
	outer := strings.Repeat("x", tools.MaxCallIDLen)
	res := e.reg.Execute(context.Background(), runCode(outer, `return [await tools.read({}), await tools.read({})]`, ""))
	if res.IsError || len(seen) != 2 || seen[0] != outer+":code:1" || seen[1] != outer+":code:2" {
		t.Fatalf("run_code = %+v; sub-calls seen %d: %.20q", res, len(seen), seen)
	}
	if res := e.reg.Execute(context.Background(), runCode(outer+"x", `return 1`, "")); code(res) != tools.CodeInvalidCall {
		t.Fatalf("an outer id over the limit: %+v", res)
	}
}
