package toolotel_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/dsh-go/dsh/host"
	toolotel "github.com/dsh-go/dsh/plugins/otel"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

var sink tools.Result

// benchRegistry is a registry with one trivial tool, and the otel plugin
// when cfg is not nil.
func benchRegistry(b *testing.B, cfg *toolotel.Config) *tools.Registry {
	b.Helper()
	h := host.New()
	b.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	plugins := []struct {
		p   host.Plugin
		cfg any
	}{{systemprompt.Plugin, nil}, {tools.Plugin, nil}}
	if cfg != nil {
		plugins = append(plugins, struct {
			p   host.Plugin
			cfg any
		}{toolotel.Plugin, *cfg})
	}
	for _, p := range plugins {
		f, err := root.Plugin(p.p, p.cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Err(); err != nil {
			b.Fatal(err)
		}
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := reg.Register(root, tools.Definition{
		Name: "trivial", Description: "Does nothing.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.TextOutput("ok"), nil
		},
	}); err != nil {
		b.Fatal(err)
	}
	return reg
}

// BenchmarkOverhead measures Execute of a trivial tool without the plugin
// and with it, alternately in blocks of one loop (so that the load of a
// shared machine weighs on both alike), and reports the ratio
// with/without of the total times and the median of the blocks' ratios
// (robust to a block preempted by another process). noop: no-op tracer and meter providers (the target is
// ≤ 1.05); sdk: the SDK's, sampling every span into a recorder and
// aggregating every measurement (for information).
func BenchmarkOverhead(b *testing.B) {
	call := tools.Call{ID: "c", Name: "trivial", Arguments: json.RawMessage(`{"x":1}`)}
	ctx := context.Background()
	const block = 64
	run := func(b *testing.B, cfg toolotel.Config) {
		without, with := benchRegistry(b, nil), benchRegistry(b, &cfg)
		var tWithout, tWith time.Duration
		var ratios []float64
		n := 0
		for i := 0; b.Loop(); i++ {
			// Which goes first alternates too.
			first, second := without, with
			if i%2 == 1 {
				first, second = with, without
			}
			t0 := time.Now()
			for range block {
				sink = first.Execute(ctx, call)
			}
			t1 := time.Now()
			for range block {
				sink = second.Execute(ctx, call)
			}
			t2 := time.Now()
			dWithout, dWith := t1.Sub(t0), t2.Sub(t1)
			if i%2 == 1 {
				dWithout, dWith = dWith, dWithout
			}
			tWithout += dWithout
			tWith += dWith
			ratios = append(ratios, float64(dWith)/float64(dWithout))
			n += block
		}
		slices.Sort(ratios)
		b.ReportMetric(float64(tWith)/float64(tWithout), "with/without")
		b.ReportMetric(ratios[len(ratios)/2], "median-with/without")
		b.ReportMetric(float64(tWithout.Nanoseconds())/float64(n), "without-ns/call")
		b.ReportMetric(float64(tWith.Nanoseconds())/float64(n), "with-ns/call")
	}
	b.Run("noop", func(b *testing.B) {
		run(b, toolotel.Config{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()})
	})
	b.Run("sdk", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(dropping{}))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()); _ = mp.Shutdown(context.Background()) })
		run(b, toolotel.Config{TracerProvider: tp, MeterProvider: mp})
	})
}

// dropping is a span processor that sees every span and keeps none (a
// recorder would grow without bound over a benchmark).
type dropping struct{}

func (dropping) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (dropping) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (dropping) Shutdown(context.Context) error                  { return nil }
func (dropping) ForceFlush(context.Context) error                { return nil }
