package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

func boot() (*host.Host, *tools.Registry) {
	h := host.New()
	_, _ = h.Root().Plugin(tools.Plugin, tools.Config{Mode: tools.Native})
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		panic(err)
	}
	return h, reg
}

// Register a raw JSON-Schema tool and execute a call.
func ExampleRegistry_Register() {
	h, reg := boot()
	defer h.Close()
	_, err := reg.Register(h.Root(), tools.Definition{
		Name:        "greet",
		Description: "Greet someone.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"who":{"type":"string"}}}`),
		Execute: func(ctx context.Context, x *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("hello, " + x.Arg("who").String())}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	res := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "greet", Arguments: json.RawMessage(`{"who":"world"}`)})
	fmt.Println(res.Content[0].Text, res.IsError)
	// Output: hello, world false
}

// A tools/pre-execute listener denies calls to one tool; the denial is an
// isError result with code DENIED, and the tool body never runs.
func ExamplePreExecute() {
	h, reg := boot()
	defer h.Close()
	_, _ = reg.Register(h.Root(), tools.Definition{
		Name: "rm", Description: "Remove a file.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			fmt.Println("never printed")
			return tools.Output{}, nil
		},
	})
	_, _ = host.OnWaterfall(h.Root(), tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if x.Name() == "rm" {
			return tools.Denied("rm is disabled in this workspace"), nil
		}
		return next(ctx)
	})
	res := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "rm", Arguments: json.RawMessage(`{"path":"/"}`)})
	fmt.Println(res.IsError, res.Error.Code)
	fmt.Println(res.Content[0].Text)
	// Output:
	// true DENIED
	// Tool call denied: rm is disabled in this workspace
}

type addArgs struct {
	A int `json:"a" jsonschema:"the first addend"`
	B int `json:"b"`
}

// Define a typed tool from a struct: the schema is derived from the fields
// and tags, and arguments are validated before the body runs.
func ExampleDefine() {
	h, reg := boot()
	defer h.Close()
	def, err := tools.Define(tools.TypedTool[addArgs, tools.Output]{
		Name:        "add",
		Description: "Add two integers.",
		Execute: func(ctx context.Context, args addArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(fmt.Sprint(args.A + args.B))}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	_, _ = reg.Register(h.Root(), def)
	fmt.Println(string(reg.Schemas("")[0].Parameters))
	ok := reg.Execute(context.Background(), tools.Call{ID: "1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`)})
	bad := reg.Execute(context.Background(), tools.Call{ID: "2", Name: "add", Arguments: json.RawMessage(`{"a":"two"}`)})
	fmt.Println(ok.Content[0].Text)
	fmt.Println(bad.Error.Code)
	fmt.Println(bad.Content[0].Text)
	// Output:
	// {"type":"object","properties":{"a":{"type":"integer","description":"the first addend"},"b":{"type":"integer"}},"required":["a","b"],"additionalProperties":false}
	// 5
	// INVALID_ARGS
	// invalid arguments for tool "add":
	// - /a: expected integer, got string
	// - /b: required property is missing
}
