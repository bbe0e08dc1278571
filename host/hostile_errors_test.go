package host_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// cyclicErr's Unwrap returns itself, so errors.As on it never ends. Past
// a number of Unwrap calls no bounded reader makes, it panics instead of
// looping, so an unbounded walk fails the test rather than hanging it.
type cyclicErr struct{ unwraps atomic.Int64 }

func (e *cyclicErr) Error() string { return "cyclic" }
func (e *cyclicErr) Unwrap() error {
	if e.unwraps.Add(1) > 1_000_000 {
		panic("unbounded walk of a cyclic error chain")
	}
	return e
}

// panickyErr's Error method panics.
type panickyErr struct{}

func (panickyErr) Error() string { panic("Error exploded") }

// asPanicErr's As method panics.
type asPanicErr struct{}

func (asPanicErr) Error() string  { return "as-panic" }
func (asPanicErr) As(any) bool    { panic("As exploded") }
func (asPanicErr) Unwrap() error  { return panickyErr{} }
func (asPanicErr) String() string { return "as-panic" }

// hostile are listener errors whose methods hang or panic a reader that
// trusts them.
func hostile() []error { return []error{&cyclicErr{}, panickyErr{}, asPanicErr{}} }

// A listener's error is read under recover with a bounded chain walk: a
// cyclic chain, a panicking Error or As method neither hangs nor panics the
// dispatcher, each failure is logged with the plugin's name, and the
// listeners after it still run (contained) or the error comes back
// (propagated).
func TestG4_HostileListenerErrorsNeverHangOrPanicTheDispatcher(t *testing.T) {
	ctx := context.Background()
	t.Run("emit, contained: the remaining listeners run", func(t *testing.T) {
		h, logs := newHost(t)
		f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("hostile", nil, func(c *host.Context) error {
			for _, err := range hostile() {
				if _, err := host.On(c, evPing, func(context.Context, string) error { return err }); err != nil {
					return err
				}
			}
			return nil
		}), nil))
		ran := false
		must[host.Disposer](t)(host.On(h.Root(), evPing, func(context.Context, string) error { ran = true; return nil }))
		if err := host.Emit(ctx, h.Root().Emitter(), evPing, "x"); err != nil || !ran {
			t.Fatalf("Emit = %v, last listener ran %v", err, ran)
		}
		out := logs.String()
		if n := strings.Count(out, `"plugin":"hostile"`); n != 3 {
			t.Errorf("%d failures logged with the plugin's name, want 3:\n%s", n, out)
		}
		for _, want := range []string{`"error":"cyclic"`, `"error":"an error of type host_test.panickyErr whose Error method panicked: Error exploded"`, `"error":"as-panic"`} {
			if !strings.Contains(out, want) {
				t.Errorf("log lacks %s:\n%s", want, out)
			}
		}
		_ = f.Dispose()
	})
	for _, err := range hostile() {
		t.Run(fmt.Sprintf("emit, propagated: %T", err), func(t *testing.T) {
			h, _ := newHost(t)
			must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(context.Context, string) error { return err }))
			got := host.Emit(ctx, h.Root().Emitter(), evPropagate, "x")
			if got == nil || errors.Unwrap(got) != err {
				t.Fatalf("Emit = %v, want the listener's error wrapped", got)
			}
			if !strings.HasPrefix(got.Error(), "host: listener of test/propagate (plugin root): ") {
				t.Errorf("message %q", got.Error())
			}
		})
	}
	t.Run("parallel, propagated: every listener runs, the errors are joined", func(t *testing.T) {
		h, _ := newHost(t)
		var ran atomic.Int32
		for _, err := range hostile() {
			must[host.Disposer](t)(host.On(h.Root(), evParallel, func(context.Context, string) error { ran.Add(1); return err }))
		}
		got := host.Emit(ctx, h.Root().Emitter(), evParallel, "x")
		joined, ok := got.(interface{ Unwrap() []error })
		if !ok || len(joined.Unwrap()) != 3 || ran.Load() != 3 {
			t.Fatalf("Emit = %v (ran %d), want 3 joined errors", got, ran.Load())
		}
	})
	t.Run("serial query, contained: a later listener answers", func(t *testing.T) {
		h, _ := newHost(t)
		for _, err := range hostile() {
			must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(context.Context, string) (string, bool, error) { return "", false, err }))
		}
		must[host.Disposer](t)(host.OnQuery(h.Root(), evSerial, func(_ context.Context, s string) (string, bool, error) { return s + "!", true, nil }))
		if r, ok, err := host.Query(ctx, h.Root().Emitter(), evSerial, "x"); r != "x!" || !ok || err != nil {
			t.Fatalf("Query = %q %v %v", r, ok, err)
		}
	})
	t.Run("waterfall, contained: the failed listeners are skipped", func(t *testing.T) {
		h, _ := newHost(t)
		for _, err := range hostile() {
			must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfallContain, func(context.Context, string, events.Next[string]) (string, error) { return "", err }))
		}
		base := func(context.Context) (string, error) { return "base", nil }
		if r, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfallContain, "x", base); r != "base" || err != nil {
			t.Fatalf("Waterfall = %q %v", r, err)
		}
	})
	t.Run("waterfall, propagated: the error comes back to the caller", func(t *testing.T) {
		h, _ := newHost(t)
		cyc := &cyclicErr{}
		must[host.Disposer](t)(host.OnWaterfall(h.Root(), evWaterfall, func(context.Context, string, events.Next[string]) (string, error) { return "", cyc }))
		base := func(context.Context) (string, error) { return "base", nil }
		if _, err := host.Waterfall(ctx, h.Root().Emitter(), evWaterfall, "x", base); errors.Unwrap(err) != cyc {
			t.Fatalf("Waterfall error = %v, want the listener's error wrapped", err)
		}
	})
}

