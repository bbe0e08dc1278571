package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// shippedDirs hold the shipped packages: the host and every plugin.
var shippedDirs = []string{"host", "plugins", "codeRuntime"}

// notShipped are directories under shippedDirs whose events are test
// machinery, not a plugin's.
var notShipped = []string{"host/hosttest"}

// TestCatalogListsEveryShippedEvent reads the source of every shipped
// package for event descriptors (events.NewEvent, NewQuery, NewWaterfall
// with a literal Name) and fails when the generated event catalog lacks
// one: an event a plugin declares only when it runs (mcp-client/status)
// must still be listed.
func TestCatalogListsEveryShippedEvent(t *testing.T) {
	files, err := Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var catalogMD string
	for _, f := range files {
		if f.Path == "docs/cordis-catalog/events.md" {
			catalogMD = string(f.Content)
		}
	}
	names := shippedEventNames(t, "../..")
	if len(names) < 7 {
		t.Fatalf("found only %v: the scan is broken", names)
	}
	for _, n := range names {
		if !strings.Contains(catalogMD, "### `"+n+"`") {
			t.Errorf("the event catalog lacks %q (declare it in gencatalog's boot or declaredOnly)", n)
		}
	}
}

func shippedEventNames(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	fset := token.NewFileSet()
	for _, dir := range shippedDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, path)
			if d.IsDir() {
				for _, n := range notShipped {
					if filepath.ToSlash(rel) == n || d.Name() == "testdata" {
						return filepath.SkipDir
					}
				}
				return nil
			}
			if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || !isEventConstructor(call.Fun) || len(call.Args) != 1 {
					return true
				}
				lit, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					return true
				}
				for _, e := range lit.Elts {
					kv, ok := e.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Name" {
						if bl, ok := kv.Value.(*ast.BasicLit); ok && bl.Kind == token.STRING {
							if s, err := strconv.Unquote(bl.Value); err == nil {
								names = append(names, s)
							}
						}
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// isEventConstructor reports whether fun is events.NewEvent[...],
// events.NewQuery[...] or events.NewWaterfall[...].
func isEventConstructor(fun ast.Expr) bool {
	switch x := fun.(type) {
	case *ast.IndexExpr:
		fun = x.X
	case *ast.IndexListExpr:
		fun = x.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "events" && strings.HasPrefix(sel.Sel.Name, "New")
}
