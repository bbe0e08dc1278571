// Package busbridge forwards observe-only host events to an application's
// github.com/asaskevich/EventBus bus, by topic name.
//
//	b, err := busbridge.New(ctx, bus)                  // an effect of ctx's fiber
//	_, err = busbridge.Forward(b, host.FiberStatus)    // topic "internal/fiber"
//	bus.Subscribe("internal/fiber", func(s host.StatusChange) { ... })
//
// Only events dispatched with [events.Event] (emit and parallel modes) can be
// forwarded: they are notifications, so the bridge never has to produce a
// result or a decision. Each forwarded payload is published as the single
// argument of the topic, so a subscriber's parameter type must be the
// event's payload type P.
//
// # The two EventBus hazards
//
// EventBus holds its lock while a synchronous handler runs, so a handler
// that publishes into the same bus deadlocks, and anything waiting for that
// publish waits forever. The bridge therefore never publishes on a host
// dispatch: its listener puts the payload into a bounded queue and returns,
// and one goroutine per bridge publishes from the queue in order. A bus
// subscriber may emit host events (forwarded ones included) from its
// handler, and may publish through [Bridge.Publish], which queues too; the
// host is never blocked. The queue policy is drop-newest: when the queue is
// full, the new item is dropped, counted ([Bridge.Dropped]) and logged at
// debug level on the bridge's fiber logger. Blocking was rejected: a handler
// running on the bridge goroutine that emits a forwarded event into a full
// queue would wait for itself. A handler that calls bus.Publish directly
// still deadlocks the bus (that is EventBus itself); the bridge's disposal
// then gives up waiting after the stop timeout and returns [ErrStuck]
// instead of hanging the host.
//
// EventBus unsubscribes by function pointer: Unsubscribe removes the first
// handler whose code pointer matches, and every closure made from one
// function literal shares a code pointer. The bridge never subscribes to
// the bus, so it never calls Unsubscribe and cannot remove an application's
// handler; its own subscriptions are host listeners, removed by their
// disposers, which compare registrations, not functions.
//
// The bridge is an effect of the fiber it is created through: disposing
// that fiber removes its forwards, closes the queue and stops the goroutine
// (after publishing what was already queued).
package busbridge
