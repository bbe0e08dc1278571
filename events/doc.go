// Package events is the vocabulary of the dsh plugin host: typed event
// handles, their descriptors and the five dispatch modes.
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
// Handles are plain values with no listener state; the listeners live in a
// host, so one handle serves any number of hosts. The descriptors are the
// single source the event catalog (docs/cordis-catalog/events.md) is
// generated from: the constructor records the declaring file and line and
// derives the listener's Go signature.
//
// This package imports nothing else of the module.
package events
