// Package goja is the goja engine of the code runtime: goja (a JavaScript interpreter in Go) runs
// the program in the host process. [NewInProcess] returns it. It is for trusted code only (see
// package codeRuntime/isolated for the default, which runs it in a worker process; its gaps are
// listed there, in the conformance table).
//
// # The goja backend
//
// [Runtime] strips TypeScript with esbuild (api.Transform, TS loader, target ES2020, so async/await is
// kept as goja runs it natively) and runs the result in a fresh goja.Runtime per run, used only on the
// goroutine that called Run. The VM's program-independent setup (prelude, guards, console) is done
// ahead for the next run on a background goroutine once a run is over: one VM at most is held, each
// serves one run, and Close waits for it. Binding calls run on a small per-run pool of worker goroutines
// (at most MaxConcurrentCalls, reused from call to call) with a run-scoped context; their completions
// are sent back and settle the program's promises on the run goroutine, which runs an event loop until
// the program's promise settles. A call is handed to a worker when the run goroutine waits for
// completions, or while the program runs on at the latest about 100 µs after the program made it
// (jsengine.HandOffDelay, by one timer per run), so it runs while the program runs on; but when the
// program awaits it as the only call in flight and no worker has begun it yet, the run goroutine
// claims it and runs it itself: a program that awaits its calls one by one wakes no goroutine per
// call, and no other call can wait behind it. When the run settles for any reason (return, throw, budget,
// cancellation), the run-scoped context is cancelled and Run waits for every binding goroutine it
// started before returning. A Runtime keeps a small bounded cache of compiled programs keyed by source;
// compiled programs are immutable, so nothing of one run reaches another.
//
// Source positions: the program is wrapped as the body of an async arrow function (the wrapper opens
// on its own line), transformed with a source map, and the map is shifted by that one line before
// goja reads it (inline), so stack traces, error.stack inside the program, and [Failure] Line/Column
// all refer to the program the model wrote. goja looks a position up in the map with a 1-based
// column where the map's are 0-based, so the map goja reads has its generated columns moved one to
// the right (without it a call was reported at its first argument or closing parenthesis). Both
// engines report a failure where Node does: a new expression at its new keyword, a failed property
// read at the property's name, a failed call at its callee (QuickJS records some of these a few
// characters off; the host moves them), pinned by the conformance suite's position table. No program
// can load a module: esbuild lowers import(name) to a require call, so on both engines it is a
// promise that rejects with a ReferenceError (require is not defined) at the import keyword.
//
// Isolation: the program sees only ECMAScript built-ins, console, and the namespace. There is no
// require, module loading, file, network, process or environment access, and no timers. goja's own
// source-map loader (which could read a file named by a sourceMappingURL comment in eval'd code) is
// disabled. Nothing of Go is exported into the VM except plain values and native functions; no Go
// error or struct is ever wrapped into a JS value. ArrayBuffer, SharedArrayBuffer, DataView and the
// typed arrays are removed (single-call multi-gigabyte allocations), and the string amplifiers
// (String.prototype.repeat, padStart, padEnd, concat, Array.prototype.join) refuse results longer
// than [Config].MaxStringLength with a RangeError, counting all of a call's arguments together (on
// both engines; Array.prototype.concat is capped at 4 Mi elements in total the same way).
//
// Native loops: goja checks for an interrupt only between JavaScript instructions, never inside a
// built-in, so a built-in that loops over a program-chosen size would outlast every budget (and block
// Run) or crash the process. Array built-ins that iterate every index (indexOf, join, forEach,
// Array.from, Function.prototype.apply, Reflect.apply, spread, ...) refuse a length above 4 Mi with a
// RangeError; JSON.parse, JSON.stringify (the program's and the host's) and nested join/toString
// refuse nesting deeper than 10000 levels, and JSON.stringify calls a replacer per value so the
// budgets interrupt it (a binding argument is serialized in Go, step for step as that stringify,
// checking the interrupt at each value the same way); a binding result nested deeper rejects that
// call with INVALID_RESULT; a
// regexp2 match (patterns with backreferences or lookaround) gives up after 250ms, finding nothing,
// once the program has called [LimitRegexpMatchTime]. That last limit is process-wide, because goja
// offers no per-runtime setting, so it is an explicit opt-in: importing this package changes no
// process-wide setting, and without the call a catastrophic regular expression can hold Run past
// its budgets.
//
// Memory: goja has no per-runtime memory limit, and Go cannot attribute heap to a goroutine. The
// defences are therefore indirect: the busy-CPU budget bounds how long a program can allocate, output
// sizes are capped, amplifying built-ins are capped as above, and a heap watchdog samples the process
// heap (runtime/metrics, /memory/classes/heap/objects:bytes) while a run is active and, when a
// sample exceeds [Config].MaxHeapBytes, runs a collection and interrupts the run with [ErrHeapLimit]
// if the live heap it marked (/gc/heap/live:bytes) is still over it: garbage not yet collected does
// not count (at most one forced collection per HeapCheckInterval). That ceiling is process-wide: when
// the host itself is over it, every run fails with kind "limit". A single native call (for example a
// huge Array.prototype.concat or String.prototype.replaceAll) can still allocate between two samples;
// run untrusted programs in a process with a GOMEMLIMIT and headroom.
package goja
