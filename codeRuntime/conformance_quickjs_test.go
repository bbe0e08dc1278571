package coderuntime

import "testing"

// quickjsUnsafe lists the hostile classes in-process QuickJS cannot contain.
var quickjsUnsafe = map[string]string{}

// quickjsUnsupported lists the language features in-process QuickJS fails loudly.
var quickjsUnsupported = map[string]string{}

func init() {
	registerConformanceCombo(conformanceCombo{
		name: "quickjs/none", engine: "quickjs", isolation: "none",
		newRuntime: func(t *testing.T, cfg Config) Runtime {
			t.Helper()
			q, err := NewQuickJS(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		unsafe:      quickjsUnsafe,
		unsupported: quickjsUnsupported,
	})
}
