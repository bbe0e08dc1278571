package toolstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// ReadArgs are the arguments of the read_file tool the examples police.
type ReadArgs struct {
	Path string `json:"path" jsonschema:"required"`
}

// readFile is a typed tool; its body stands in for reading a file.
var readFile = tools.MustDefine(tools.TypedTool[ReadArgs, tools.Output]{
	Name:        "read_file",
	Description: "Read a file.",
	Execute: func(ctx context.Context, a ReadArgs, _ *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("contents of " + a.Path)}}, nil
	},
})

// noSecrets is the guard under test: it denies reading .env files.
func noSecrets(e *tools.Execution) error {
	if path.Base(e.Arg("path").String()) == ".env" {
		return errors.New("secrets files (.env) are off limits")
	}
	return nil
}

// call is a call of read_file with the given arguments.
func call(args string) tools.Call {
	return tools.Call{ID: "c1", Arguments: json.RawMessage(args)}
}

// execution is the execution the pipeline would hand to policy for a call
// of read_file. (A test uses toolstest.NewExecution(t, call, readFile),
// which fails the test instead of returning an error.)
func execution(args string) *tools.Execution {
	exec, err := tools.NewExecution(call(args), readFile)
	if err != nil {
		panic(err)
	}
	return exec
}

// A guard is tested against executions built for the tool it polices, as
// the pipeline would build them, without a registry.
func ExampleRunGuard() {
	for _, args := range []string{`{"path":"notes.txt"}`, `{"path":"app/.env"}`} {
		res, denied := toolstest.RunGuard(noSecrets, execution(args))
		if !denied {
			fmt.Println(args, "allowed")
			continue
		}
		fmt.Println(args, res.Error.Code, res.Content[0].Text)
	}
	// Output:
	// {"path":"notes.txt"} allowed
	// {"path":"app/.env"} DENIED Tool call denied: secrets files (.env) are off limits
}

// A guard may deny with a code of its own: any error with a Code method,
// such as a *tools.Error.
func ExampleRunGuard_codedError() {
	quota := func(*tools.Execution) error {
		return tools.NewError("QUOTA_EXCEEDED", "QuotaError", "the agent has read 100 files today")
	}
	res, _ := toolstest.RunGuard(quota, execution(`{"path":"a.txt"}`))
	fmt.Println(res.Error.Code, res.Error.Name)
	fmt.Println(res.Content[0].Text)
	// Output:
	// QUOTA_EXCEEDED QuotaError
	// Tool call denied: the agent has read 100 files today
}

// A tools/pre-execute listener is run with a next that allows, as the last
// listener of the waterfall.
func ExampleRunPreExecute() {
	askOutsideDocs := func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if dir := path.Dir(e.Arg("path").String()); dir != "docs" {
			return tools.Asked("reads outside docs/ need a human"), nil
		}
		return next(ctx)
	}
	for _, args := range []string{`{"path":"docs/a.md"}`, `{"path":"src/main.go"}`} {
		dec, err := toolstest.RunPreExecute(context.Background(), execution(args), askOutsideDocs)
		fmt.Println(args, dec.Kind, dec.Reason, err)
	}
	// Output:
	// {"path":"docs/a.md"} allow  <nil>
	// {"path":"src/main.go"} ask reads outside docs/ need a human <nil>
}

// A tools/execute wrapper is run around the tool's body, which next runs
// as the pipeline's dispatch does (a typed body gets its decoded
// arguments).
func ExampleRunWrapper() {
	// The wrapper under test gives each body a one-minute budget and notes
	// the tool's output.
	budget := func(ctx context.Context, e *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		ctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		res, err := next(ctx)
		if err == nil && !res.IsError {
			res.AdditionalContext = append(res.AdditionalContext, e.Name()+" ran within its budget")
		}
		return res, err
	}
	res := toolstest.RunWrapper(context.Background(), execution(`{"path":"a.txt"}`), budget)
	fmt.Println(res.IsError, res.Content[0].Text, res.AdditionalContext)

	// Once the caller cancelled, next starts no body, as in the pipeline.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = toolstest.RunWrapper(ctx, execution(`{"path":"a.txt"}`), budget)
	fmt.Println(res.Error.Code)
	// Output:
	// false contents of a.txt [read_file ran within its budget]
	// ABORTED_BEFORE_DISPATCH
}

// tools.NewExecution reports what the pipeline would reject before any
// policy runs, with the rejection's code.
func ExampleNewExecution() {
	_, err := tools.NewExecution(call(`{"path":42}`), readFile)
	var te *tools.Error
	fmt.Println(errors.As(err, &te), te.Info.Code)
	fmt.Println(err)
	// Output:
	// true INVALID_ARGS
	// tools: invalid arguments for tool "read_file":
	// - /path: expected string, got number
}
