package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoCodeModeBuildLinksNoEngine: dsh built with -tags dsh_nocodemode links no JavaScript engine.
func TestNoCodeModeBuildLinksNoEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "-tags", "dsh_nocodemode", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, m := range []string{"github.com/dop251/goja", "modernc.org/quickjs", "github.com/evanw/esbuild", "github.com/dsh-go/dsh/codeRuntime/"} {
			if strings.HasPrefix(pkg, m) {
				t.Errorf("dsh -tags dsh_nocodemode links %s", pkg)
			}
		}
	}
}
