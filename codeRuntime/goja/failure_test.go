package goja

import (
	"errors"
	"strings"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// TestBudgetWhileDescribingAThrownValueIsATimeout: a thrown value whose description never ends (a
// message getter that loops) ends the run as a timeout (the busy-CPU budget), not as an exception
// that is "not printable".
func TestBudgetWhileDescribingAThrownValueIsATimeout(t *testing.T) {
	for _, src := range []string{
		"throw { get message(): string { while (true) {} } }",
		"const e: any = new Error('x')\nObject.defineProperty(e, 'name', { get() { while (true) {} } })\nthrow e",
		"const c: any = {}\nc.c = c\nreturn { toJSON() { while (true) {} } }",
	} {
		f := mustFail(t, runawayRuntime(t), coderuntime.Program{Source: src}, coderuntime.KindTimeout)
		if !errors.Is(f, coderuntime.ErrCPUBudget) {
			t.Errorf("cause = %v, want ErrCPUBudget", f.Cause)
		}
	}
}

// TestFailureTextIsCapped: the text of a thrown value reaches the failure cut to the output limit
// (MaxLogBytes), with a note saying so, like the logs.
func TestFailureTextIsCapped(t *testing.T) {
	g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxLogBytes = 1000 })
	for _, src := range []string{
		"throw 'é'.repeat(1 << 20)",
		"throw new Error('x'.repeat(1 << 20))",
		"throw { message: 'y'.repeat(1 << 20) }",
		"throw ['z'.repeat(1 << 20)]",
	} {
		f := mustFail(t, g, coderuntime.Program{Source: src}, coderuntime.KindException)
		if len(f.Message) > 1000 || !strings.Contains(f.Message, "(cut: the text is longer than the output limit)") {
			t.Errorf("%s: message is %d bytes (%.60q...), want at most 1000 with the cut note", src, len(f.Message), f.Message)
		}
	}
}

func TestCapText(t *testing.T) {
	if got := jsengine.CapText("short", 10); got != "short" {
		t.Errorf("capText(short) = %q", got)
	}
	long := strings.Repeat("é", 100)
	got := jsengine.CapText(long, 80)
	if len(got) > 80 || !strings.HasSuffix(got, "limit)") || !strings.HasPrefix(got, "é") {
		t.Errorf("capText = %q (%d bytes)", got, len(got))
	}
	for i := 0; i < 200; i++ {
		if got := jsengine.CapText(long, i); len(got) > max(i, len(" … (cut: the text is longer than the output limit)")) {
			t.Errorf("capText(%d) = %d bytes", i, len(got))
		}
	}
}

// FuzzWithGojaColumns: for any program esbuild accepts, withGojaColumns leaves the JavaScript as it
// is and moves every generated column of its source map one to the right: a position looked up one
// column later in the moved map finds what the same position found in the original.
func FuzzWithGojaColumns(f *testing.F) {
	for _, s := range []string{"const o: any = {}\no.f(1, 2)", "JSON.parse('{')", "throw new /* c */ Error('x')", "\n\n", "x", "const s = 'ééé'; foo()", "await import('x')"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		js, fail := jsengine.WrapProgram(src)
		if fail != nil {
			return
		}
		moved := withGojaColumns(js)
		i := strings.LastIndex(js, sourceMapMarker)
		if i < 0 || !strings.HasPrefix(moved, js[:i+len(sourceMapMarker)]) {
			t.Fatalf("the JavaScript changed:\n%s\n%s", js, moved)
		}
		orig, shifted := jsengine.InlineSourceMap(js), jsengine.InlineSourceMap(moved)
		if shifted == nil {
			t.Fatal("the moved map does not decode")
		}
		for l, line := range strings.Split(js[:i], "\n") {
			for c := 1; c <= len(line)+1; c++ {
				ol, oc, ok := jsengine.MapGenerated(orig, l+1, c)
				ml, mc, mok := jsengine.MapGenerated(shifted, l+1, c+1)
				if ol != ml || oc != mc || ok != mok {
					t.Fatalf("line %d column %d: %d:%d %v in the map, %d:%d %v one column later in the moved map", l+1, c, ol, oc, ok, ml, mc, mok)
				}
			}
		}
	})
}
