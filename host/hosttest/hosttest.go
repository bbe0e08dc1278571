package hosttest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Case is a plugin under test and what it needs to start.
type Case struct {
	// Plugin is the plugin under test; it is loaded with Config.
	Plugin host.Plugin
	Config any
	// Setup, when set, prepares each fresh host's root context before the
	// plugin is loaded: it provides the services the plugin injects and
	// loads the plugins it depends on. What Setup registers (and the
	// goroutines it starts) is the baseline, not residue.
	Setup func(root *host.Context) error
	// HostOptions are passed to host.New (a logger, say).
	HostOptions []host.Option
	// IgnoreGoroutines are added to the goroutine check, for goroutines
	// that are not the plugin's (goleak.IgnoreTopFunction, ...).
	IgnoreGoroutines []goleak.Option
}

// The contract clauses, in the order they are checked. Each is a subtest
// name of [Run] and the Clause of a [ClauseError] from [Check].
const (
	// ClauseLoad: loaded through the root, the plugin becomes Active (its
	// Plugin call returns no error); disposed, it leaves nothing behind.
	ClauseLoad = "load"
	// ClauseRestart: when the provider of a service the plugin injects is
	// replaced, the plugin restarts and is Active again; when the
	// replacement goes away it restarts on the original provider. Skipped
	// for plugins that inject no service.
	ClauseRestart = "restart on provider replacement"
	// ClauseScope: loaded through an agent scope, the plugin becomes
	// Active; disposing the scope disposes the plugin and leaves nothing
	// behind.
	ClauseScope = "load through an agent scope"
	// ClauseDisposePending: loaded where the services it injects are not
	// provided, the plugin is pending (the error matches host.ErrPending);
	// disposing it then succeeds and leaves nothing behind. Skipped for
	// plugins that inject no service.
	ClauseDisposePending = "dispose while pending"
	// ClauseDoubleDispose: disposing the plugin twice succeeds both times,
	// the second doing nothing.
	ClauseDoubleDispose = "double dispose"
	// ClauseDisposeInDispatch: disposing the plugin from a listener while
	// an event is being dispatched neither deadlocks nor fails, and leaves
	// nothing behind.
	ClauseDisposeInDispatch = "dispose during a dispatch"
)

// "Leaves nothing behind", in every clause: once the plugin is disposed,
// the host has the listeners, services and fibers it had before the plugin
// was loaded, the root fiber owns what it owned, and no goroutine started
// since remains.

// ClauseError is one broken clause, as [Check] reports it.
type ClauseError struct {
	Clause string // one of the Clause constants
	Err    error
}

// Error implements error.
func (e *ClauseError) Error() string { return "hosttest: " + e.Clause + ": " + e.Err.Error() }

// Unwrap returns the clause's failure.
func (e *ClauseError) Unwrap() error { return e.Err }

// errSkip marks a clause that does not apply to the plugin.
type errSkip struct{ why string }

func (e errSkip) Error() string { return e.why }

type clause struct {
	name  string
	check func(*env) error
}

var clauses = []clause{
	{ClauseLoad, checkLoad},
	{ClauseRestart, checkRestart},
	{ClauseScope, checkScope},
	{ClauseDisposePending, checkDisposePending},
	{ClauseDoubleDispose, checkDoubleDispose},
	{ClauseDisposeInDispatch, checkDisposeInDispatch},
}

// Run checks every contract clause for c, each in its own subtest named
// after the clause (see the Clause constants); a clause that does not
// apply to the plugin is skipped, saying why.
//
//	func TestConformance(t *testing.T) {
//		hosttest.Run(t, hosttest.Case{Plugin: myplugin.Plugin, Config: myplugin.Config{}})
//	}
func Run(t *testing.T, c Case) {
	t.Helper()
	for _, cl := range clauses {
		t.Run(cl.name, func(t *testing.T) {
			t.Helper()
			err := runClause(c, cl)
			var skip errSkip
			switch {
			case safeerr.AsAny(err, &skip):
				t.Skip(skip.why)
			case err != nil:
				t.Error(err)
			}
		})
	}
}

// Check checks every contract clause for c and returns nil, or the
// failures joined (errors.Join), each a *[ClauseError] naming its clause.
// Clauses that do not apply to the plugin are not failures. Check is for
// callers without a *testing.T, or that assert on the failures.
func Check(c Case) error {
	var errs []error
	for _, cl := range clauses {
		err := runClause(c, cl)
		var skip errSkip
		if err == nil || safeerr.AsAny(err, &skip) {
			continue
		}
		errs = append(errs, &ClauseError{Clause: cl.name, Err: err})
	}
	return errors.Join(errs...)
}

