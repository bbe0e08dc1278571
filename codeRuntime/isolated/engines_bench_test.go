package isolated

import (
	"context"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
	"github.com/dsh-go/dsh/codeRuntime/quickjs"
)

// The engines' benchmarks side by side: run with -bench 'Engines' so each engine's sub-benchmark
// runs interleaved with the other's in one process.
func BenchmarkEngines(b *testing.B) {
	g, err := goja.NewInProcess(coderuntime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	q, err := quickjs.NewInProcess(coderuntime.Config{})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	loop := coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.echo({ n: i })).n\nreturn s", Bindings: map[string]coderuntime.Binding{"echo": crtest.Echo}}
	cases := []struct {
		name string
		p    coderuntime.Program
		want string
	}{
		{"empty", coderuntime.Program{Source: ""}, ""},
		{"1000 sequential bindings", loop, "499500"},
	}
	for _, c := range cases {
		for _, e := range []struct {
			name string
			rt   coderuntime.Runtime
		}{{"goja", g}, {"quickjs", q}} {
			b.Run(c.name+"/"+e.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					res, err := e.rt.Run(ctx, c.p)
					if err != nil {
						b.Fatal(err)
					}
					if string(res.Value) != c.want {
						b.Fatal(string(res.Value))
					}
				}
			})
		}
	}
}