// A panic(err) of a hostile error still gets its plugin name: the
// *events.PanicError is found by a bounded walk.
func TestG4_PanicErrorInAHostileChainGetsThePluginName(t *testing.T) {
	h, logs := newHost(t)
	pe := &events.PanicError{Event: "test/ping", Value: "inner"}
	chain := &wrapErr{next: pe}
	_ = must[*host.Fiber](t)(h.Root().Plugin(host.Define("named", nil, func(c *host.Context) error {
		_, err := host.On(c, evPing, func(context.Context, string) error { return chain })
		return err
	}), nil))
	if err := host.Emit(context.Background(), h.Root().Emitter(), evPing, "x"); err != nil {
		t.Fatal(err)
	}
	if pe.Plugin != "named" || !strings.Contains(logs.String(), "plugin named") {
		t.Errorf("PanicError.Plugin = %q; log:\n%s", pe.Plugin, logs.String())
	}
}

type wrapErr struct{ next error }

func (e *wrapErr) Error() string { return "wrapped: " + e.next.Error() }
func (e *wrapErr) Unwrap() error { return e.next }

// An Apply or a disposer failing with an error whose Error method panics
// fails the fiber (or returns from Dispose) like any other error, logged
// with a description instead of the message.
func TestG4_ApplyAndDisposerErrorsWhoseErrorPanicsAreRead(t *testing.T) {
	h, logs := newHost(t)
	f, err := h.Root().Plugin(host.Define("bad-apply", nil, func(*host.Context) error { return panickyErr{} }), nil)
	if err == nil || f == nil || f.State() != host.Failed {
		t.Fatalf("Plugin = %v, %v", f, err)
	}
	d := must[*host.Fiber](t)(h.Root().Plugin(host.Define("bad-disposer", nil, func(c *host.Context) error {
		_, err := c.Track(host.EffectCustom, "x", func() error { return &cyclicErr{} })
		return err
	}), nil))
	if err := d.Dispose(); err == nil {
		t.Error("Dispose = nil, want the disposer's error")
	}
	d2 := must[*host.Fiber](t)(h.Root().Plugin(host.Define("bad-disposer-2", nil, func(c *host.Context) error {
		_, err := c.Track(host.EffectCustom, "y", func() error { return panickyErr{} })
		return err
	}), nil))
	if err := d2.Dispose(); err == nil {
		t.Error("Dispose = nil, want the disposer's error")
	}
	if n := strings.Count(logs.String(), "whose Error method panicked: Error exploded"); n < 2 {
		t.Errorf("the panicking errors were logged %d times, want at least 2:\n%s", n, logs.String())
	}
}
