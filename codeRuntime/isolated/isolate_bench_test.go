package isolated

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// benchVariant is one engine × isolation combination under the benchmarks.
type benchVariant struct {
	name string
	rt   coderuntime.Runtime
	iso  *Runtime // nil in process
}

func benchVariants(b *testing.B) []benchVariant {
	var vs []benchVariant
	for _, engine := range []string{coderuntime.EngineGoja, coderuntime.EngineQuickJS} {
		for _, isolation := range []string{coderuntime.IsolationNone, coderuntime.IsolationProcess} {
			rt, err := NewFromConfig(coderuntime.Config{Engine: engine, Isolation: isolation, PoolSize: 2})
			if err != nil {
				b.Fatal(err)
			}
			v := benchVariant{name: engine + "/" + isolation, rt: rt}
			if iso, ok := rt.(*Runtime); ok {
				v.iso = iso
				b.Cleanup(func() { _ = iso.Close() })
			}
			vs = append(vs, v)
		}
	}
	return vs
}

// waitWarm blocks until iso's pool is full and no worker is starting (a warm, quiet pool).
func waitWarm(iso *Runtime) {
	for {
		iso.mu.Lock()
		iso.fillLocked()
		full, changed := len(iso.idle) >= iso.cfg.PoolSize && iso.starting == 0, iso.changed
		iso.mu.Unlock()
		if full {
			return
		}
		<-changed
	}
}

// BenchmarkIsolation measures Runtime.Run per engine × isolation, the variants interleaved in
// every iteration (the machine is noisy), isolated runs with a warm pool (waiting for a worker is
// not timed). Metrics: <variant>-µs per run.
func BenchmarkIsolation(b *testing.B) {
	echo := func(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }
	cases := []struct {
		name string
		p    coderuntime.Program
		want string
	}{
		{"empty", coderuntime.Program{Source: ""}, ""},
		{"1000 sequential calls", coderuntime.Program{Source: "let s = 0\nfor (let i = 0; i < 1000; i++) s += (await tools.echo({ n: i })).n\nreturn s",
			Bindings: map[string]coderuntime.Binding{"echo": echo}}, "499500"},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			vs := benchVariants(b)
			total := make([]time.Duration, len(vs))
			ctx := context.Background()
			for i := 0; i < b.N; i++ {
				for j, v := range vs {
					if v.iso != nil {
						b.StopTimer()
						waitWarm(v.iso)
						b.StartTimer()
					}
					t0 := time.Now()
					res, err := v.rt.Run(ctx, c.p)
					total[j] += time.Since(t0)
					if err != nil {
						b.Fatalf("%s: %v", v.name, err)
					}
					if string(res.Value) != c.want {
						b.Fatalf("%s: %s", v.name, res.Value)
					}
				}
			}
			for j, v := range vs {
				b.ReportMetric(float64(total[j].Microseconds())/float64(b.N), v.name+"-µs")
			}
		})
	}
}

// TestIsolatedMemoryBombHostRSS: while a worker runs a memory bomb to its cap, the host's own
// resident memory stays within 50 MB of where it was (the bomb's memory is the worker's).
func TestIsolatedMemoryBombHostRSS(t *testing.T) {
	if !procSampling {
		t.Skip("no /proc on this platform")
	}
	cfg := isoConfig()
	cfg.MaxMemoryBytes = 128 << 20
	// Memory must decide, however slow the machine (or the race detector) makes the growth.
	cfg.Timeout, cfg.CPUBudget = time.Hour, time.Hour
	iso := newIsolatedT(t, cfg)
	healthy(t, iso) // pool and runtime warmed up: later growth is the run's
	base, _, err := procUsage(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		max := base
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				peak <- max
				return
			case <-tick.C:
				if rss, _, err := procUsage(os.Getpid()); err == nil && rss > max {
					max = rss
				}
			}
		}
	}()
	_, err = iso.Run(context.Background(), coderuntime.Program{Source: "const a = []; for (let i = 0; ; i++) a.push('x'.repeat(1 << 16) + i)"})
	close(done)
	p := <-peak
	wantFailure(t, err, coderuntime.KindLimit, nil)
	t.Logf("host RSS %d MB before, peak %d MB while the worker grew to its %d MB cap", base>>20, p>>20, cfg.MaxMemoryBytes>>20)
	if p-base > 50<<20 {
		t.Errorf("host RSS grew by %d MB during the run", (p-base)>>20)
	}
}
