package isolated

import (
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// The isolated combinations: each program runs in a worker process, so they must contain every
// hostile case (no unsafe entries); their language support is their engine's.
func init() {
	for _, c := range []struct {
		engine      string
		unsupported map[string]string
	}{
		{coderuntime.EngineGoja, gojaUnsupported},
		{coderuntime.EngineQuickJS, quickjsUnsupported},
	} {
		registerConformanceCombo(conformanceCombo{
			name: c.engine + "/process", engine: c.engine, isolation: coderuntime.IsolationProcess,
			newRuntime: func(t *testing.T, cfg coderuntime.Config) coderuntime.Runtime {
				t.Helper()
				cfg.Engine = c.engine
				cfg.Isolation = coderuntime.IsolationProcess
				cfg.PoolSize = 2 // the next case's worker starts while a case runs
				cfg.MaxMemoryBytes = 2 * conformanceMemoryCap
				iso, err := New(cfg)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = iso.Close() })
				return iso
			},
			unsupported: c.unsupported,
		})
	}
}
