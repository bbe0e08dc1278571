package host_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// Clocker is an interface-typed service, like tools.Approver.
type Clocker interface{ Now() string }

type fixedClock string

func (c fixedClock) Now() string { return string(c) }

var svcClock = host.NewService[Clocker]("clock")

// keyInjector requires services through its own Inject method.
type keyInjector struct {
	keys []host.ServiceKey
	seen *[]string
}

func (p keyInjector) Name() string                { return "key-injector" }
func (p keyInjector) Inject() []host.ServiceKey   { return p.keys }
func (p keyInjector) Apply(c *host.Context) error { return p.apply(c) }

func (p keyInjector) apply(c *host.Context) error {
	clock, err := svcClock.Get(c)
	if err != nil {
		return err
	}
	n, err := svcDB.Get(c)
	if err != nil {
		return err
	}
	*p.seen = append(*p.seen, fmt.Sprint(clock.Now(), " ", n))
	return nil
}

var _ host.Injector = keyInjector{}

func TestH6_ServiceKeysProvideGetLookupAndInject(t *testing.T) {
	h, _ := newHost(t)
	root := h.Root()
	var seen []string
	p := keyInjector{keys: []host.ServiceKey{svcClock, svcDB}, seen: &seen}

	f, err := root.Plugin(p, nil)
	var pe *host.PendingError
	if !errors.As(err, &pe) || !slices.Equal(pe.Missing, []string{"clock", "db"}) {
		t.Fatalf("Plugin = %v, want pending on clock and db", err)
	}
	offClock := must[host.Disposer](t)(svcClock.Provide(root, fixedClock("12:00")))
	if f.State() != host.Pending {
		t.Fatalf("state %v with db missing", f.State())
	}
	must[host.Disposer](t)(svcDB.Provide(root, 7))
	if f.State() != host.Active || !slices.Equal(seen, []string{"12:00 7"}) {
		t.Fatalf("state %v seen %v", f.State(), seen)
	}

	// Reads come back typed: no assertion at the call site.
	var clock Clocker = must[Clocker](t)(svcClock.Get(root))
	if clock.Now() != "12:00" {
		t.Errorf("Get = %v", clock.Now())
	}
	if n, ok := svcDB.Lookup(root); !ok || n != 7 {
		t.Errorf("Lookup = %v %v", n, ok)
	}
	if v, ok := svcDB.LookupAny(root); !ok || v != 7 {
		t.Errorf("LookupAny = %v %v", v, ok)
	}

	// Replacing through the key restarts the injector; so does ProvideAny.
	offNew := must[host.Disposer](t)(svcClock.Provide(root, fixedClock("13:00")))
	offAny := must[host.Disposer](t)(svcClock.ProvideAny(root, fixedClock("14:00")))
	if want := []string{"12:00 7", "13:00 7", "14:00 7"}; !slices.Equal(seen, want) {
		t.Errorf("seen %v, want %v", seen, want)
	}
	for _, off := range []host.Disposer{offAny, offNew, offClock} {
		if err := off(); err != nil {
			t.Fatal(err)
		}
	}
	if f.State() != host.Pending {
		t.Errorf("state %v after the clock went away", f.State())
	}
	if names := h.Stats().Services; !slices.Equal(names, []string{"db"}) {
		t.Errorf("services = %v (names are what Stats shows)", names)
	}
}

