package jsengine

import (
	"strings"
	"testing"
)

// TestWrapCache: a transform is cached by the source's hash and served from the cache; a source
// over CacheMaxSource, one failing the bounds scan or the transform is not transformed (the engine
// reports it); the cache stays within CacheMaxEntries.
func TestWrapCache(t *testing.T) {
	var c WrapCache
	want, f := WrapProgram("return 1")
	if f != nil {
		t.Fatal(f)
	}
	for range 2 {
		if js, ok := c.Wrap("return 1"); !ok || js != want {
			t.Fatalf("Wrap = %q, %v; want %q", js, ok, want)
		}
	}
	if c.Len() != 1 {
		t.Fatalf("%d cached, want 1", c.Len())
	}
	c.Put("return 2", "marker")
	if js, ok := c.Wrap("return 2"); !ok || js != "marker" {
		t.Fatalf("Wrap after Put = %q, %v: not served from the cache", js, ok)
	}
	for _, src := range []string{
		"return (", // a syntax error
		strings.Repeat("[", MaxNestingDepth+10) + strings.Repeat("]", MaxNestingDepth+10), // over the bounds
		"//" + strings.Repeat("x", CacheMaxSource),                                        // too long to cache
	} {
		if js, ok := c.Wrap(src); ok || js != "" {
			t.Errorf("Wrap(%.20q…) = %.20q, %v; want not transformed", src, js, ok)
		}
	}
	for i := range CacheMaxEntries + 10 {
		c.Put(strings.Repeat(" ", i)+"return 3", "x")
	}
	if c.Len() > CacheMaxEntries {
		t.Fatalf("%d cached, over %d", c.Len(), CacheMaxEntries)
	}
}
