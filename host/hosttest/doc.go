// Package hosttest checks that a plugin keeps the host's contract, the way
// testing/slogtest checks a slog.Handler: each clause of the contract is
// checked on a fresh host and reported by name.
//
// The clauses ([ClauseLoad], [ClauseRestart], [ClauseScope],
// [ClauseDisposePending], [ClauseDoubleDispose], [ClauseDisposeInDispatch])
// load the plugin, restart it by replacing the provider of a service it
// injects, load it through an agent scope, and dispose it while pending,
// twice, and from inside a dispatch. After each, the plugin must have left
// nothing behind: no listener, service, fiber, effect on the root fiber,
// or goroutine. Clauses about injected services are skipped for plugins
// that inject none.
//
// [Run] checks every clause in its own subtest:
//
//	func TestConformance(t *testing.T) {
//		hosttest.Run(t, hosttest.Case{
//			Plugin: timeoutpolicy.Plugin,
//			Config: timeoutpolicy.Config{},
//			Setup:  toolstest.Setup, // loads the tool registry it injects
//		})
//	}
//
// [Check] returns the broken clauses as errors instead (each a
// *[ClauseError]), for callers without a *testing.T.
package hosttest
