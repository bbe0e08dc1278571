// Package coderuntime is the code-execution seam of Code Mode, its two engines (goja and QuickJS)
// and the worker processes that isolate model-written programs from the host.
//
// The package name is coderuntime; the directory is codeRuntime, so importers write
//
//	import coderuntime "github.com/dsh-go/dsh/codeRuntime"
//
// (the explicit name is optional but tells readers what the identifier is).
//
// # The seam
//
// [Runtime] runs a model-written [Program]: TypeScript that is the body of an async function, so
// top-level await and return work. The program reaches the host only through [Binding]s, installed
// as async functions on one global namespace object (default "tools"): `await tools.name(args)`.
// Arguments and results cross the boundary as JSON only. A run ends with a [*Result] (the returned
// value as JSON plus captured console output) or a [*Failure] whose [FailureKind] says why.
//
// # Isolation: worker processes
//
// [NewRuntime] (and [Plugin], which provides what it returns) runs model-written code isolated by
// default: [Isolated] runs each program in a worker process, one program per process, so that
// nothing a program makes its engine do (a native call that allocates gigabytes, a stack overflow
// in the parser, a loop no interrupt reaches) can crash the host or hold Run past its budgets. The
// parent samples the worker's resident memory and CPU time (from /proc, on Linux) every
// HeapCheckInterval and kills it above Config.MaxMemoryBytes or past the busy-CPU budget plus a
// margin; it kills it past the wall-clock budget plus a grace period, and when it sends a message
// that is malformed or larger than its limit. The run then fails with kind "limit", "timeout",
// "output-limit" or "crash" ([KindCrash]): the host, the pool and later runs are unaffected.
// Bindings still run in the host, with the same contract as in process. Elsewhere than Linux
// there is no sampling: a worker is bounded by its Go memory limit, its engine's budgets and the
// parent's wall-clock kill; on platforms without inherited pipes (Windows) NewRuntime runs in
// process unless isolation is asked for explicitly ([ErrIsolationUnsupported]).
//
// Workers are bounded in number and memory: at most Config.MaxWorkers (default 4) run a program at
// once, and no more than Config.MaxTotalMemoryBytes (default 2 GiB) holds at MaxMemoryBytes each, so
// the workers running programs use at most MaxTotalMemoryBytes together (the PoolSize idle ones,
// each a warm engine, come on top). A run beyond the cap waits for a running one to end; the wait
// counts in its Timeout, and a run whose Timeout passes while it waits fails with kind "timeout"
// without having started. A worker caps its run's heap (Config.MaxHeapBytes) at half of
// MaxMemoryBytes, and an isolated runtime's Config reports that value.
//
// A worker is the host's own binary, started again. The contract: when the environment variable
// DSH_CODERUNTIME_WORKER is set (to the protocol version), this package's init serves one run on
// file descriptors 3 and 4 and exits the process, before the packages that import it are
// initialized and before main; without the variable, init does nothing. So any binary that imports
// this package (a test binary too) can be a worker, and nothing else is needed to enable
// isolation. The parent sets the variable only in its workers' environment, and a worker drops it
// at once. A worker runs with a Go memory limit at three quarters of MaxMemoryBytes, at most two
// threads running Go code, and, on Linux, as the first choice of the kernel's out-of-memory
// killer.
//
// # Engines, and the default
//
// Config.Engine picks the JavaScript engine: "goja" ([Goja], the default) or "quickjs" ([QuickJS],
// QuickJS translated to Go by modernc.org/quickjs, no cgo). Config.Isolation is an independent
// choice: "process" (the default of [NewRuntime] and [Plugin]) or "none" (in process, [New] and
// [NewQuickJS]). Every combination passes the same conformance suite (hostile programs with the
// failure kind each must end with, and the language features that must work or fail loudly),
// except where a combination's documented gaps say otherwise:
//
//   - goja in process is for trusted code only. goja has no memory limit and checks its interrupt
//     only between instructions, so a few built-ins (Array.prototype.flat over a huge array, a
//     regexp2 match over a long string, whose timeout goja reads as "no match") can outlast the
//     budgets or exhaust memory. It refuses BigInt and Unicode property escapes with a SyntaxError
//     rather than run them wrongly or unboundedly, and its eval is indirect (global scope).
//   - QuickJS in process caps each run's memory in the VM (Config.MaxHeapBytes), interrupts inside
//     regular expressions and supports ES2023 with BigInt; its remaining gaps are native array
//     loops (refused above 4 Mi elements) and programs that catch their own stack overflows
//     repeatedly (stopped by the CPU budget, late).
//   - Isolated, both engines are contained whatever they do: the parent's kill is the backstop.
//
// The default is chosen by safety first, then speed. Isolation is what makes a model's program
// harmless to the host, so it is the default for both engines. Between the engines, isolated, the
// safety is the same (the parent enforces the limits), and so, within the noise, is the speed:
//
//	go test -run '^$' -bench BenchmarkIsolation -benchtime 20x ./codeRuntime/
//
// on 2 virtual CPUs (AMD EPYC, Linux) under a load average of 15 to 20 from other work, gave per run
// (goja / QuickJS): an empty program 16.5 / 17.0 ms isolated and 2.7 / 2.6 ms in process; 1,000
// sequential binding calls 249 / 233 ms isolated and 18 / 41 ms in process. Expect a quiet machine
// to be several times faster; the ratios are what the choice rests on. The default engine stays
// goja (the faster one in process, and the one with the longer record here). For untrusted code
// that must run in process, choose QuickJS.
//
// Locale: neither engine has locale data, so the locale-sensitive built-ins
// (Number.prototype.toLocaleString, Date.prototype.toLocaleString, toLocaleDateString and
// toLocaleTimeString, and in QuickJS String.prototype.localeCompare) answer as en-US does (with
// the date's local time zone, or the option timeZone "UTC") and throw a RangeError for any other
// locale, option or (localeCompare) text other than ASCII letters, digits and spaces: a program
// gets the right value or an error it can see, never a plausible wrong one (see locale.js).
//
// Bounds before parsing: program text is scanned in one linear pass (strings, templates,
// comments and regexp literals understood) before esbuild sees it: more than 256 KiB, or nesting
// (brackets, or the operators of one unfinished expression) deeper than 1,000, fails with kind
// "limit" ([ErrSourceBounds]) instead of overflowing a parser's stack or making goja's compiler
// run for minutes. In goja, eval, Function and the async and generator Function constructors scan
// their text the same way before it compiles (QuickJS's own parser bounds its recursion and
// fails such text with a SyntaxError). Compile time counts against the busy-CPU budget.
//
// # What each combination contains
//
// The conformance suite's results per combination (engine/isolation). Regenerate after changing
// a table or a combination's gaps:
//
//	go test ./codeRuntime/ -run TestConformanceDocTable -update-conformance-doc
//
// Every combination passes all 12 settlement cases (no binding call reaches a binding after
// the program settled), the total caps on the amplifiers, the hostile binding errors and the
// error positions. The hostile programs and language features, with the cases each
// combination skips or fails loudly and why:
//
//	goja/none: hostile programs ended as required 23 of 32; language features working 25 of 28
//	  skipped "Array.from of a big string": Array.from of a string builds the array natively
//	  skipped "JSON.parse of 100 MB": JSON.parse builds the value natively
//	  skipped "Object.entries of a 32 Mi string": Object.entries builds every pair natively
//	  skipped "concat of many big arrays": Array.prototype.concat copies natively
//	  skipped "concat pre-size": String.prototype.concat pre-sizes its buffer natively
//	  skipped "flat": Array.prototype.flat copies natively
//	  skipped "join above 2^20 elements": join's length guard stops summing above 2^20 elements
//	  skipped "regexp over 1 Mi characters": a regexp match runs natively; regexp2's match timeout is process-wide and reads as no match
//	  skipped "replaceAll": replaceAll builds its result natively
//	  fails loudly "BigInt arithmetic": BigInt is refused: its operators allocate without bound in one native step
//	  fails loudly "Unicode property escape that works or fails loudly": goja's regexp engines do not implement Unicode property escapes
//	  fails loudly "WeakRef keeps its target during the job": goja has no WeakRef (a ReferenceError)
//	goja/process: hostile programs ended as required 32 of 32; language features working 25 of 28
//	  fails loudly "BigInt arithmetic": BigInt is refused: its operators allocate without bound in one native step
//	  fails loudly "Unicode property escape that works or fails loudly": goja's regexp engines do not implement Unicode property escapes
//	  fails loudly "WeakRef keeps its target during the job": goja has no WeakRef (a ReferenceError)
//	quickjs/none: hostile programs ended as required 31 of 32; language features working 28 of 28
//	  skipped "operator chain via eval": eval'd text is not bounds-checked; QuickJS runs this program to completion (harmlessly)
//	quickjs/process: hostile programs ended as required 32 of 32; language features working 28 of 28
//
// (Generated by TestConformanceDocTable: do not edit by hand.)
//
// # The goja backend
//
// [Goja] strips TypeScript with esbuild (api.Transform, TS loader, target ES2020, so async/await is
// kept as goja runs it natively) and runs the result in a fresh goja.Runtime per run, created and used
// only on the goroutine that called Run. Binding calls run on a small per-run pool of worker goroutines
// (at most MaxConcurrentCalls, reused from call to call) with a run-scoped context; their completions
// are sent back and settle the program's promises on the run goroutine, which runs an event loop until
// the program's promise settles. When the run settles for any reason (return, throw, budget,
// cancellation), the run-scoped context is cancelled and Run waits for every binding goroutine it
// started before returning. A Goja keeps a small bounded cache of compiled programs keyed by source;
// compiled programs are immutable, so nothing of one run reaches another.
//
// Source positions: the program is wrapped as the body of an async arrow function (the wrapper opens
// on its own line), transformed with a source map, and the map is shifted by that one line before
// goja reads it (inline), so stack traces, error.stack inside the program, and [Failure] Line/Column
// all refer to the program the model wrote. Both engines report a failure at the same place: a new
// expression at its new keyword (QuickJS records the call at its argument list; the host moves it),
// a failed import() at its import keyword (goja refuses import() as a syntax error; QuickJS runs the
// program up to it and rejects it with no stack, and the host finds the first import of that name).
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
// budgets interrupt it; a binding result nested deeper rejects that call with INVALID_RESULT; a
// regexp2 match (patterns with backreferences or lookaround) gives up after 250ms, finding nothing,
// once the program has called [LimitRegexpMatchTime]. That last limit is process-wide, because goja
// offers no per-runtime setting, so it is an explicit opt-in: importing this package changes no
// process-wide setting, and without the call a catastrophic regular expression can hold Run past
// its budgets.
//
// Memory: goja has no per-runtime memory limit, and Go cannot attribute heap to a goroutine. The
// defences are therefore indirect: the busy-CPU budget bounds how long a program can allocate, output
// sizes are capped, amplifying built-ins are capped as above, and a heap watchdog samples the process
// heap (runtime/metrics, /memory/classes/heap/objects:bytes) while a run is active and interrupts the
// run with [ErrHeapLimit] when it exceeds [Config].MaxHeapBytes. That ceiling is process-wide: when
// the host itself is over it, every run fails with kind "limit". A single native call (for example a
// huge Array.prototype.concat or String.prototype.replaceAll) can still allocate between two samples;
// run untrusted programs in a process with a GOMEMLIMIT and headroom.
package coderuntime
