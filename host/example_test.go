package host_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

var (
	exGreet = events.NewEvent[string](events.Descriptor{
		Name: "example/greet", Mode: events.ModeEmit, Doc: "Someone was greeted.", Filtered: true,
	})
	exRender = events.NewWaterfall[string, string](events.Descriptor{
		Name: "example/render", Mode: events.ModeWaterfall, Doc: "Render a string through middleware.",
	})
)

// A plugin's fiber owns what it registers; disposing it undoes everything.
func ExampleNew() {
	h := host.New()
	defer h.Close()
	f, _ := h.Root().Plugin(host.Define("greeter", nil, func(c *host.Context) error {
		_, err := host.On(c, exGreet, func(_ context.Context, name string) error {
			fmt.Println("hello,", name)
			return nil
		})
		return err
	}), nil)
	fmt.Println(f.Name(), f.State(), h.ListenerCount("example/greet"))
	_ = host.Emit(context.Background(), h.Root().Emitter(), exGreet, "world")
	_ = f.Dispose()
	fmt.Println(f.State(), h.ListenerCount("example/greet"))
	// Output:
	// greeter active 1
	// hello, world
	// disposed 0
}

// On registers a listener; Emit calls the listeners in registration order.
func ExampleEmit() {
	h := host.New()
	defer h.Close()
	for _, n := range []string{"first", "second"} {
		_, _ = host.On(h.Root(), exGreet, func(_ context.Context, p string) error {
			fmt.Println(n, "got", p)
			return nil
		})
	}
	_ = host.Emit(context.Background(), h.Root().Emitter(), exGreet, "ping")
	// Output:
	// first got ping
	// second got ping
}

// The first listener listed is the outermost; Prepend puts one before all.
func ExampleWaterfall() {
	h := host.New()
	defer h.Close()
	wrap := func(tag string) events.WaterfallListener[string, string] {
		return func(ctx context.Context, p string, next events.Next[string]) (string, error) {
			inner, err := next(ctx)
			return tag + "(" + inner + ")", err
		}
	}
	_, _ = host.OnWaterfall(h.Root(), exRender, wrap("a"))
	_, _ = host.OnWaterfall(h.Root(), exRender, wrap("b"))
	_, _ = host.OnWaterfall(h.Root(), exRender, wrap("outer"), host.Prepend())
	out, _ := host.Waterfall(context.Background(), h.Root().Emitter(), exRender, "x",
		func(context.Context) (string, error) { return "base", nil })
	fmt.Println(out)
	// Output:
	// outer(a(b(base)))
}

// A scope-filtered event reaches global listeners and the listeners of its
// own scope only.
func ExampleContext_Scope() {
	h := host.New()
	defer h.Close()
	listen := func(c *host.Context, who string) {
		_, _ = host.On(c, exGreet, func(_ context.Context, p string) error {
			fmt.Println(who, "saw", p)
			return nil
		})
	}
	a, _ := h.Root().Scope("agent-a")
	b, _ := h.Root().Scope("agent-b")
	listen(h.Root(), "global")
	listen(a, "agent-a")
	listen(b, "agent-b")
	_ = host.Emit(context.Background(), a.Emitter(), exGreet, "a's event")
	_ = a.Fiber().Dispose() // the scope and its listener are gone
	fmt.Println(h.ListenerCount("example/greet"))
	// Output:
	// global saw a's event
	// agent-a saw a's event
	// 2
}

type upper struct{}

func (upper) Do(s string) string { return strings.ToUpper(s) }

// svcUpper is a service declared once with its name and type; the
// provider, the consumer and the inject list all use it.
var svcUpper = host.NewService[upper]("upper")

// A plugin that injects a service waits for it, whatever the load order.
func ExampleService() {
	h := host.New()
	defer h.Close()
	user, _ := h.Root().Plugin(host.Define("user", []host.ServiceKey{svcUpper}, func(c *host.Context) error {
		u, err := svcUpper.Get(c)
		if err != nil {
			return err
		}
		fmt.Println("user started:", u.Do("ready"))
		return nil
	}), nil)
	fmt.Println("user is", user.State())
	provider, _ := h.Root().Plugin(host.Define("provider", nil, func(c *host.Context) error {
		_, err := svcUpper.Provide(c, upper{})
		return err
	}), nil)
	fmt.Println("user is", user.State())
	_ = provider.Dispose()
	fmt.Println("user is", user.State())
	// Output:
	// user is pending
	// user started: READY
	// user is active
	// user is pending
}
