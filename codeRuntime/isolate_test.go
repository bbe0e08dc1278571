package coderuntime

import (
	"context"
	"encoding/json"
	"testing"
	"time"
)

// isoConfig is the configuration of the isolated tests: budgets far above what a passing run
// needs.
func isoConfig() Config {
	return Config{Timeout: time.Minute, CPUBudget: time.Minute, PoolSize: 1}
}

func newIsolatedT(t *testing.T, cfg Config) *Isolated {
	t.Helper()
	iso, err := NewIsolated(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = iso.Close() })
	return iso
}

func TestIsolatedRunsAProgram(t *testing.T) {
	iso := newIsolatedT(t, isoConfig())
	res, err := iso.Run(context.Background(), Program{
		Source: "const r = await tools.add({a: 2, b: 3}); console.log('sum', r.sum); return r.sum * 2",
		Bindings: map[string]Binding{"add": func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
			var in struct{ A, B int }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			return json.Marshal(map[string]int{"sum": in.A + in.B})
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != "10" || len(res.Logs) != 1 || res.Logs[0].Text != "sum 5" {
		t.Fatalf("result %s, logs %+v", res.Value, res.Logs)
	}
}