// An unprovided service is a clear error: it names the service and who
// read it, and matches host.ErrNoService.
func TestH7_GetOfAnUnprovidedServiceSaysWhatAndWho(t *testing.T) {
	h, _ := newHost(t)
	if _, err := svcClock.Get(h.Root()); !errors.Is(err, host.ErrNoService) ||
		err.Error() != `host: service "clock", read by root: service not provided` {
		t.Errorf("Get from the root = %v", err)
	}
	var got error
	_, err := h.Root().Plugin(host.Define("reader", nil, func(c *host.Context) error {
		_, got = svcClock.Get(c)
		return nil
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(got, host.ErrNoService) || !strings.Contains(got.Error(), `service "clock", read by reader`) {
		t.Errorf("Get from a plugin = %v", got)
	}
	if v, ok := svcClock.Lookup(h.Root()); ok || v != nil {
		t.Errorf("Lookup = %v %v", v, ok)
	}
}

// The Go type is part of the key, so Provide only takes a T and Get only
// returns one (a wrong type does not compile). The one untyped entrance,
// ProvideAny, checks the type; a nil interface value is refused.
func TestServiceKeyRefusesWrongTypesAndNil(t *testing.T) {
	h, _ := newHost(t)
	before := h.Stats()
	if _, err := svcClock.ProvideAny(h.Root(), "12:00"); err == nil ||
		err.Error() != `host: providing service "clock" (host_test.Clocker): the value is a string, not a host_test.Clocker` {
		t.Errorf("ProvideAny(string) = %v", err)
	}
	if _, err := svcClock.Provide(h.Root(), nil); err == nil || !strings.Contains(err.Error(), `service "clock": the value is nil`) {
		t.Errorf("Provide(nil) = %v", err)
	}
	if got := h.Stats(); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused provision left %+v", got)
	}
	if got := fmt.Sprint(svcClock); got != `service "clock" (host_test.Clocker)` {
		t.Errorf("String = %q", got)
	}
}

func TestNewServiceRefusesInvalidNames(t *testing.T) {
	for _, name := range []string{"", "Clock", "a//b", "/x", "x/", strings.Repeat("a", host.MaxServiceNameLen+1)} {
		t.Run(fmt.Sprintf("%.20q", name), func(t *testing.T) {
			defer func() {
				v := recover()
				msg, _ := v.(string)
				if !strings.HasPrefix(msg, fmt.Sprintf("host: declaring service %q: host: invalid service name", name)) {
					t.Errorf("panic = %v", v)
				}
			}()
			host.NewService[int](name)
		})
	}
}

// The zero Service names nothing: every method refuses it, and a plugin
// injecting it (or a nil key) does not load.
func TestZeroAndNilServiceKeysAreRefused(t *testing.T) {
	h, _ := newHost(t)
	var zero host.Service[int]
	if _, err := zero.Provide(h.Root(), 1); err == nil || !strings.Contains(err.Error(), "the zero Service[int] names no service") {
		t.Errorf("Provide = %v", err)
	}
	if _, err := zero.ProvideAny(h.Root(), 1); err == nil {
		t.Error("ProvideAny accepted the zero key")
	}
	if _, err := zero.Get(h.Root()); err == nil || !strings.Contains(err.Error(), "names no service") {
		t.Errorf("Get = %v", err)
	}
	if _, ok := zero.Lookup(h.Root()); ok {
		t.Error("Lookup found the zero key")
	}
	if _, ok := zero.LookupAny(h.Root()); ok {
		t.Error("LookupAny found the zero key")
	}
	before := h.Stats()
	for name, keys := range map[string][]host.ServiceKey{
		"Inject()[1] (a host.Service[int]) names no service": {svcDB, zero},
		"Inject()[0] is nil": {nil},
	} {
		f, err := h.Root().Plugin(host.Define("bad-inject", keys, func(*host.Context) error { return nil }), nil)
		if f != nil || err == nil || !strings.Contains(err.Error(), "host: loading plugin bad-inject: "+name) {
			t.Errorf("Plugin = %v, %v; want no fiber and an error containing %q", f, err, name)
		}
	}
	if got := h.Stats(); !reflect.DeepEqual(got, before) {
		t.Errorf("refused loads left %+v", got)
	}
}

// panickyPlugin panics in Name or Inject.
type panickyPlugin struct{ inName bool }

func (p panickyPlugin) Name() string {
	if p.inName {
		panic("name exploded")
	}
	return "panicky"
}
func (p panickyPlugin) Inject() []host.ServiceKey { panic("inject exploded") }
func (p panickyPlugin) Apply(*host.Context) error { return nil }

// Name and Inject are plugin code: a panic there is an error from Plugin,
// raised before any host lock is taken, and the host goes on working.
func TestPluginNameOrInjectPanicIsAnError(t *testing.T) {
	h, _ := newHost(t)
	for _, p := range []panickyPlugin{{inName: true}, {}} {
		f, err := h.Root().Plugin(p, nil)
		if f != nil || err == nil || !strings.Contains(err.Error(), "host: loading a host_test.panickyPlugin: its Name or Inject method panicked") {
			t.Errorf("Plugin = %v, %v", f, err)
		}
	}
	must[*host.Fiber](t)(h.Root().Plugin(host.Define("after", nil, func(*host.Context) error { return nil }), nil))
}

// Isolate takes keys: an isolated view of svcClock does not see, nor
// show, the global clock; other services pass through.
func TestH8_IsolateByKey(t *testing.T) {
	h, _ := newHost(t)
	must[host.Disposer](t)(svcClock.Provide(h.Root(), fixedClock("global")))
	must[host.Disposer](t)(svcDB.Provide(h.Root(), 1))
	iso := h.Root().Isolate(svcClock, nil, host.Service[int]{})
	if _, ok := svcClock.Lookup(iso); ok {
		t.Fatal("the isolated view sees the global clock")
	}
	must[host.Disposer](t)(svcClock.Provide(iso, fixedClock("private")))
	if c := must[Clocker](t)(svcClock.Get(h.Root())); c.Now() != "global" {
		t.Errorf("global clock = %v", c.Now())
	}
	if c := must[Clocker](t)(svcClock.Get(iso)); c.Now() != "private" {
		t.Errorf("isolated clock = %v", c.Now())
	}
	if n := must[int](t)(svcDB.Get(iso)); n != 1 {
		t.Errorf("db through the view = %v", n)
	}
}
