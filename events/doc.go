// Package events declares events for the plugin host (package host): typed
// event handles, their descriptors and the five dispatch modes.
//
// An event is declared once, as a package-level variable, with a
// [Descriptor] that states its name, dispatch [Mode], a one-line doc, whether
// it is scope-filtered and what happens when a listener fails. The handle's
// type parameters fix the listener signature, so registration and dispatch
// (package-level generic functions in package host) are checked by the
// compiler:
//
//	var Ping = events.NewEvent[string](events.Descriptor{
//		Name: "demo/ping", Mode: events.ModeEmit, Doc: "A ping was sent.",
//	})
//
// Listeners are registered and events dispatched through package host:
//
//	off, err := host.On(c, Ping, func(ctx context.Context, who string) error { ... })
//	err = host.Emit(ctx, c.Emitter(), Ping, "world")
//
// The modes: [ModeEmit] calls every listener in order and [ModeParallel]
// concurrently ([Event] handles); [ModeSerial] and [ModeBail] call them in
// order until one answers ([Query] handles; serial checks cancellation
// between listeners, bail does not); [ModeWaterfall] chains them as
// middleware around a base ([Waterfall] handles). A descriptor's [Failure]
// policy says whether a listener's error or panic is contained (logged)
// or returned to the dispatcher.
//
// Handles are plain values with no listener state; the listeners live in a
// host, so one handle serves any number of hosts. Descriptors are what an
// event catalog is generated from: the constructor records the declaring
// file and line and derives the listener's Go signature.
//
// This package imports nothing else of the module.
package events
