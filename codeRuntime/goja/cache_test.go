package goja

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// TestCompileCache: runs of one source share its compiled program but not their runtimes; the cache
// is bounded in entries, bytes and source length; failed compilations are not cached.
func TestCompileCache(t *testing.T) {
	g := newTestRuntime(t)
	// The same source from many runs at once: the cached program is shared, the runtimes are not.
	src := "(globalThis as any).n = ((globalThis as any).n ?? 0) + 1\nconst r = await tools.echo({ n: (globalThis as any).n })\nif (r.n !== 1) throw new Error('state leaked')\nthrow new Error('pos')"
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				_, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"echo": echo}})
				f, ok := err.(*coderuntime.Failure)
				if !ok || f.Message != "Error: pos" || f.Line != 4 || f.Column != 7 {
					t.Errorf("err = %v, want Error: pos at 4:7", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := g.programs.len(); n != 1 {
		t.Fatalf("cache holds %d programs, want 1", n)
	}
	t.Run("bounded", func(t *testing.T) {
		for i := range jsengine.CacheMaxEntries + 10 {
			mustRun(t, g, coderuntime.Program{Source: fmt.Sprintf("return %d", i)})
		}
		if n := g.programs.len(); n != jsengine.CacheMaxEntries {
			t.Fatalf("cache holds %d programs, want %d", n, jsengine.CacheMaxEntries)
		}
		big := "return '" + strings.Repeat("x", jsengine.CacheMaxSource) + "'.length"
		mustRun(t, g, coderuntime.Program{Source: big})
		if g.programs.get(big) != nil {
			t.Fatal("an over-long source was cached")
		}
		var c programCache
		for i := range 40 {
			c.put(fmt.Sprintf("%d%s", i, strings.Repeat(" ", jsengine.CacheMaxSource-8)), nil)
		}
		if c.bytes > jsengine.CacheMaxBytes || c.len() != jsengine.CacheMaxBytes/jsengine.CacheMaxSource {
			t.Fatalf("cache holds %d programs, %d bytes", c.len(), c.bytes)
		}
	})
	t.Run("syntax errors are not cached", func(t *testing.T) {
		before := g.programs.len()
		mustFail(t, g, coderuntime.Program{Source: "const = 1"}, coderuntime.KindSyntax)
		mustFail(t, g, coderuntime.Program{Source: "const = 1"}, coderuntime.KindSyntax)
		if g.programs.get("const = 1") != nil || g.programs.len() != before {
			t.Fatal("a failed compilation was cached")
		}
	})
}

// BenchmarkRunEmptyUncached is BenchmarkRunEmpty with a different program each time, so every run
// pays for the esbuild transform and goja compile (the cache never hits).
func BenchmarkRunEmptyUncached(b *testing.B) {
	g, _ := NewInProcess(coderuntime.Config{})
	ctx := context.Background()
	i := 0
	for b.Loop() {
		i++
		if _, err := g.Run(ctx, coderuntime.Program{Source: fmt.Sprintf("// %d", i)}); err != nil {
			b.Fatal(err)
		}
	}
}
