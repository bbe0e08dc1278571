package goja

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// TestSyntaxErrorColumnsAreCharacters: esbuild reports columns in bytes; the failure's column counts
// characters of the model's line.
func TestSyntaxErrorColumnsAreCharacters(t *testing.T) {
	g := newTestRuntime(t)
	f := mustFail(t, g, coderuntime.Program{Source: "const s = 'ééé'; x = = 1"}, coderuntime.KindSyntax)
	if f.Line != 1 || f.Column != 22 {
		t.Fatalf("position = %d:%d, want 1:22 (%s)", f.Line, f.Column, f.Message)
	}
}

// TestGojaParserPositionsAreSourceMapped: a position goja's parser reports is in esbuild's output;
// the failure carries the model's line and column, found through the source map.
func TestGojaParserPositionsAreSourceMapped(t *testing.T) {
	src := "const é = 1\n\n  const yy = é + 1\nreturn yy"
	js, f := jsengine.WrapProgram(src)
	if f != nil {
		t.Fatal(f)
	}
	// Where esbuild put "yy =" in its output.
	var line, col int
	for i, l := range strings.Split(js, "\n") {
		if c := strings.Index(l, "yy ="); c >= 0 {
			line, col = i+1, c+1
			break
		}
	}
	if line == 0 {
		t.Fatalf("no yy in %s", js)
	}
	err := fmt.Errorf("SyntaxError: %s: Line %d:%d Unexpected token", jsengine.SourceName, line, col)
	got := gojaSyntaxFailure(src, js, err)
	if got.Line != 3 || got.Column != 9 || !errors.Is(got, err) {
		t.Fatalf("failure = %+v at %d:%d, want the model's 3:9", got, got.Line, got.Column)
	}
	// A position the map does not cover is unknown, not misreported.
	got = gojaSyntaxFailure(src, js, fmt.Errorf("%s: Line 999:1 x", jsengine.SourceName))
	if got.Line != 0 || got.Column != 0 {
		t.Fatalf("unmapped position reported as %d:%d", got.Line, got.Column)
	}
}

// TestGojaCompilerPositionsAreTheModels: a bad regular expression literal, which goja's compiler
// refuses after the parser read the source map, is reported where the model wrote it (it was mapped
// a second time, to another line).
func TestGojaCompilerPositionsAreTheModels(t *testing.T) {
	g, err := NewInProcess(coderuntime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{`/(?<n>a)\k<m>/`, `/a{2,1}/`, `/[b-a]/`} {
		_, err := g.Run(context.Background(), coderuntime.Program{Source: "const a = 1\nconst b = 2\nconst c = 3\nconst re = " + re + "\nreturn 1"})
		var f *coderuntime.Failure
		if !errors.As(err, &f) || f.Kind != coderuntime.KindSyntax || f.Line != 4 || f.Column != 12 {
			t.Errorf("%s: Run = %v; want a syntax failure at line 4, column 12", re, err)
		}
	}
}
