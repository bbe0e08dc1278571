package isolated

import (
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// gojaUnsafe lists the hostile classes in-process goja cannot contain: goja has no memory limit and
// checks its interrupt only between instructions, so a built-in that allocates or loops in one native
// call is beyond every budget unless a guard refuses it beforehand. In-process goja is therefore for
// trusted code; model-written code runs isolated (the isolated combinations must pass these cases).
var gojaUnsafe = map[string]string{
	"concat pre-size":                  "String.prototype.concat pre-sizes its buffer natively",
	"join above 2^20 elements":         "join's length guard stops summing above 2^20 elements",
	"replaceAll":                       "replaceAll builds its result natively",
	"Object.entries of a 32 Mi string": "Object.entries builds every pair natively",
	"concat of many big arrays":        "Array.prototype.concat copies natively",
	"flat":                             "Array.prototype.flat copies natively",
	"Array.from of a big string":       "Array.from of a string builds the array natively",
	"JSON.parse of 100 MB":             "JSON.parse builds the value natively",
	"regexp over 1 Mi characters":      "a regexp match runs natively; regexp2's match timeout is process-wide and reads as no match",
}

// gojaUnsupported lists the language features in-process goja fails loudly.
var gojaUnsupported = map[string]string{
	"BigInt arithmetic": "BigInt is refused: its operators allocate without bound in one native step",
	"Unicode property escape that works or fails loudly": "goja's regexp engines do not implement Unicode property escapes",
	"WeakRef keeps its target during the job":            "goja has no WeakRef (a ReferenceError)",
}

func init() {
	registerConformanceCombo(conformanceCombo{
		name: "goja/none", engine: "goja", isolation: "none",
		newRuntime: func(t *testing.T, cfg coderuntime.Config) coderuntime.Runtime {
			t.Helper()
			g, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return g
		},
		unsafe:      gojaUnsafe,
		unsupported: gojaUnsupported,
	})
}
