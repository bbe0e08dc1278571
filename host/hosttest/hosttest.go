package hosttest

import (
	"fmt"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/host"
)

// Option configures [Conformance].
type Option func(*options)

type options struct {
	services []service
	hostOpts []host.Option
	setup    []func(*host.Context) error
	leak     []goleak.Option
}

type service struct {
	name string
	v    any
}

// WithService provides a service the plugin requires (or reads) before it
// is loaded. Provided services are part of the baseline, not residue.
func WithService(name string, v any) Option {
	return func(c *options) { c.services = append(c.services, service{name, v}) }
}

// WithHostOptions passes options to host.New (a logger, say).
func WithHostOptions(opts ...host.Option) Option {
	return func(c *options) { c.hostOpts = append(c.hostOpts, opts...) }
}

// WithSetup runs f on the root context before the baseline is taken, for
// anything WithService cannot express (loading a plugin the one under test
// depends on, say).
func WithSetup(f func(root *host.Context) error) Option {
	return func(c *options) { c.setup = append(c.setup, f) }
}

// WithGoleakOptions adds goleak options (IgnoreTopFunction, ...) to the
// goroutine check.
func WithGoleakOptions(opts ...goleak.Option) Option {
	return func(c *options) { c.leak = append(c.leak, opts...) }
}

// Conformance loads p with config into a fresh host and reports through t
// (with Errorf, so every problem is reported) when p does not reach Active,
// when disposing it fails, or when it leaves listeners, services, fibers,
// effects on the root, or goroutines behind.
func Conformance(t testing.TB, p host.Plugin, config any, opts ...Option) {
	t.Helper()
	var cfg options
	for _, o := range opts {
		o(&cfg)
	}
	ignore := goleak.IgnoreCurrent()
	h := host.New(cfg.hostOpts...)
	defer h.Close()
	root := h.Root()
	for _, s := range cfg.services {
		if _, err := root.Provide(s.name, s.v); err != nil {
			t.Errorf("hosttest: providing %q: %v", s.name, err)
			return
		}
	}
	for _, f := range cfg.setup {
		if err := f(root); err != nil {
			t.Errorf("hosttest: setup: %v", err)
			return
		}
	}
	base := h.Stats()
	baseEffects := root.Fiber().Effects()

	f, err := root.Plugin(p, config)
	if err != nil {
		t.Errorf("hosttest: loading: %v", err)
		return
	}
	name := f.Name()
	if st := f.State(); st != host.Active {
		t.Errorf("hosttest: plugin %s is %v after loading, want active (err: %v; a pending plugin needs a WithService)", name, st, f.Err())
	}
	if err := f.Dispose(); err != nil {
		t.Errorf("hosttest: disposing plugin %s: %v", name, err)
	}
	if st := f.State(); st != host.Disposed {
		t.Errorf("hosttest: plugin %s is %v after Dispose, want disposed", name, st)
	}
	if got := h.Stats(); !reflect.DeepEqual(got, base) {
		t.Errorf("hosttest: plugin %s left registrations behind:\n%s", name, diff(base, got))
	}
	if got := root.Fiber().Effects(); !reflect.DeepEqual(got, baseEffects) {
		t.Errorf("hosttest: plugin %s left effects on the root fiber: %+v (before: %+v)", name, got, baseEffects)
	}
	if err := goleak.Find(append([]goleak.Option{ignore}, cfg.leak...)...); err != nil {
		t.Errorf("hosttest: plugin %s left goroutines behind: %v", name, err)
	}
}

func diff(before, after host.Stats) string {
	s := ""
	for ev, n := range after.Listeners {
		if before.Listeners[ev] != n {
			s += fmt.Sprintf("  listeners of %s: %d, before: %d\n", ev, n, before.Listeners[ev])
		}
	}
	for ev, n := range before.Listeners {
		if _, ok := after.Listeners[ev]; !ok {
			s += fmt.Sprintf("  listeners of %s: 0, before: %d\n", ev, n)
		}
	}
	if !reflect.DeepEqual(before.Services, after.Services) {
		s += fmt.Sprintf("  services: %v, before: %v\n", after.Services, before.Services)
	}
	if before.Fibers != after.Fibers {
		s += fmt.Sprintf("  fibers: %d, before: %d\n", after.Fibers, before.Fibers)
	}
	return s
}
