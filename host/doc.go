// Package host is a Cordis-style plugin host: a tree of contexts whose
// fibers own and undo everything their plugins register, services with
// injection, agent scopes, and typed named events dispatched in five modes.
//
// # Contexts, fibers, effects
//
// A [Host] has a root [Context]. [Context.Plugin] loads a [Plugin] as a
// child [Fiber] of the calling context's fiber; the plugin's Apply receives
// its own context, and everything registered through it (listeners,
// services, child plugins, scopes, effects, and what libraries built on the
// host record with [Context.Track], such as tools and guards) is an effect
// of that fiber. Disposing a fiber undoes its effects last in first out,
// attempts every disposer even when some fail, and joins, logs and returns
// the errors. Every disposer is idempotent. A fiber that is unloading or
// disposed refuses new registrations with [ErrFiberClosed], and so does a
// context left over from an earlier run of a restarted plugin or from a
// run that failed.
//
// # Services and injection
//
// [Context.Provide] registers a service by name; [Get] and [Lookup] read it
// (non-reactively). A plugin implementing [Injector] stays Pending until its
// services exist, starts when they appear, restarts when a provider is
// replaced and returns to Pending when one goes away; load order does not
// matter. A fiber restarted more than [MaxRestarts] times by one lifecycle
// operation (two plugins that each inject a service and, through a child,
// provide it) fails with [ErrRestartLoop] instead of looping; a fiber is
// never restarted by a service its own descendants provide.
// [Context.Isolate] gives a view with a private namespace for some
// names.
//
// # Agent scopes
//
// [Context.Scope] creates an agent scope: a child fiber whose context
// registers for that scope only. A scope-filtered event dispatched for a
// scope reaches global listeners and that scope's listeners; unfiltered
// events reach everyone.
//
// # Events
//
// Events are declared in package events as typed handles. [On], [OnQuery]
// and [OnWaterfall] register listeners; [Emit], [Query] and [Waterfall]
// dispatch through an [Emitter] (host + scope). Dispatch reads an immutable
// snapshot of the listener list (copy-on-write behind an atomic pointer) and
// holds no lock while a listener runs, so listeners may dispatch, register
// and dispose freely; a listener registered during a dispatch is not called
// by it, and one removed during it is not called after. Listeners run in
// registration order; [Prepend] puts one first. Panics are recovered into
// *events.PanicError and, like errors, handled per the event's failure
// policy and logged with the owning plugin's name. Nested dispatch deeper
// than the host's limit fails with [ErrRecursion].
//
// # Concurrency
//
// Dispatch is safe for concurrent use and lock-free on the read side.
// Lifecycle operations (loading, restarting, disposing, providing) run
// synchronously on the calling goroutine: when Plugin returns, the fiber
// has settled. No host lock is held while plugin code runs (Apply, a
// disposer, a FiberStatus listener), so that code may load plugins,
// provide services, update and dispose fibers, itself or through
// goroutines it waits for. A restart requested while a fiber is starting
// runs right after that start, on the goroutine running it; a Dispose
// made while a disposal of the same fiber is under way returns at once.
package host
