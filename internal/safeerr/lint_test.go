package safeerr_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// chainWalkers are the functions that walk an error's chain unbounded,
// calling its methods unprotected, by import path. errors.Is and errors.As
// loop forever on an Unwrap that returns itself and overflow the stack
// (killing the process) on an Unwrap() []error that contains itself.
var chainWalkers = map[string][]string{
	"errors":                      {"Is", "As", "Unwrap"},
	"golang.org/x/xerrors":        {"Is", "As", "Unwrap", "Opaque"},
	"github.com/pkg/errors":       {"Is", "As", "Unwrap", "Cause"},
	"github.com/go-errors/errors": {"Is", "As", "Unwrap"},
}

// trusted lists the uses of a chain walker in non-test code that may stay,
// each because the error it reads can only be one the standard library
// (or this module's own code) made, never a value user code handed back.
// A key is "file: function: expression" (the file relative to the module
// root, the enclosing function as receiver.name, the expression as gofmt
// prints it); the value says why the error is trusted. Every other use is
// a failure: read such errors with package safeerr (Is, As, AsAny).
var trusted = map[string]string{
	// The example shows the public API as a program outside this module
	// would use it (it cannot import internal/safeerr); the error is what
	// host.Context.Plugin returns for the example's own greeter, whose
	// Apply returns only the host's and its own plain errors.
	"examples/hello/main.go: run: errors.Is(err, host.ErrPending)": "the example's own plugin's error",
}

// TestNoUnboundedErrorChainWalks fails for every use of errors.Is,
// errors.As or errors.Unwrap (or of a look-alike package's chain walkers)
// in a non-test Go file of the module that is not in trusted, and for
// every entry of trusted that no longer matches a use.
func TestNoUnboundedErrorChainWalks(t *testing.T) {
	root := moduleRoot(t)
	used := map[string]bool{}
	var bad []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "vendor" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		for _, u := range chainWalkerUses(t, path, filepath.ToSlash(rel)) {
			if _, ok := trusted[u.key]; ok {
				used[u.key] = true
				continue
			}
			bad = append(bad, u.pos+": "+u.key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		t.Errorf("%d unbounded walks of an error chain (read untrusted errors with package safeerr; "+
			"add a use to trusted, with the reason, only if the error can only come from the standard library or this module):\n\t%s",
			len(bad), strings.Join(bad, "\n\t"))
	}
	var stale []string
	for k := range trusted {
		if !used[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	if len(stale) > 0 {
		t.Errorf("entries of trusted that match no use any more (remove them):\n\t%s", strings.Join(stale, "\n\t"))
	}
}

type use struct{ pos, key string }

// chainWalkerUses returns every reference (a call or a function value) to a
// chain walker in the file at path. A dot import of a chain walker's
// package is reported as a use, since its functions cannot be told apart
// from local ones here; a local variable that shadows the package's name is
// reported too (the check fails closed).
func chainWalkerUses(t *testing.T, path, rel string) []use {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string][]string{} // local package name -> walker functions
	var uses []use
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			t.Fatal(err)
		}
		funcs, ok := chainWalkers[p]
		if !ok {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		switch name {
		case "_":
			continue
		case ".":
			uses = append(uses, use{fset.Position(imp.Pos()).String(), rel + ": dot import of " + p})
			continue
		}
		names[name] = funcs
	}
	if len(names) == 0 {
		return uses
	}
	var stack []ast.Node
	ast.Inspect(f, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		x, ok := sel.X.(*ast.Ident)
		if !ok || !slices.Contains(names[x.Name], sel.Sel.Name) {
			return true
		}
		var expr ast.Node = sel
		if len(stack) >= 2 {
			if call, ok := stack[len(stack)-2].(*ast.CallExpr); ok && call.Fun == sel {
				expr = call
			}
		}
		var b bytes.Buffer
		if err := printer.Fprint(&b, fset, expr); err != nil {
			t.Fatal(err)
		}
		uses = append(uses, use{fset.Position(sel.Pos()).String(), fmt.Sprintf("%s: %s: %s", rel, enclosingFunc(stack), b.String())})
		return true
	})
	return uses
}

// enclosingFunc names the function declaration in stack: "Name" or
// "Recv.Name" ("" at package level).
func enclosingFunc(stack []ast.Node) string {
	for _, n := range slices.Backward(stack) {
		fd, ok := n.(*ast.FuncDecl)
		if !ok {
			continue
		}
		if fd.Recv == nil || len(fd.Recv.List) == 0 {
			return fd.Name.Name
		}
		rt := fd.Recv.List[0].Type
		for {
			switch x := rt.(type) {
			case *ast.StarExpr:
				rt = x.X
				continue
			case *ast.IndexExpr:
				rt = x.X
				continue
			case *ast.IndexListExpr:
				rt = x.X
				continue
			}
			break
		}
		if id, ok := rt.(*ast.Ident); ok {
			return id.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
	return ""
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// The check finds the chain walkers however they are named and used, and
// only them.
func TestChainWalkerUsesFindsEveryForm(t *testing.T) {
	src := `package p

import (
	. "errors"
	stderrors "errors"
	pkgerrors "github.com/pkg/errors"
)

var walk = stderrors.Unwrap

type T struct{}

func (*T) M(err error) bool {
	var target *T
	return stderrors.As(err, &target) || func() bool { return stderrors.Is(err, nil) }()
}

func f(err error) error { _ = New("not a walker"); _ = stderrors.New("nor this"); return pkgerrors.Cause(err) }
`
	path := filepath.Join(t.TempDir(), "p.go")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range chainWalkerUses(t, path, "p.go") {
		got = append(got, u.key)
	}
	want := []string{
		"p.go: dot import of errors",
		"p.go: : stderrors.Unwrap",
		"p.go: T.M: stderrors.As(err, &target)",
		"p.go: T.M: stderrors.Is(err, nil)",
		"p.go: f: pkgerrors.Cause(err)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("uses:\n\t%s\nwant:\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
