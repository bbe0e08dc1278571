package goja_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
)

func Example() {
	rt, err := goja.NewInProcess(coderuntime.Config{})
	if err != nil {
		panic(err)
	}
	res, err := rt.Run(context.Background(), coderuntime.Program{
		Source: `interface Sum { total: number }
const r = await tools.add({ a: 2, b: 3 }) as Sum
console.log("total is", r.total)
return { doubled: r.total * 2 }`,
		Bindings: map[string]coderuntime.Binding{
			"add": func(_ context.Context, args json.RawMessage) (json.RawMessage, error) {
				var in struct{ A, B int }
				if err := json.Unmarshal(args, &in); err != nil {
					return nil, err
				}
				return json.Marshal(map[string]int{"total": in.A + in.B})
			},
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))
	fmt.Println(res.Logs[0].Level, res.Logs[0].Text)

	_, err = rt.Run(context.Background(), coderuntime.Program{Source: "const a = 1\n\nthrow new Error('boom')"})
	var f *coderuntime.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Kind, f.Message, f.Line)
	}
	// Output:
	// {"doubled":10}
	// log total is 5
	// exception Error: boom 3
}
