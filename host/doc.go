// Package host runs plugins. A plugin registers what it offers (event
// listeners, services, child plugins, agent scopes, resources with a
// cleanup) through a [Context], and the host remembers every registration
// on the plugin's [Fiber], so that disposing the fiber undoes all of it.
// Plugins find each other through named services, and talk through typed
// events (declared in package events) dispatched in five modes.
//
//	h := host.New()
//	defer h.Close()
//	greeter := host.Define("greeter", nil, func(c *host.Context) error {
//		_, err := host.On(c, Greet, func(_ context.Context, name string) error {
//			fmt.Println("hello,", name)
//			return nil
//		})
//		return err
//	})
//	f, err := h.Root().Plugin(greeter, nil) // err != nil: failed, or pending on a service
//	if err != nil {
//		return err
//	}
//	_ = host.Emit(ctx, h.Root().Emitter(), Greet, "world") // hello, world
//	_ = f.Dispose()                                      // the listener is gone
//
// # Fibers own what plugins register
//
// [Context.Plugin] loads a [Plugin] as a child fiber of the calling
// context's fiber; its Apply receives the fiber's context, and everything
// registered through that context is an effect of the fiber: listeners,
// services, child plugins, scopes, [Context.Effect] resources, and what
// libraries built on the host record with [Context.Track] (the tool
// registry's tools and guards, say). Disposing a fiber undoes its effects
// last in first out, attempts every disposer even when some fail, and
// joins, logs and returns their errors; its child fibers go with it. Every
// [Disposer] is idempotent. A fiber that is unloading or disposed refuses
// registrations with [ErrFiberClosed], and so does a context left over
// from a run that failed or from before a restart.
//
// Each run of a fiber has a lifetime, [Context.Lifetime]: a
// context.Context cancelled when the run ends (dispose, restart, a failed
// start's rollback) before the first effect is undone. Background work a
// plugin starts (sessions, reconnection loops) runs under it, and the
// effect that stops that work only has to wait for it.
//
// [Context.Plugin] returns when the fiber has settled, with an error
// unless it became Active: the failure of Apply (wrapped; everything Apply
// registered is rolled back), or a [*PendingError] (matching [ErrPending])
// when a service it injects is missing. The fiber comes back with the
// error, so a pending plugin can be kept or disposed.
//
// # Services
//
// A service is declared once, with its name and Go type, as a [Service]
// (like an event handle): var Clock = host.NewService[ClockFunc]("clock").
// [Service.Provide] makes a value available through it, and
// [Service.Get] and [Service.Lookup] read it, already typed, without
// subscribing to changes; names appear only in logs, errors, [Stats] and
// catalogs. A plugin implementing [Injector] (or made by [Define]) lists
// the [ServiceKey]s it requires and stays Pending until they exist,
// starts when they appear, restarts when a provider is replaced (the
// newest provider wins, and the previous one comes back when it goes
// away) and returns to Pending when one disappears, so load order does not
// matter. A fiber is
// never restarted by a service its own descendants provide, and one asked
// to restart more than [MaxRestarts] times in a row fails with
// [ErrRestartLoop]. [Context.Isolate] gives a view in which some services
// are private.
//
// # Agent scopes
//
// [Context.Scope] creates an agent scope: a child fiber whose context
// registers for that scope only. A scope-filtered event dispatched for a
// scope reaches global listeners and that scope's listeners; unfiltered
// events reach everyone. Disposing the scope's fiber removes everything
// registered through it.
//
// # Events
//
// [On], [OnQuery] and [OnWaterfall] register listeners for event handles;
// [Emit], [Query] and [Waterfall] dispatch through an [Emitter] (a host and
// a scope). Listeners run in registration order ([Prepend] puts one
// first). A listener registered during a dispatch is not called by it; one
// removed during it is not called after. A listener's error or panic
// (recovered into an *events.PanicError) is logged with the plugin's name
// and contained or returned, as the event's descriptor says. A dispatch
// nested deeper than the host's limit fails with [ErrRecursion].
//
// # Concurrency
//
// A Host, its contexts and fibers are safe for concurrent use. Dispatch
// reads an immutable snapshot of the listeners and holds no lock while a
// listener runs, so listeners may dispatch, register and dispose freely.
// Lifecycle operations (loading, restarting, providing, disposing) run on
// the calling goroutine and hold no lock while plugin code runs (Apply, a
// disposer, a FiberStatus listener), so that code may load plugins,
// provide services, update and dispose fibers, itself or through
// goroutines it waits for. One goroutine at a time starts a given fiber: a
// restart asked for meanwhile runs right after the start under way, and a
// Dispose made while the same fiber is being disposed returns at once
// ([Fiber.Wait] waits for the disposal).
package host
