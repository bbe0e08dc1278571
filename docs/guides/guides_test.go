// Package guides_test holds the code of the hand-written guides in this
// directory (writing-a-plugin.md, embedding.md) as Example functions that
// go test compiles and runs, and TestGuideCodeIsTested, which fails when a
// guide shows Go code that is not part of them.
//
// The rule for a guide's ```go block: after trimming blank lines at both
// ends and removing the block's common leading indentation, its lines must
// appear consecutively, with the same relative indentation, in one of
//
//   - the body of an Example function (or a Test function, for code that
//     needs a *testing.T) in this package's test files, or
//   - a run of consecutive top-level declarations (types, methods, vars)
//     other than those functions, which the Examples use.
//
// So a block may show part of an Example (several blocks can walk through
// one), including its "// Output:" comment, which go test checks too.
package guides_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m) // every guide's code cleans up after itself
}

// guides are the markdown files whose ```go blocks must be tested code.
var guides = []string{"writing-a-plugin.md", "embedding.md", "../../README.md"}

func TestGuideCodeIsTested(t *testing.T) {
	sources := testedSources(t)
	for _, guide := range guides {
		md, err := os.ReadFile(guide)
		if err != nil {
			t.Fatal(err)
		}
		blocks := goBlocks(string(md))
		if len(blocks) == 0 {
			t.Errorf("%s: no ```go blocks found", guide)
		}
		for i, b := range blocks {
			if len(b.lines) == 0 {
				t.Errorf("%s: ```go block %d (line %d) is empty", guide, i+1, b.line)
				continue
			}
			if !containedInAny(b.lines, sources) {
				t.Errorf("%s: ```go block %d (line %d) does not appear verbatim in any Example function body or "+
					"top-level declaration of docs/guides/*_test.go; copy it from the tested code (or fix the code):\n%s",
					guide, i+1, b.line, strings.Join(b.lines, "\n"))
			}
		}
	}
}

// source is one region of test code a guide block may be taken from.
type source struct {
	name  string
	lines []string
}

// testedSources returns the bodies of the Example and Test functions and the
// runs of other top-level declarations of this package's test files.
func testedSources(t *testing.T) []source {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	fset := token.NewFileSet()
	for _, name := range files {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		off := func(p token.Pos) int { return fset.Position(p).Offset }
		runStart, runEnd := -1, -1
		flush := func() {
			if runStart >= 0 {
				out = append(out, source{name + " declarations", splitLines(string(src[runStart:runEnd]))})
			}
			runStart = -1
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Body != nil &&
				(strings.HasPrefix(fn.Name.Name, "Example") || strings.HasPrefix(fn.Name.Name, "Test")) {
				flush()
				body := string(src[off(fn.Body.Lbrace)+1 : off(fn.Body.Rbrace)])
				out = append(out, source{name + " " + fn.Name.Name, splitLines(body)})
				continue
			}
			start := d.Pos()
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Doc != nil {
					start = d.Doc.Pos()
				}
			case *ast.GenDecl:
				if d.Doc != nil {
					start = d.Doc.Pos()
				}
			}
			if runStart < 0 {
				runStart = off(start)
			}
			runEnd = off(d.End())
		}
		flush()
	}
	return out
}

type block struct {
	line  int // 1-based line of the opening fence
	lines []string
}

// goBlocks returns the ```go fenced blocks of a markdown text, trimmed of
// blank lines at both ends.
func goBlocks(md string) []block {
	var out []block
	var cur *block
	for i, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &block{line: i + 1}
		case cur != nil && trimmed == "```":
			cur.lines = trimBlank(cur.lines)
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, strings.TrimRight(l, " \t\r"))
		}
	}
	return out
}

func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	return lines
}

func trimBlank(lines []string) []string {
	for len(lines) > 0 && lines[0] == "" {
		lines = lines[1:]
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// containedInAny reports whether want appears in one of the sources.
func containedInAny(want []string, sources []source) bool {
	want = dedent(want)
	for _, s := range sources {
		for i := 0; i+len(want) <= len(s.lines); i++ {
			if equalLines(want, dedent(s.lines[i:i+len(want)])) {
				return true
			}
		}
	}
	return false
}

// dedent removes the leading whitespace common to the non-blank lines.
func dedent(lines []string) []string {
	prefix := ""
	first := true
	for _, l := range lines {
		if l == "" {
			continue
		}
		ws := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		if first {
			prefix, first = ws, false
			continue
		}
		for !strings.HasPrefix(ws, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = strings.TrimPrefix(l, prefix)
	}
	return out
}

func equalLines(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
