package guides_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/hosttest"
	"github.com/dsh-go/dsh/plugins/tools"
)

// GreeterConfig configures the Greeter plugin.
type GreeterConfig struct {
	Greeting string
}

// GreetFunc is what the greeter service offers.
type GreetFunc func(name string) string

// GreeterService is the greeter service, declared once with its name and
// type: Greeter provides it, other plugins inject and read it through it.
var GreeterService = host.NewService[GreetFunc]("greeter")

// Greeter provides a GreetFunc as GreeterService.
type Greeter struct{}

// Name implements host.Named: the fiber, its logger and the catalog use it.
func (Greeter) Name() string { return "greeter" }

// Apply implements host.Plugin.
func (Greeter) Apply(c *host.Context) error {
	cfg, _ := host.ConfigAs[GreeterConfig](c)
	if cfg.Greeting == "" {
		cfg.Greeting = "hello"
	}
	greet := GreetFunc(func(name string) string { return cfg.Greeting + ", " + name })
	_, err := GreeterService.Provide(c, greet)
	return err
}

func Example_pluginLoad() {
	h := host.New()
	defer h.Close()
	root := h.Root()

	f, err := root.Plugin(Greeter{}, GreeterConfig{Greeting: "hi"})
	if err != nil {
		panic(err) // the fiber could not be created at all
	}
	fmt.Println(f.Name(), f.State(), f.Err())

	greet, err := GreeterService.Get(root)
	if err != nil {
		panic(err)
	}
	fmt.Println(greet("Ada"))
	// Output:
	// greeter active <nil>
	// hi, Ada
}

func Example_pluginFunc() {
	h := host.New()
	defer h.Close()
	root := h.Root()

	// host.Define: a name, the services it injects, and Apply.
	banner := host.Define("banner", nil, func(c *host.Context) error {
		c.Logger().Info().Msg("banner loaded") // carries plugin=banner
		return nil
	})
	// host.PluginFunc: an anonymous plugin, named after its Go type.
	failing := host.PluginFunc(func(c *host.Context) error {
		return errors.New("no config file")
	})

	b, _ := root.Plugin(banner, nil)
	x, _ := root.Plugin(failing, nil)
	fmt.Println(b.Name(), b.State())
	fmt.Println(x.State(), x.Err())
	// Output:
	// banner active
	// failed no config file
}

func Example_pluginFiber() {
	h := host.New()
	defer h.Close()
	root := h.Root()
	before := h.Stats()

	// A service of the watcher's own, declared with its name and type.
	version := host.NewService[string]("watcher")

	f, _ := root.Plugin(host.Define("watcher", nil, func(c *host.Context) error {
		// A resource with a cleanup: setup runs now, cleanup on dispose.
		if _, err := c.Effect("open log", func() (func() error, error) {
			fmt.Println("log opened")
			return func() error { fmt.Println("log closed"); return nil }, nil
		}); err != nil {
			return err
		}
		if _, err := version.Provide(c, "v1"); err != nil {
			return err
		}
		// Track records something you did elsewhere, undone on dispose.
		_, err := c.Track(host.EffectCustom, "timer", func() error {
			fmt.Println("timer stopped")
			return nil
		})
		return err
	}), nil)

	for _, e := range f.Effects() {
		fmt.Println("owns:", e.Kind, e.Name)
	}
	c := f.Context() // the context the plugin's Apply received

	fmt.Println("dispose:", f.Dispose()) // last in, first out
	fmt.Println("again:", f.Dispose())   // idempotent
	fmt.Println("leaks nothing:", fmt.Sprint(h.Stats()) == fmt.Sprint(before))

	_, err := version.Provide(c, "v2") // through the disposed fiber's context
	fmt.Println(errors.Is(err, host.ErrFiberClosed))
	// Output:
	// log opened
	// owns: effect open log
	// owns: service watcher
	// owns: effect timer
	// timer stopped
	// log closed
	// dispose: <nil>
	// again: <nil>
	// leaks nothing: true
	// true
}

// Greeted is emitted after a greeting. It is scope-filtered: a listener
// registered through an agent scope hears only that agent's greetings.
var Greeted = events.NewEvent[string](events.Descriptor{
	Name:     "guide/greeted",
	Mode:     events.ModeEmit,
	Doc:      "Someone was greeted.",
	Filtered: true,
	Failure:  events.Contain, // a failing listener is logged and skipped
})

// Decorate lets listeners rewrite a greeting, middleware-style.
var Decorate = events.NewWaterfall[string, string](events.Descriptor{
	Name:    "guide/decorate",
	Mode:    events.ModeWaterfall,
	Doc:     "Rewrite a greeting before it is shown.",
	Failure: events.Propagate, // a failing listener fails the dispatch
})

