package timeoutpolicy_test

import (
	"context"
	"testing"
	"time"

	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
)

func benchEnv(b *testing.B, withPolicy bool) *env {
	e := newEnv(b)
	if withPolicy {
		e.load(b, timeoutpolicy.Plugin, timeoutpolicy.Config{})
	}
	e.tool(b, "echo", time.Minute, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
	})
	return e
}

func runExecute(b *testing.B, e *env) {
	ctx := context.Background()
	call := tools.Call{ID: "c", Name: "echo", Arguments: []byte(`{}`)}
	b.ReportAllocs()
	for b.Loop() {
		if r := e.reg.Execute(ctx, call); r.IsError {
			b.Fatal(r)
		}
	}
}

// BenchmarkExecuteWithout is Execute of a trivial tool (declaring a 1 minute
// budget) with no tools/execute wrapper.
func BenchmarkExecuteWithout(b *testing.B) { runExecute(b, benchEnv(b, false)) }

// BenchmarkExecuteWithTimeoutPolicy is the same call with the timeout policy
// loaded: the difference is the policy's per-call overhead (a derived
// context with a timer, and the waterfall hop).
func BenchmarkExecuteWithTimeoutPolicy(b *testing.B) { runExecute(b, benchEnv(b, true)) }
