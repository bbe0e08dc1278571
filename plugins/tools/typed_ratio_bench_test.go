package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/internal/benchratio"
	"github.com/dsh-go/dsh/plugins/tools"
)

// BenchmarkTypedVsUntyped: the typed call of BenchmarkTypedExecute against
// the same arguments sent to an untyped (raw schema) tool whose body reads
// nothing, interleaved (goal: typed/untyped ≤ 2).
func BenchmarkTypedVsUntyped(b *testing.B) {
	e := newEnv(b)
	mustRegister(b, e.reg, e.root, tools.MustDefine(tools.TypedTool[benchTypedArgs, tools.Output]{
		Name: "typed", Description: "Reads its arguments.",
		Execute: func(_ context.Context, a benchTypedArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(a.Path)}}, nil
		},
	}))
	mustRegister(b, e.reg, e.root, tools.Definition{
		Name: "untyped", Description: "Reads nothing.",
		Parameters: json.RawMessage(`{"type":"object"}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("/src/main.go")}}, nil
		},
	})
	typed := tools.Call{ID: "c", Name: "typed", Arguments: benchTypedCall}
	untyped := tools.Call{ID: "c", Name: "untyped", Arguments: benchTypedCall}
	ctx := context.Background()
	for _, c := range []tools.Call{typed, untyped} {
		if res := e.reg.Execute(ctx, c); res.IsError {
			b.Fatalf("%+v", res)
		}
	}
	benchratio.Compare(b, "typed/untyped", 100,
		func() { sink = e.reg.Execute(ctx, typed) },
		func() { sink = e.reg.Execute(ctx, untyped) })
}

// BenchmarkTypedEmptyVsUntyped: a typed tool without arguments (struct{})
// against an untyped one, both called with {}, interleaved: the typed
// wrapper's fixed cost.
func BenchmarkTypedEmptyVsUntyped(b *testing.B) {
	e := newEnv(b)
	mustRegister(b, e.reg, e.root, emptyTyped())
	mustRegister(b, e.reg, e.root, trivial())
	typed := tools.Call{ID: "c", Name: "empty", Arguments: json.RawMessage(`{}`)}
	untyped := tools.Call{ID: "c", Name: "trivial", Arguments: json.RawMessage(`{}`)}
	ctx := context.Background()
	for _, c := range []tools.Call{typed, untyped} {
		if res := e.reg.Execute(ctx, c); res.IsError {
			b.Fatalf("%+v", res)
		}
	}
	benchratio.Compare(b, "empty/untyped", 100,
		func() { sink = e.reg.Execute(ctx, typed) },
		func() { sink = e.reg.Execute(ctx, untyped) })
}
