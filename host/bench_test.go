package host_test

import (
	"context"
	"fmt"
	"testing"

	EventBus "github.com/asaskevich/EventBus"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/benchratio"
)

var benchSizes = []int{1, 4, 16}

var sink int

// The same body everywhere: add the payload's length to a counter.

var benchSvc = host.NewService[int]("bench-svc")

func BenchmarkEmit(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("listeners=%d", n), func(b *testing.B) {
			h := host.New()
			defer h.Close()
			for range n {
				if _, err := host.On(h.Root(), evPing, func(_ context.Context, p string) error { sink += len(p); return nil }); err != nil {
					b.Fatal(err)
				}
			}
			ctx, em := context.Background(), h.Root().Emitter()
			b.ReportAllocs()
			for b.Loop() {
				_ = host.Emit(ctx, em, evPing, "payload")
			}
		})
	}
}

func BenchmarkPlainLoop(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			fns := make([]func(context.Context, string) error, n)
			for i := range fns {
				fns[i] = func(_ context.Context, p string) error { sink += len(p); return nil }
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				for _, f := range fns {
					_ = f(ctx, "payload")
				}
			}
		})
	}
}

func BenchmarkEventBusPublish(b *testing.B) {
	for _, n := range benchSizes {
		b.Run(fmt.Sprintf("%d", n), func(b *testing.B) {
			bus := EventBus.New()
			for range n {
				if err := bus.Subscribe("test/ping", func(p string) { sink += len(p) }); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				bus.Publish("test/ping", "payload")
			}
		})
	}
}

func BenchmarkWaterfall4(b *testing.B) {
	h := host.New()
	defer h.Close()
	for range 4 {
		if _, err := host.OnWaterfall(h.Root(), evWaterfall, func(ctx context.Context, _ string, next events.Next[string]) (string, error) {
			return next(ctx)
		}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, em := context.Background(), h.Root().Emitter()
	base := func(context.Context) (string, error) { return "base", nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = host.Waterfall(ctx, em, evWaterfall, "payload", base)
	}
}

func BenchmarkPluginLoadDispose(b *testing.B) {
	h := host.New()
	defer h.Close()
	p := host.Define("bench", nil, func(c *host.Context) error {
		if _, err := host.On(c, evPing, func(context.Context, string) error { return nil }); err != nil {
			return err
		}
		_, err := benchSvc.Provide(c, 1)
		return err
	})
	b.ReportAllocs()
	for b.Loop() {
		f, err := h.Root().Plugin(p, nil)
		if err != nil {
			b.Fatal(err)
		}
		if err := f.Dispose(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWaterfall4Contain(b *testing.B) {
	h := host.New()
	defer h.Close()
	for range 4 {
		if _, err := host.OnWaterfall(h.Root(), evWaterfallContain, func(ctx context.Context, _ string, next events.Next[string]) (string, error) {
			return next(ctx)
		}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, em := context.Background(), h.Root().Emitter()
	base := func(context.Context) (string, error) { return "base", nil }
	b.ReportAllocs()
	for b.Loop() {
		_, _ = host.Waterfall(ctx, em, evWaterfallContain, "payload", base)
	}
}

func BenchmarkQuery4(b *testing.B) {
	h := host.New()
	defer h.Close()
	for i := range 4 {
		if _, err := host.OnQuery(h.Root(), evSerial, func(_ context.Context, p string) (string, bool, error) {
			return p, i == 3, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	ctx, em := context.Background(), h.Root().Emitter()
	b.ReportAllocs()
	for b.Loop() {
		_, _, _ = host.Query(ctx, em, evSerial, "payload")
	}
}

// BenchmarkServiceGet reads a provided service through its key, the way a
// plugin reads the registry at each call.
func BenchmarkServiceGet(b *testing.B) {
	h := host.New()
	defer h.Close()
	if _, err := benchSvc.Provide(h.Root(), 1); err != nil {
		b.Fatal(err)
	}
	root := h.Root()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := benchSvc.Get(root); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEmitVsLoop: an emit to one listener against calling the same
// function in a plain loop, interleaved (goal: emit/loop ≤ 5).
func BenchmarkEmitVsLoop(b *testing.B) {
	h := host.New()
	defer h.Close()
	if _, err := host.On(h.Root(), evPing, func(_ context.Context, p string) error { sink += len(p); return nil }); err != nil {
		b.Fatal(err)
	}
	fns := []func(context.Context, string) error{func(_ context.Context, p string) error { sink += len(p); return nil }}
	ctx, em := context.Background(), h.Root().Emitter()
	benchratio.Compare(b, "emit/loop", 1000,
		func() { _ = host.Emit(ctx, em, evPing, "payload") },
		func() {
			for _, f := range fns {
				_ = f(ctx, "payload")
			}
		})
}
