package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	os.Exit(m.Run())
}

// TestCheckNamesStaleFiles: -check writes nothing and fails naming each
// stale file; after a write, -check passes; an edit makes that file stale.
func TestCheckNamesStaleFiles(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(root, true)
	if err == nil || !strings.Contains(err.Error(), "3 generated file(s) are stale") {
		t.Fatalf("check on an empty root: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "docs")); !os.IsNotExist(err) {
		t.Fatal("-check wrote files")
	}
	if err := run(root, false); err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); err != nil {
		t.Fatalf("check right after generating: %v", err)
	}
	p := filepath.Join(root, "docs", "tool-catalog.md")
	if err := os.WriteFile(p, []byte("edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(root, true); err == nil || !strings.Contains(err.Error(), "1 generated file(s)") {
		t.Fatalf("check after a hand edit: %v", err)
	}
}

// TestRepositoryDocsAreFresh is the same check CI runs, on this checkout.
func TestRepositoryDocsAreFresh(t *testing.T) {
	if err := run("../..", true); err != nil {
		t.Fatalf("%v (run go generate ./... and commit)", err)
	}
}

func TestGeneratedContent(t *testing.T) {
	files, err := Generate(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]string{}
	for _, f := range files {
		byPath[f.Path] = string(f.Content)
	}
	for path, wants := range map[string][]string{
		"docs/cordis-catalog/events.md":   {"`internal/fiber`", "`tools/pre-execute`", "`tools/result`", "`system-prompt/assemble`"},
		"docs/tool-catalog.md":            {"### bash", "### read", "### write", "### edit", "### run_code"},
		"docs/tool-execution-pipeline.md": {"flowchart TD", "pre_execute[[\"tools/pre-execute\"]]", "guards -.->"},
	} {
		for _, w := range wants {
			if !strings.Contains(byPath[path], w) {
				t.Errorf("%s lacks %q", path, w)
			}
		}
	}
}
