package coderuntime

import (
	"context"
	"testing"
)

func TestQuickJSSmoke(t *testing.T) {
	q, err := NewQuickJS(Config{Timeout: ample, CPUBudget: ample})
	if err != nil {
		t.Fatal(err)
	}
	for _, src := range []string{
		"return 1",
		"const a: number = await tools.echo({n: 2}); console.log('x', a); return a",
		"throw new Error('boom')",
		"const a = 1\nconst b = = 2",
		"await new Promise(() => {})",
	} {
		res, err := q.Run(context.Background(), Program{Source: src, Bindings: map[string]Binding{"echo": echo}})
		if res != nil {
			t.Logf("%q -> %s %v", src, res.Value, res.Logs)
		} else {
			t.Logf("%q -> %v", src, err)
		}
	}
}