// env is the fresh host one clause runs on.
type env struct {
	c        Case
	h        *host.Host
	root     *host.Context
	name     string // the plugin's fiber name, once loaded
	stats    host.Stats
	effects  []host.EffectInfo
	routines goleak.Option
}

func runClause(c Case, cl clause) (err error) {
	if c.Plugin == nil {
		return errors.New("Case.Plugin is nil")
	}
	e := &env{c: c, h: host.New(c.HostOptions...)}
	defer func() {
		if cerr := e.h.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("closing the host: %w", cerr)
		}
	}()
	e.root = e.h.Root()
	if c.Setup != nil {
		if err := c.Setup(e.root); err != nil {
			return fmt.Errorf("setup: %w", err)
		}
	}
	e.stats = e.h.Stats()
	e.effects = e.root.Fiber().Effects()
	e.routines = goleak.IgnoreCurrent()
	return cl.check(e)
}

// load loads the plugin through c and requires it to be Active.
func (e *env) load(c *host.Context) (*host.Fiber, error) {
	f, err := c.Plugin(e.c.Plugin, e.c.Config)
	if f != nil {
		e.name = f.Name()
	}
	if safeerr.Is(err, host.ErrPending) {
		return f, fmt.Errorf("loading: %w (Case.Setup must provide the services the plugin injects)", err)
	}
	if err != nil {
		return f, fmt.Errorf("loading: %w", err)
	}
	return f, nil
}

// dispose disposes f and requires it to end Disposed without error.
func (e *env) dispose(f *host.Fiber, how string) error {
	if err := f.Dispose(); err != nil {
		return fmt.Errorf("%s: Dispose: %w", how, err)
	}
	if st := f.State(); st != host.Disposed {
		return fmt.Errorf("%s: the plugin is %v after Dispose, want disposed", how, st)
	}
	return nil
}

// residue reports what the plugin left behind, compared with the baseline.
func (e *env) residue() error {
	var errs []error
	if got := e.h.Stats(); !reflect.DeepEqual(got, e.stats) {
		errs = append(errs, fmt.Errorf("plugin %s left registrations behind:\n%s", e.name, diff(e.stats, got)))
	}
	if got := e.root.Fiber().Effects(); !reflect.DeepEqual(got, e.effects) {
		errs = append(errs, fmt.Errorf("plugin %s left effects on the root fiber: %+v (before: %+v)", e.name, got, e.effects))
	}
	if err := goleak.Find(append([]goleak.Option{e.routines}, e.c.IgnoreGoroutines...)...); err != nil {
		errs = append(errs, fmt.Errorf("plugin %s left goroutines behind: %w", e.name, err))
	}
	return errors.Join(errs...)
}

// injects returns the services the plugin requires.
func (e *env) injects() []host.ServiceKey {
	if inj, ok := e.c.Plugin.(host.Injector); ok {
		return inj.Inject()
	}
	return nil
}

// serviceNames returns the names of keys.
func serviceNames(keys []host.ServiceKey) []string {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.Name()
	}
	return names
}

func checkLoad(e *env) error {
	f, err := e.load(e.root)
	if err != nil {
		if f != nil {
			_ = f.Dispose()
		}
		return err
	}
	if err := e.dispose(f, "after loading"); err != nil {
		return err
	}
	return e.residue()
}

func checkRestart(e *env) error {
	keys := e.injects()
	if len(keys) == 0 {
		return errSkip{"the plugin injects no service"}
	}
	f, err := e.load(e.root)
	if err != nil {
		if f != nil {
			_ = f.Dispose()
		}
		return err
	}
	var errs []error
	for _, k := range keys {
		errs = append(errs, e.replace(f, k))
	}
	if err := e.dispose(f, "after the replacements"); err != nil {
		errs = append(errs, err)
	} else {
		errs = append(errs, e.residue())
	}
	return errors.Join(errs...)
}

