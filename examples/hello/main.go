package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// Said is emitted whenever the greeter greets; it is scope-filtered, so a
// listener registered through an agent scope hears only its agent.
var Said = events.NewEvent[string](events.Descriptor{
	Name:     "hello/said",
	Mode:     events.ModeEmit,
	Doc:      "The greeter said something.",
	Filtered: true,
})

// Clock is what the clock service offers.
type Clock interface{ Now() string }

// ClockService is the service the clock plugin provides.
var ClockService = host.NewService[Clock]("clock")

// GreeterService is the service the greeter plugin provides.
var GreeterService = host.NewService[greetFunc]("greeter")

type fixedClock struct{}

func (fixedClock) Now() string { return "12:00" }

func greeter() host.Plugin {
	return host.Define("greeter", []host.ServiceKey{ClockService}, func(c *host.Context) error {
		clock, err := ClockService.Get(c)
		if err != nil {
			return err
		}
		_, err = GreeterService.Provide(c, func(ctx context.Context, em host.Emitter, name string) error {
			return host.Emit(ctx, em, Said, fmt.Sprintf("[%s] hello, %s", clock.Now(), name))
		})
		return err
	})
}

func clockPlugin() host.Plugin {
	return host.Define("clock", nil, func(c *host.Context) error {
		_, err := ClockService.Provide(c, fixedClock{})
		return err
	})
}

type greetFunc = func(ctx context.Context, em host.Emitter, name string) error

func run(w io.Writer) error {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	say := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }

	offStatus, err := host.On(root, host.FiberStatus, func(_ context.Context, s host.StatusChange) error {
		if strings.HasPrefix(s.Fiber.Name(), "scope:") {
			return nil
		}
		say("  fiber %-8s %v -> %v", s.Fiber.Name(), s.From, s.To)
		return nil
	})
	if err != nil {
		return err
	}

	say("loading greeter (injects clock) before clock:")
	g, err := root.Plugin(greeter(), nil)
	if err != nil && !errors.Is(err, host.ErrPending) {
		return err
	}
	say("greeter is %v", g.State())
	say("loading clock:")
	if _, err := root.Plugin(clockPlugin(), nil); err != nil {
		return err
	}
	say("greeter is %v", g.State())

	_, err = host.On(root, Said, func(_ context.Context, s string) error {
		say("global listener: %s", s)
		return nil
	})
	if err != nil {
		return err
	}
	agent, err := root.Scope("agent-1")
	if err != nil {
		return err
	}
	_, err = host.On(agent, Said, func(_ context.Context, s string) error {
		say("agent-1 listener: %s", s)
		return nil
	})
	if err != nil {
		return err
	}

	greet, err := GreeterService.Get(root)
	if err != nil {
		return err
	}
	say("emitting globally:")
	if err := greet(ctx, root.Emitter(), "world"); err != nil {
		return err
	}
	say("emitting for agent-1:")
	if err := greet(ctx, agent.Emitter(), "agent"); err != nil {
		return err
	}

	say("disposing the agent scope:")
	if err := agent.Fiber().Dispose(); err != nil {
		return err
	}
	if err := greet(ctx, h.Emitter("agent-1"), "again"); err != nil {
		return err
	}

	say("disposing greeter:")
	if err := g.Dispose(); err != nil {
		return err
	}
	_, err = GreeterService.Get(root)
	say("greeter service after dispose: %v", err)

	_ = offStatus() // the host's own Close, deferred above, is not narrated
	s := h.Stats()
	names := make([]string, 0, len(s.Listeners))
	for n := range s.Listeners {
		names = append(names, n)
	}
	sort.Strings(names)
	say("final stats: fibers=%d services=%v", s.Fibers, s.Services)
	for _, n := range names {
		say("  listeners %s: %d", n, s.Listeners[n])
	}
	return nil
}

func main() {
	if err := run(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}
