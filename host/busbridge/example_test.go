package busbridge_test

import (
	"context"
	"fmt"

	EventBus "github.com/asaskevich/EventBus"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/busbridge"
)

var exDeploy = events.NewEvent[string](events.Descriptor{
	Name: "example/deploy", Mode: events.ModeEmit, Doc: "A deployment finished.",
})

// Forward a declared event and the host's fiber status changes to an
// EventBus bus. The bridge publishes from its own goroutine; disposing the
// bridge's fiber publishes what is still queued and stops that goroutine,
// and Done reports when it has, so everything published has been seen.
func Example() {
	h := host.New()
	defer h.Close()
	bus := EventBus.New()

	// Bus subscribers run on the bridge's goroutine, one publish at a time.
	var seen []string
	_ = bus.Subscribe("deploys", func(version string) {
		seen = append(seen, "deployed "+version)
	})
	_ = bus.Subscribe("internal/fiber", func(s host.StatusChange) {
		if s.Fiber.Name() == "worker" {
			seen = append(seen, fmt.Sprintf("worker %v -> %v", s.From, s.To))
		}
	})

	var b *busbridge.Bridge
	bridge, err := h.Root().Plugin(host.Define("bridge", nil, func(c *host.Context) error {
		var err error
		if b, err = busbridge.New(c, bus); err != nil {
			return err
		}
		if _, err := busbridge.Forward(b, exDeploy, busbridge.Topic("deploys")); err != nil {
			return err
		}
		_, err = busbridge.Forward(b, host.FiberStatus) // topic "internal/fiber"
		return err
	}), nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	worker, _ := h.Root().Plugin(host.Define("worker", nil, func(*host.Context) error { return nil }), nil)
	_ = host.Emit(context.Background(), h.Root().Emitter(), exDeploy, "v1.2.0")
	_ = worker.Dispose()

	// Drain: dispose the bridge and wait for its goroutine to exit.
	if err := bridge.Dispose(); err != nil {
		fmt.Println(err)
	}
	<-b.Done()
	for _, s := range seen {
		fmt.Println(s)
	}
	fmt.Println("dropped:", b.Dropped())
	// Output:
	// worker new -> loading
	// worker loading -> active
	// deployed v1.2.0
	// worker active -> unloading
	// worker unloading -> disposed
	// dropped: 0
}