func Example_pluginListeners() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	alice, _ := root.Scope("alice")

	_, _ = host.On(root, Greeted, func(ctx context.Context, who string) error {
		fmt.Println("global listener:", who)
		return nil
	})
	_, _ = host.On(alice, Greeted, func(ctx context.Context, who string) error {
		fmt.Println("alice's listener:", who)
		return nil
	})
	_, _ = host.On(root, Greeted, func(ctx context.Context, who string) error {
		return errors.New("audit log unavailable") // contained: logged, skipped
	})

	_ = host.Emit(ctx, h.Emitter("bob"), Greeted, "bob")
	_ = host.Emit(ctx, alice.Emitter(), Greeted, "alice")

	_, _ = host.OnWaterfall(root, Decorate, func(ctx context.Context, s string, next events.Next[string]) (string, error) {
		out, err := next(ctx)
		return "[" + out + "]", err
	})
	_, _ = host.OnWaterfall(root, Decorate, func(ctx context.Context, s string, next events.Next[string]) (string, error) {
		out, err := next(ctx)
		return strings.ToUpper(out), err
	}, host.Prepend()) // runs first: the outermost wrapper

	s, err := host.Waterfall(ctx, root.Emitter(), Decorate, "hi",
		func(ctx context.Context) (string, error) { return "hi, bob", nil })
	fmt.Println(s, err)
	// Output:
	// global listener: bob
	// global listener: alice
	// alice's listener: alice
	// [HI, BOB] <nil>
}

func Example_pluginInject() {
	h := host.New()
	defer h.Close()
	root := h.Root()

	runs := 0
	welcome := host.Define("welcome", []host.ServiceKey{GreeterService}, func(c *host.Context) error {
		runs++
		greet, err := GreeterService.Get(c)
		if err != nil {
			return err
		}
		fmt.Println("welcome:", greet("world"))
		return nil
	})

	w, _ := root.Plugin(welcome, nil) // loaded first: waits for "greeter"
	fmt.Println(w.State())

	g, _ := root.Plugin(Greeter{}, nil) // provided: welcome starts
	fmt.Println(w.State())

	_ = g.Update(GreeterConfig{Greeting: "hey"}) // provider replaced: welcome restarts
	_ = g.Dispose()                              // provider gone: welcome waits again
	fmt.Println(w.State(), runs)

	// An optional dependency: a non-reactive read, repeated when needed.
	if _, ok := GreeterService.Lookup(root); !ok {
		fmt.Println("no greeter right now")
	}
	// Output:
	// pending
	// welcome: hello, world
	// active
	// welcome: hey, world
	// pending 2
	// no greeter right now
}

// CountArgs are the arguments of the count tool. The schema the model sees
// is derived from the fields and their tags.
type CountArgs struct {
	Text string `json:"text" jsonschema:"The text to count in."`
	Unit string `json:"unit,omitempty" jsonschema:"What to count." dsh:"enum=words|lines,default=words"`
}

// CountMeta is the tool's presentation payload, kept on the session log.
type CountMeta struct {
	N int `json:"n"`
}

// countTool is the typed definition; tools.Define checks it once.
func countTool() (tools.Definition, error) {
	return tools.Define(tools.TypedTool[CountArgs, tools.Output]{
		Name:        "count",
		Description: "Count the words or lines of a text.",
		Execute: func(ctx context.Context, a CountArgs, _ *tools.Execution) (tools.Output, error) {
			n := len(strings.Fields(a.Text))
			if a.Unit == "lines" {
				n = strings.Count(a.Text, "\n") + 1
			}
			meta, _ := json.Marshal(CountMeta{N: n})
			return tools.Output{
				Content: []tools.Content{tools.Text(fmt.Sprint(n))},
				Meta:    meta,
			}, nil
		},
		// Pure, display-only; called only with arguments that match the
		// schema (older, logged shapes present nothing).
		PresentCall: func(a CountArgs) tools.CallView {
			return tools.GenericCall{Title: "Count " + cmp.Or(a.Unit, "words"), Kind: "read"}
		},
		PresentResult: func(a CountArgs, r tools.ResultData) tools.ResultView {
			var m CountMeta
			if r.IsError || json.Unmarshal(r.Meta, &m) != nil {
				return nil
			}
			return tools.GenericResult{Title: fmt.Sprintf("%d %s", m.N, cmp.Or(a.Unit, "words"))}
		},
	})
}

// CountPlugin registers the count tool. tools.DefinePlugin injects the
// registry: the plugin waits for the tools plugin and restarts with it.
var CountPlugin = tools.DefinePlugin("count", func(c *host.Context, reg *tools.Registry) error {
	def, err := countTool()
	if err != nil {
		return err
	}
	_, err = reg.Register(c, def) // unregistered when this fiber is disposed
	return err
})

func Example_pluginTool() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	_, _ = root.Plugin(CountPlugin, nil) // order does not matter
	_, _ = root.Plugin(tools.Plugin, tools.Config{})
	reg, _ := tools.Service.Get(root)

	s := reg.Schemas("")[0]
	fmt.Println(s.Name, string(s.Parameters))

	ok := reg.Execute(ctx, tools.Call{ID: "c1", Name: "count",
		Arguments: json.RawMessage(`{"text":"one two three"}`)})
	bad := reg.Execute(ctx, tools.Call{ID: "c2", Name: "count",
		Arguments: json.RawMessage(`{"unit":"bytes"}`)})
	fmt.Println(ok.Content[0].Text, string(ok.Meta))
	fmt.Println(bad.Error.Code)
	fmt.Println(bad.Content[0].Text)
	// Output:
	// count {"type":"object","properties":{"text":{"type":"string","description":"The text to count in."},"unit":{"type":"string","description":"What to count.","default":"words","enum":["words","lines"]}},"required":["text"],"additionalProperties":false}
	// 3 {"n":3}
	// INVALID_ARGS
	// invalid arguments for tool "count":
	// - /text: required property is missing
	// - /unit: must be one of "words", "lines", got "bytes"
}

