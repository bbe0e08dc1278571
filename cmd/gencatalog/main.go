package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

func main() {
	// It loads the isolated code-runtime plugin: a worker process of it serves its run and exits here.
	isolated.ServeIfWorker()
	root := flag.String("root", ".", "module root (the directory holding go.mod)")
	check := flag.Bool("check", false, "compare instead of writing; exit 1 when a file is stale")
	flag.Parse()
	if err := run(*root, *check); err != nil {
		fmt.Fprintln(os.Stderr, "gencatalog:", err)
		os.Exit(1)
	}
}

func run(root string, check bool) error {
	abs, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(abs, "go.mod")); err != nil {
		return fmt.Errorf("-root %s: no go.mod there: %w", root, err)
	}
	files, err := Generate(abs)
	if err != nil {
		return err
	}
	var stale []string
	for _, f := range files {
		path := filepath.Join(abs, filepath.FromSlash(f.Path))
		old, err := os.ReadFile(path)
		if err == nil && bytes.Equal(old, f.Content) {
			continue
		}
		if check {
			stale = append(stale, f.Path)
			continue
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, f.Content, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", f.Path)
	}
	if len(stale) > 0 {
		for _, s := range stale {
			fmt.Fprintf(os.Stderr, "gencatalog: %s is stale\n", s)
		}
		return fmt.Errorf("%d generated file(s) are stale: run go generate ./... and commit", len(stale))
	}
	return nil
}
