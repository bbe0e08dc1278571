package coderuntime

import "testing"

// The isolated combinations: each program runs in a worker process, so they must contain every
// hostile case (no unsafe entries); their language support is their engine's.
func init() {
	for _, c := range []struct {
		engine      string
		unsupported map[string]string
	}{
		{EngineGoja, gojaUnsupported},
		{EngineQuickJS, quickjsUnsupported},
	} {
		registerConformanceCombo(conformanceCombo{
			name: c.engine + "/process", engine: c.engine, isolation: IsolationProcess,
			newRuntime: func(t *testing.T, cfg Config) Runtime {
				t.Helper()
				cfg.Engine = c.engine
				cfg.Isolation = IsolationProcess
				cfg.PoolSize = 2 // the next case's worker starts while a case runs
				cfg.MaxMemoryBytes = 2 * conformanceMemoryCap
				iso, err := NewIsolated(cfg)
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