func Example_pluginCards() {
	h := host.New()
	defer h.Close()
	root := h.Root()
	_, _ = root.Plugin(tools.Plugin, tools.Config{})
	_, _ = root.Plugin(CountPlugin, nil)
	reg, _ := tools.Service.Get(root)

	args := []byte(`{"text":"a\nb","unit":"lines"}`)
	res := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "count", Arguments: args})

	call, _ := json.Marshal(reg.PresentCall("count", "", args))
	done, _ := json.Marshal(reg.PresentResult("count", "", args, res.Data()))
	fmt.Println(string(call))
	fmt.Println(string(done))

	// Arguments of an older shape (say, from a replayed log): no card, no panic.
	fmt.Println(reg.PresentCall("count", "", []byte(`{"text":42}`)) == nil)
	// Output:
	// {"card":"generic","title":"Count lines","kind":"read"}
	// {"card":"generic","title":"2 lines"}
	// true
}

// CountPolicy gates the count tool: a pre-execute listener (reorderable,
// may allow, deny or ask) and a guard (monotonic: nothing can re-allow
// what it denies).
var CountPolicy = tools.DefinePlugin("count-policy", func(c *host.Context, reg *tools.Registry) error {
	_, err := host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if e.Name() == "count" && e.Arg("unit").String() == "lines" {
			return tools.Asked("line counts are slow on large texts"), nil
		}
		return next(ctx) // no opinion: let the rest decide (the base allows)
	})
	if err != nil {
		return err
	}
	_, err = reg.Guard(c, func(e *tools.Execution) error {
		if len(e.Arg("text").String()) > 20 {
			return errors.New("text longer than 20 bytes")
		}
		return nil // no objection
	})
	return err
})

func Example_pluginPolicy() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	for _, p := range []host.Plugin{tools.Plugin, CountPlugin, CountPolicy} {
		_, _ = root.Plugin(p, nil)
	}
	reg, _ := tools.Service.Get(root)

	// A guard registered through an agent scope applies to that agent only.
	intern, _ := root.Scope("intern")
	_, _ = reg.Guard(intern, func(e *tools.Execution) error { return errors.New("interns may not count") })

	for _, c := range []tools.Call{
		{ID: "1", Agent: "ada", Name: "count", Arguments: json.RawMessage(`{"text":"a b"}`)},
		{ID: "2", Agent: "ada", Name: "count", Arguments: json.RawMessage(`{"text":"a b","unit":"lines"}`)},
		{ID: "3", Agent: "ada", Name: "count", Arguments: json.RawMessage(`{"text":"the quick brown fox jumps"}`)},
		{ID: "4", Agent: "intern", Name: "count", Arguments: json.RawMessage(`{"text":"a b"}`)},
	} {
		r := reg.Execute(ctx, c)
		if r.IsError {
			fmt.Println(c.ID, r.Error.Code, r.Content[0].Text)
			continue
		}
		fmt.Println(c.ID, "ok", r.Content[0].Text)
	}
	// Output:
	// 1 ok 2
	// 2 APPROVAL_UNAVAILABLE Tool call denied: approval is required (line counts are slow on large texts), but no approval service is mounted
	// 3 DENIED Tool call denied: text longer than 20 bytes
	// 4 DENIED Tool call denied: interns may not count
}

func Example_pluginScoped() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	for _, p := range []host.Plugin{tools.Plugin, CountPlugin} {
		_, _ = root.Plugin(p, nil)
	}
	reg, _ := tools.Service.Get(root)

	// Loaded through an agent's context, the policy is that agent's alone,
	// and it goes when the agent's scope is disposed.
	ada, _ := root.Scope("ada")
	_, _ = ada.Plugin(CountPolicy, nil)

	long := json.RawMessage(`{"text":"the quick brown fox jumps"}`)
	for _, agent := range []host.ScopeKey{"ada", "bob"} {
		r := reg.Execute(ctx, tools.Call{ID: "1", Agent: agent, Name: "count", Arguments: long})
		fmt.Println(agent, r.IsError, r.Content[0].Text)
	}
	_ = ada.Fiber().Dispose()
	r := reg.Execute(ctx, tools.Call{ID: "2", Agent: "ada", Name: "count", Arguments: long})
	fmt.Println("ada after dispose:", r.IsError)
	// Output:
	// ada true Tool call denied: text longer than 20 bytes
	// bob false 5
	// ada after dispose: false
}

func TestCountPluginConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{
		Plugin: CountPlugin,
		// CountPlugin injects the registry: load it first.
		Setup: func(root *host.Context) error {
			_, err := root.Plugin(tools.Plugin, tools.Config{})
			return err
		},
	})
}
