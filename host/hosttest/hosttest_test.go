package hosttest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/hosttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var evTick = events.NewEvent[int](events.Descriptor{Name: "test/tick", Mode: events.ModeEmit, Doc: "A tick."})

// fakeT captures failures instead of failing the real test.
type fakeT struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}
func (f *fakeT) Error(args ...any) { f.Errorf("%s", fmt.Sprint(args...)) }
func (f *fakeT) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	panic("fakeT.Fatalf")
}

func good() host.Plugin {
	return host.Define("good", []string{"clock"}, func(c *host.Context) error {
		if _, err := host.On(c, evTick, func(context.Context, int) error { return nil }); err != nil {
			return err
		}
		sc, err := c.Scope("agent")
		if err != nil {
			return err
		}
		if _, err := host.On(sc, evTick, func(context.Context, int) error { return nil }); err != nil {
			return err
		}
		if _, err := c.Provide("good-svc", 1); err != nil {
			return err
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		_, err = c.Effect("worker", func() (func() error, error) {
			go func() { defer close(done); <-stop }()
			return func() error { close(stop); <-done; return nil }, nil
		})
		return err
	})
}

func TestConformance(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	tests := []struct {
		name string
		p    host.Plugin
		opts []hosttest.Option
		want string // substring of the reported failure; "" = pass
	}{
		{"good plugin", good(), []hosttest.Option{hosttest.WithService("clock", 1)}, ""},
		{"missing service stays pending", good(), nil, "pending"},
		{"failing apply", host.Define("bad", nil, func(*host.Context) error { return errors.New("nope") }), nil, "failed"},
		{"listener on the root", host.Define("leaky-listener", nil, func(c *host.Context) error {
			_, err := host.On(c.Host().Root(), evTick, func(context.Context, int) error { return nil })
			return err
		}), nil, "listeners of test/tick"},
		{"service on the root", host.Define("leaky-service", nil, func(c *host.Context) error {
			_, err := c.Host().Root().Provide("leaked", 1)
			return err
		}), nil, "services"},
		{"fiber on the root", host.Define("leaky-fiber", nil, func(c *host.Context) error {
			_, err := c.Host().Root().Scope("orphan")
			return err
		}), nil, "fibers"},
		{"goroutine", host.Define("leaky-goroutine", nil, func(*host.Context) error {
			go func() { <-release }()
			return nil
		}), nil, "goroutines"},
		{"failing disposer", host.Define("bad-disposer", nil, func(c *host.Context) error {
			_, err := c.Track(host.EffectCustom, "x", func() error { return errors.New("cannot undo") })
			return err
		}), nil, "cannot undo"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ft := &fakeT{TB: t}
			hosttest.Conformance(ft, tt.p, nil, tt.opts...)
			all := strings.Join(ft.errs, "\n")
			if tt.want == "" {
				if len(ft.errs) != 0 {
					t.Fatalf("good plugin reported: %s", all)
				}
				return
			}
			if !strings.Contains(all, tt.want) {
				t.Fatalf("failures %q do not mention %q", all, tt.want)
			}
		})
	}
}

// The real thing, as plugin authors call it.
func TestConformanceGoodPlugin(t *testing.T) {
	hosttest.Conformance(t, good(), nil, hosttest.WithService("clock", 1))
}
