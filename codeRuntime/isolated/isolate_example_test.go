package isolated_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

// A runtime for model-written code: isolated in worker processes by default. Bindings run in the
// host; a program that exhausts a limit kills only its worker.
func ExampleNewFromConfig() {
	rt, err := isolated.NewFromConfig(coderuntime.Config{
		MaxMemoryBytes: 256 << 20,
		// Ample time budgets, so that memory is what stops the second program even on a slow
		// machine (or under the race detector).
		Timeout: 10 * time.Minute, CPUBudget: 10 * time.Minute,
	})
	if err != nil {
		panic(err)
	}
	if c, ok := rt.(io.Closer); ok {
		defer c.Close() // kills the warm workers
	}
	res, err := rt.Run(context.Background(), coderuntime.Program{
		Source: "const { n } = await tools.next({}) as { n: number }\nreturn n * 2",
		Bindings: map[string]coderuntime.Binding{
			"next": func(context.Context, json.RawMessage) (json.RawMessage, error) {
				return json.RawMessage(`{"n":21}`), nil
			},
		},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Value))

	_, err = rt.Run(context.Background(), coderuntime.Program{Source: "const a = []\nfor (;;) a.push('x'.repeat(1 << 20) + a.length)"})
	var f *coderuntime.Failure
	if errors.As(err, &f) {
		fmt.Println(f.Kind)
	}
	// Output:
	// 42
	// limit
}
