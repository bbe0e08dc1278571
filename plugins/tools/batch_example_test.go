package tools_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Run the calls of one model turn as a batch: the reads (declared
// parallel) overlap, the write (undeclared, so exclusive) is a barrier;
// results, and the context they defer, come back in model order.
func ExampleRegistry_ExecuteBatch() {
	h, reg := boot()
	defer h.Close()
	files := map[string]string{"a.txt": "alpha", "b.txt": "beta"}
	_, _ = reg.Register(h.Root(), tools.Definition{
		Name: "read", Description: "Read a file.", Concurrency: tools.Parallel,
		Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			p := x.Arg("path").String()
			return tools.Output{Content: []tools.Content{tools.Text(files[p])}, AdditionalContext: []string{"read " + p}}, nil
		},
	})
	_, _ = reg.Register(h.Root(), tools.Definition{
		Name: "write", Description: "Write a file.",
		Execute: func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	})
	call := func(id, name, path string) tools.Call {
		args, _ := json.Marshal(map[string]string{"path": path})
		return tools.Call{ID: id, Name: name, Arguments: args}
	}
	calls := []tools.Call{call("1", "read", "a.txt"), call("2", "read", "b.txt"), call("3", "write", "c.txt")}
	for _, c := range calls {
		fmt.Println(c.ID, c.Name, reg.Concurrency(c))
	}
	results := reg.ExecuteBatch(context.Background(), calls, tools.BatchOptions{MaxParallel: 4})
	for _, r := range results {
		fmt.Println(r.CallID, r.Content[0].Text)
	}
	fmt.Println(tools.BatchContext(results), tools.ConcludesTurn(results))
	// Output:
	// 1 read parallel
	// 2 read parallel
	// 3 write exclusive
	// 1 alpha
	// 2 beta
	// 3 ok
	// [read a.txt read b.txt] false
}
