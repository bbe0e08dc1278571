package hosttest_test

import (
	"context"
	"errors"
	"slices"
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

var (
	clock   = host.NewService[int]("clock")
	goodSvc = host.NewService[int]("good-svc")
	leaked  = host.NewService[int]("leaked")
)

// good injects "clock" and registers one of everything, including a
// goroutine stopped by its cleanup.
func good() host.Plugin {
	return host.Define("good", []host.ServiceKey{clock}, func(c *host.Context) error {
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
		if _, err := goodSvc.Provide(c, 1); err != nil {
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

func provideClock(root *host.Context) error {
	_, err := clock.Provide(root, 1)
	return err
}

// The kit as plugin authors call it: one subtest per clause.
func TestRunGoodPlugin(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: good(), Setup: provideClock})
}

// A plugin that injects nothing: the clauses about injection are skipped.
func TestRunPluginWithoutInjection(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: host.Define("plain", nil, func(c *host.Context) error {
		_, err := host.On(c, evTick, func(context.Context, int) error { return nil })
		return err
	})})
}

// perHost fails every start after the first one on the same host: it
// cannot restart.
func perHost() host.Plugin {
	var mu sync.Mutex
	runs := map[*host.Host]int{}
	return host.Define("no-restart", []host.ServiceKey{clock}, func(c *host.Context) error {
		mu.Lock()
		defer mu.Unlock()
		runs[c.Host()]++
		if runs[c.Host()] > 1 {
			return errors.New("cannot start twice")
		}
		return nil
	})
}

// Check reports each broken clause by name, and only the broken ones.
func TestCheckReportsBrokenClausesByName(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	all := []string{hosttest.ClauseLoad, hosttest.ClauseRestart, hosttest.ClauseScope,
		hosttest.ClauseDisposePending, hosttest.ClauseDoubleDispose, hosttest.ClauseDisposeInDispatch}
	noInjection := []string{hosttest.ClauseLoad, hosttest.ClauseScope, hosttest.ClauseDoubleDispose, hosttest.ClauseDisposeInDispatch}
	tests := []struct {
		name  string
		c     hosttest.Case
		want  []string // the clauses reported broken
		about string   // a substring of every reported failure
	}{
		{"good plugin", hosttest.Case{Plugin: good(), Setup: provideClock}, nil, ""},
		{"missing service stays pending", hosttest.Case{Plugin: good()},
			[]string{hosttest.ClauseLoad, hosttest.ClauseRestart, hosttest.ClauseScope, hosttest.ClauseDoubleDispose, hosttest.ClauseDisposeInDispatch},
			"pending"},
		{"failing apply", hosttest.Case{Plugin: host.Define("bad", nil, func(*host.Context) error { return errors.New("nope") })},
			noInjection, "plugin bad failed: nope"},
		{"cannot restart", hosttest.Case{Plugin: perHost(), Setup: provideClock},
			[]string{hosttest.ClauseRestart}, "failed when the provider of \"clock\" was replaced"},
		{"listener on the root", hosttest.Case{Plugin: host.Define("leaky-listener", nil, func(c *host.Context) error {
			_, err := host.On(c.Host().Root(), evTick, func(context.Context, int) error { return nil })
			return err
		})}, noInjection, "listeners of test/tick"},
		{"service on the root", hosttest.Case{Plugin: host.Define("leaky-service", nil, func(c *host.Context) error {
			_, err := leaked.Provide(c.Host().Root(), 1)
			return err
		})}, noInjection, "services"},
		{"fiber on the root", hosttest.Case{Plugin: host.Define("leaky-fiber", nil, func(c *host.Context) error {
			_, err := c.Host().Root().Scope("orphan")
			return err
		})}, noInjection, "fibers"},
		{"goroutine", hosttest.Case{Plugin: host.Define("leaky-goroutine", nil, func(*host.Context) error {
			go func() { <-release }()
			return nil
		})}, noInjection, "goroutines"},
		{"failing disposer", hosttest.Case{Plugin: host.Define("bad-disposer", []host.ServiceKey{clock}, func(c *host.Context) error {
			_, err := c.Track(host.EffectCustom, "x", func() error { return errors.New("cannot undo") })
			return err
		}), Setup: provideClock}, []string{hosttest.ClauseLoad, hosttest.ClauseRestart, hosttest.ClauseScope, hosttest.ClauseDoubleDispose, hosttest.ClauseDisposeInDispatch}, "cannot undo"},
		{"failing setup", hosttest.Case{Plugin: good(), Setup: func(*host.Context) error { return errors.New("no clock today") }},
			all, "setup: no clock today"},
		{"no plugin", hosttest.Case{}, all, "Case.Plugin is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := hosttest.Check(tt.c)
			var got []string
			for _, e := range unjoin(err) {
				var ce *hosttest.ClauseError
				if !errors.As(e, &ce) {
					t.Fatalf("failure %v is not a *ClauseError", e)
				}
				got = append(got, ce.Clause)
				if !strings.Contains(e.Error(), tt.about) || !strings.HasPrefix(e.Error(), "hosttest: "+ce.Clause+": ") {
					t.Errorf("failure %q does not name its clause or mention %q", e, tt.about)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("broken clauses %q, want %q; failures:\n%v", got, tt.want, err)
			}
		})
	}
}

func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