// replace provides service k again (the same value, from a new provider)
// and withdraws it, checking that f restarts both times.
func (e *env) replace(f *host.Fiber, k host.ServiceKey) error {
	name := k.Name()
	v, ok := k.LookupAny(e.root)
	if !ok {
		return fmt.Errorf("service %q is not provided though the plugin is active", name)
	}
	before := f.Context()
	repl, err := e.root.Plugin(host.Define("hosttest-replacement", nil, func(c *host.Context) error {
		_, err := k.ProvideAny(c, v)
		return err
	}), nil)
	if err != nil {
		return fmt.Errorf("replacing the provider of %q: %w", name, err)
	}
	var errs []error
	if err := restarted(f, before, "when the provider of "+fmt.Sprintf("%q", name)+" was replaced"); err != nil {
		errs = append(errs, err)
	}
	before = f.Context()
	if err := repl.Dispose(); err != nil {
		errs = append(errs, fmt.Errorf("withdrawing the replacement of %q: %w", name, err))
	}
	if err := restarted(f, before, "when the replacement of "+fmt.Sprintf("%q", name)+" was withdrawn"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// restarted checks that f ran again (it has a new context) and is Active.
func restarted(f *host.Fiber, before *host.Context, when string) error {
	if st := f.State(); st != host.Active {
		return fmt.Errorf("the plugin is %v %s, want active (err: %v)", st, when, f.Err())
	}
	if f.Context() == before {
		return fmt.Errorf("the plugin did not restart %s", when)
	}
	return nil
}

func checkScope(e *env) error {
	sc, err := e.root.Scope("hosttest-agent")
	if err != nil {
		return fmt.Errorf("creating the scope: %w", err)
	}
	f, err := e.load(sc)
	if err != nil {
		_ = sc.Fiber().Dispose()
		return fmt.Errorf("through the scope: %w", err)
	}
	if err := sc.Fiber().Dispose(); err != nil {
		return fmt.Errorf("disposing the scope: %w", err)
	}
	if st := f.State(); st != host.Disposed {
		return fmt.Errorf("the plugin is %v after its scope was disposed, want disposed", st)
	}
	return e.residue()
}

func checkDisposePending(e *env) error {
	keys := e.injects()
	if len(keys) == 0 {
		return errSkip{"the plugin injects no service"}
	}
	// An isolated view hides every service the plugin injects.
	f, err := e.root.Isolate(keys...).Plugin(e.c.Plugin, e.c.Config)
	if f != nil {
		e.name = f.Name()
	}
	if !safeerr.Is(err, host.ErrPending) {
		if f != nil {
			_ = f.Dispose()
		}
		return fmt.Errorf("loading without the services %q: got %v, want an error matching host.ErrPending", serviceNames(keys), err)
	}
	if err := e.dispose(f, "while pending"); err != nil {
		return err
	}
	return e.residue()
}

func checkDoubleDispose(e *env) error {
	f, err := e.load(e.root)
	if err != nil {
		if f != nil {
			_ = f.Dispose()
		}
		return err
	}
	if err := e.dispose(f, "first"); err != nil {
		return err
	}
	if err := e.dispose(f, "second"); err != nil {
		return err
	}
	return e.residue()
}

// dispatched is the event the dispatch clause emits while it disposes.
var dispatched = events.NewEvent[struct{}](events.Descriptor{
	Name: "hosttest/dispatch",
	Mode: events.ModeEmit,
	Doc:  "Emitted by hosttest while it disposes the plugin under test from a listener.",
})

func checkDisposeInDispatch(e *env) error {
	f, err := e.load(e.root)
	if err != nil {
		if f != nil {
			_ = f.Dispose()
		}
		return err
	}
	// The baseline gains the clause's own listener until it is removed.
	var derr error
	called := false
	off, err := host.On(e.root, dispatched, func(context.Context, struct{}) error {
		called = true
		derr = f.Dispose()
		return nil
	})
	if err != nil {
		return fmt.Errorf("registering the dispatch listener: %w", err)
	}
	emitErr := host.Emit(context.Background(), e.root.Emitter(), dispatched, struct{}{})
	if err := off(); err != nil {
		return fmt.Errorf("removing the dispatch listener: %w", err)
	}
	switch {
	case emitErr != nil:
		return fmt.Errorf("dispatching: %w", emitErr)
	case !called:
		return errors.New("the dispatch listener was not called")
	case derr != nil:
		return fmt.Errorf("during a dispatch: Dispose: %w", derr)
	}
	if st := f.State(); st != host.Disposed {
		return fmt.Errorf("the plugin is %v after Dispose during a dispatch, want disposed", st)
	}
	return e.residue()
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
