package tools_test

import (
	"os/exec"
	"strings"
	"testing"
)

// engineModules are the modules of the code runtime's JavaScript engines and their transform.
var engineModules = []string{"github.com/dop251/goja", "modernc.org/quickjs", "modernc.org/libquickjs", "github.com/evanw/esbuild"}

// TestRegistryAndPolicyLinkNoEngine: the registry and the policy plugins link no JavaScript engine
// (Code Mode's runtime is chosen by the program that imports codeRuntime/isolated, goja or
// quickjs). Before the split, importing plugins/tools linked goja, esbuild and QuickJS.
func TestRegistryAndPolicyLinkNoEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "../tools", "../permissions", "../hooks").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, m := range engineModules {
			if pkg == m || strings.HasPrefix(pkg, m+"/") {
				t.Errorf("plugins/tools, permissions or hooks links %s (module %s)", pkg, m)
			}
		}
	}
}
