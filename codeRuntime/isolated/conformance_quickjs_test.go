package isolated

import (
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/quickjs"
)

// quickjsUnsafe lists the hostile cases in-process QuickJS does not end with a required kind. Every
// other case is contained in-process: the VM's memory limit stops allocation, the interrupt reaches
// loops, calls and regular-expression matching, and the runtime's guards refuse the native loops and
// replacements QuickJS does not interrupt.
var quickjsUnsafe = map[string]string{
	// Not a harm: QuickJS's parser checks its stack and compiles an operator chain in linear time
	// (1e5 terms in ~50 ms), so the program succeeds instead of failing; eval is not wrapped (that
	// would turn direct eval into indirect eval).
	"operator chain via eval": "eval'd text is not bounds-checked; QuickJS runs this program to completion (harmlessly)",
}

// quickjsUnsupported lists the language features in-process QuickJS fails loudly.
var quickjsUnsupported = map[string]string{}

func init() {
	registerConformanceCombo(conformanceCombo{
		name: "quickjs/none", engine: "quickjs", isolation: "none",
		newRuntime: func(t *testing.T, cfg coderuntime.Config) coderuntime.Runtime {
			t.Helper()
			q, err := quickjs.NewInProcess(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		unsafe:      quickjsUnsafe,
		unsupported: quickjsUnsupported,
	})
}
