// Command hello is a small runnable tour of the plugin host: it loads two
// plugins in the "wrong" order (the one that injects a service before the
// one that provides it), emits events, creates an agent scope with a scoped
// listener, disposes a fiber and prints what happened and the host's final
// statistics.
//
//	go run ./examples/hello
package main
