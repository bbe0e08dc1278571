package events_test

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// exPing is declared once, at package level, as every event is.
var exPing = events.NewEvent[string](events.Descriptor{
	Name: "example/ping",
	Mode: events.ModeEmit,
	Doc:  "A ping was sent.",
})

// Declare an event with NewEvent, listen to it with host.On and dispatch it
// with host.Emit. The handle's type parameter fixes the listener signature,
// which the descriptor records for the catalog.
func ExampleNewEvent() {
	h := host.New()
	defer h.Close()

	_, err := host.On(h.Root(), exPing, func(_ context.Context, who string) error {
		fmt.Println("ping from", who)
		return nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := host.Emit(context.Background(), h.Root().Emitter(), exPing, "alice"); err != nil {
		fmt.Println(err)
	}

	d := exPing.Descriptor()
	fmt.Println(d.Name)
	fmt.Println(d.Mode)
	fmt.Println(d.Signature())
	fmt.Println(d.FailurePolicy())
	// Output:
	// ping from alice
	// example/ping
	// emit
	// func(context.Context, string) error
	// contain (logged, dispatch continues)
}

// ValidateName accepts lower-case, '/'-separated names and says what is
// wrong with the others.
func ExampleValidateName() {
	for _, name := range []string{"tools/pre-execute", "Tools/x", "a//b"} {
		fmt.Println(name, events.ValidateName(name) == nil)
	}
	// Output:
	// tools/pre-execute true
	// Tools/x false
	// a//b false
}
