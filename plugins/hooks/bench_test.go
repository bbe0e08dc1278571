package hooks_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/hooks"
	"github.com/dsh-go/dsh/plugins/tools"
)

// BenchmarkHook compares answering a PreToolUse payload (parse + Check +
// the JSON answer) with the baseline of executing the same call through
// the same registry (a no-op body). Run old/new alternately:
//
//	go test -run '^$' -bench BenchmarkHook -benchmem -count 6 ./plugins/hooks/
func BenchmarkHook(b *testing.B) {
	reg, root := policyHostRoot(b)
	if _, err := reg.Register(root, tools.Definition{
		Name: "Read", Description: "Read a file.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
	}); err != nil {
		b.Fatal(err)
	}
	payload := pre("Read", `{"file_path":"/home/user/demo/main.go","limit":200}`)
	b.Run("Execute(baseline)", func(b *testing.B) {
		call := tools.Call{ID: "t1", Name: "Read", Arguments: json.RawMessage(`{"file_path":"/home/user/demo/main.go","limit":200}`)}
		for b.Loop() {
			_ = reg.Execute(context.Background(), call)
		}
	})
	b.Run("ParseAndDecide", func(b *testing.B) {
		for b.Loop() {
			p, err := hooks.ParsePayload(payload)
			if err != nil {
				b.Fatal(err)
			}
			_ = hooks.Decide(context.Background(), hooks.ClaudeCode, reg, p)
		}
	})
}
