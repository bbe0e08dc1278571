package tools_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

type benchEdit struct {
	Old string `json:"old" dsh:"required"`
	New string `json:"new" dsh:"required"`
}

type benchTypedArgs struct {
	Path   string               `json:"path" dsh:"required"`
	Offset int                  `json:"offset,omitempty"`
	Limit  *int                 `json:"limit,omitempty"`
	Edits  []benchEdit          `json:"edits"`
	Env    map[string]benchEdit `json:"env,omitempty"`
}

var benchTypedCall = json.RawMessage(`{"path":"/src/main.go","offset":10,"limit":200,` +
	`"edits":[{"old":"a","new":"b"},{"old":"fmt.Println","new":"log.Print"}],` +
	`"env":{"HOME":{"old":"/root","new":"/home/u"}}}`)

// BenchmarkTypedExecute is one call of a typed tool over a struct with
// nested values through the whole pipeline (no listeners): argument
// validation, the key check, decoding into the Go type and the body.
func BenchmarkTypedExecute(b *testing.B) {
	e := newEnv(b)
	mustRegister(b, e.reg, e.root, tools.MustDefine(tools.TypedTool[benchTypedArgs, tools.Output]{
		Name: "typed", Description: "Reads its arguments.",
		Execute: func(_ context.Context, a benchTypedArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(a.Path)}}, nil
		},
	}))
	c := tools.Call{ID: "c", Name: "typed", Arguments: benchTypedCall}
	ctx := context.Background()
	if res := e.reg.Execute(ctx, c); res.IsError {
		b.Fatalf("%+v", res)
	}
	b.ReportAllocs()
	for b.Loop() {
		sink = e.reg.Execute(ctx, c)
	}
}
