package audit_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/audit/audittest"
	"github.com/dsh-go/dsh/plugins/tools"
)

// BenchmarkExecute measures one call of the pipeline in process, plain
// and audited (SQLite): the recorder's own cost per call, without the
// transport.
func BenchmarkExecute(b *testing.B) {
	args := json.RawMessage(`{"text":"hello"}`)
	for _, audited := range []bool{false, true} {
		name := "plain"
		if audited {
			name = "audited-sqlite"
		}
		b.Run(name, func(b *testing.B) {
			var reg *tools.Registry
			if audited {
				_, reg, _ = benchRegistry(b, audittest.Open(b, "sqlite"))
			} else {
				_, reg, _ = benchRegistry(b, nil)
			}
			for b.Loop() {
				if r := reg.Execute(context.Background(), tools.Call{ID: "c", Name: "echo", Arguments: args, Agent: "a"}); r.IsError {
					b.Fatal(r)
				}
			}
		})
	}
}
