// Package isolated runs model-written programs in worker processes, one program per process, so
// that nothing a program makes its engine do can harm the host: it is the default
// [coderuntime.Runtime], and the safe one. [New] returns an isolated runtime, [NewFromConfig] the
// runtime a [coderuntime.Config] selects (isolated unless its Isolation is "none"), and [Plugin]
// the code-runtime plugin that provides it through coderuntime.Service. A program that uses it
// calls [ServeIfWorker] first thing in main. The package imports both engines
// (codeRuntime/goja and codeRuntime/quickjs): a worker runs the one Config.Engine names.
//
// # Isolation: worker processes
//
// [NewFromConfig] (and [Plugin], which provides what it returns) runs model-written code isolated
// by default: [Runtime] runs each program in a worker process, one program per process, so that
// nothing a program makes its engine do (a native call that allocates gigabytes, a stack overflow
// in the parser, a loop no interrupt reaches) can crash the host or hold Run past its budgets. The
// parent samples the worker's resident memory and CPU time (from /proc, on Linux) every
// HeapCheckInterval and kills it above Config.MaxMemoryBytes or past the busy-CPU budget plus a
// margin; it kills it past the wall-clock budget plus a grace period, and when it sends a message
// that is malformed or larger than its limit. The run then fails with kind "limit", "timeout",
// "output-limit" or "crash" ([KindCrash]): the host, the pool and later runs are unaffected.
// Bindings still run in the host, with the same contract as in process. Elsewhere than Linux
// there is no sampling: a worker is bounded by its Go memory limit, its engine's budgets and the
// parent's wall-clock kill; on platforms without inherited pipes (Windows) NewFromConfig runs in
// process unless isolation is asked for explicitly ([ErrIsolationUnsupported]).
//
// Workers are bounded in number and memory: at most Config.MaxWorkers (default 4) run a program at
// once, and no more than Config.MaxTotalMemoryBytes (default 2 GiB) holds at MaxMemoryBytes each, so
// the workers running programs use at most MaxTotalMemoryBytes together (the PoolSize idle ones,
// each a warm engine, come on top). A run beyond the cap waits for a running one to end; the wait
// counts in its Timeout, and a run whose Timeout passes while it waits fails with kind "timeout"
// without having started. A worker counts against both caps until it is reaped: Run returns as
// soon as the program's outcome is in and the worker killed, and the process is reaped in the
// background (Close waits for that). A worker caps its run's heap (Config.MaxHeapBytes) at half of
// MaxMemoryBytes, and an isolated runtime's Config reports that value.
//
// A worker is the host's own binary, started again with the environment variable
// DSH_CODERUNTIME_WORKER set (to the protocol version). The entry is explicit, in the style of
// Docker's reexec.Init: a program that uses isolated runtimes calls [ServeIfWorker] first thing in
// main (and a test package that does, in TestMain); in a worker process that call serves one run
// on file descriptors 3 and 4 (non-blocking: read and written with raw system calls first, then
// through the runtime's poller) and exits. A worker is ready before its program arrives (engine warmed up, and for
// goja a VM prepared ahead), and a goja worker gets the program already transformed: the parent
// transforms each program once (after the same bounds scan) and caches it by source hash. Nothing runs in a package init, so a binary that does not
// call it never turns into a worker, whatever its environment says; and [New] refuses to start
// workers in a process that did not call it ([ErrNoWorkerEntry]) rather than start copies of a
// program that would run its main. The parent sets the variable only in its workers' environment,
// and a worker drops it at once. A worker runs with a Go memory limit at three quarters of MaxMemoryBytes, one
// thread running Go code (GOMAXPROCS 1: a second would only be woken to look for work on every
// hand-off, competing with the parent for the CPU), on Linux as the first choice of the
// kernel's out-of-memory killer, and, unless the environment sets GOGC (then that stands), with
// GOGC 50 while its live heap is under 4 MB (then 100) and one collection before it is ready, so
// a run reuses memory the worker already touched rather than fault in new pages.
//
// A binding call crosses the processes twice and, in the parent, does not pass through Run's
// goroutine: the goroutine reading the worker's pipe accepts the call and, when it is the only
// call in flight (a program awaiting its calls one by one), runs the binding itself and writes the
// answer, so no goroutine or thread is woken for it. That goroutine reads with blocking reads: the
// worker's message wakes the thread waiting in the read itself, rather than a thread in the
// runtime's poller that then hands the goroutine over (and wakes another to poll meanwhile). A call still running after 100 µs hands the
// reading over to a new goroutine, so further calls start and the run's settlement cancels it
// without waiting; concurrent calls run on binding goroutines that write their answers themselves.
// In the worker, a call awaited while no goroutine reads the parent's pipe reads its answer itself,
// on the engine's goroutine: the worker's write of the call mostly hands the CPU to the parent,
// which answers meanwhile, so the raw read that follows finds the answer, with no goroutine woken
// and no turn through the scheduler; an answer not there yet is waited for up to a millisecond in
// a raw system call (ppoll, on Linux) before the call parks on the runtime's poller, so it costs
// no turn through the scheduler either. A goroutine reads for the others (and for a cancellation)
// while calls run concurrently or the program computes without calls for a millisecond; the parent
// answers the worker's settlement with a wake-up frame, so a call reading for an answer that the
// settlement cancelled returns.
//
// # Engines, and the default
//
// Config.Engine picks the JavaScript engine: "goja" ([goja.Runtime], the default) or "quickjs" ([quickjs.Runtime],
// QuickJS translated to Go by modernc.org/quickjs, no cgo). Config.Isolation is an independent
// choice: "process" (the default of [NewFromConfig] and [Plugin]) or "none" (in process,
// goja.NewInProcess and quickjs.NewInProcess). Every combination passes the same conformance suite (hostile programs with the
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
// safety is the same (the parent enforces the limits). Speed differs since the isolated goja path
// got its transform in the parent, a prepared VM and a background reap (issue 24):
//
//	go test -run '^$' -bench BenchmarkIsolation -benchtime 20x ./codeRuntime/isolated/
//
// on 2 virtual CPUs (AMD EPYC, Linux) under a load average of 15 to 20, before those changes, gave
// per run (goja / QuickJS): an empty program 16.5 / 17.0 ms isolated and 2.7 / 2.6 ms in process;
// 1,000 sequential binding calls 249 / 233 ms isolated and 18 / 41 ms in process. After them, an
// isolated goja empty run measured p10 0.57-0.69 ms and 1,000 sub-calls about 100 ms
// (BenchmarkIsolatedBeforeAfter); QuickJS workers still transform for themselves. With the call
// path above (one P in the worker, no hand-offs in the parent for calls awaited one by one), the
// same command
//
//	go test -run '^$' -bench BenchmarkIsolatedBeforeAfter -benchtime 20x ./codeRuntime/isolated/
//
// under a load average of 22 to 25 gave 1,000 sub-calls p10 68-83 ms, median 87-132 ms (main,
// alternating: p10 96-109 ms, median 114-176 ms) and empty runs p10 1.10-1.20 ms (main
// 1.10-1.26 ms). BenchmarkIsolatedFloor puts them next to a worker making the same calls with no
// engine (the pipes' and the protocol's floor) and to in-process goja (the engine's share). The default
// engine stays goja (the faster one, and the one with the longer record here). For untrusted code
// that must run in process, choose QuickJS.
//
// Locale: neither engine has locale data, so the locale-sensitive built-ins
// (Number.prototype.toLocaleString, Date.prototype.toLocaleString, toLocaleDateString and
// toLocaleTimeString, Array.prototype.toLocaleString, String.prototype.toLocaleUpperCase and
// toLocaleLowerCase, String.prototype.localeCompare) answer as en-US does (with the date's local
// time zone, or the option timeZone "UTC") and throw a RangeError for any other locale, option or
// (localeCompare in QuickJS) text other than ASCII letters, digits and spaces: a program
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
//	go test ./codeRuntime/isolated/ -run TestConformanceDocTable -update-conformance-doc
//
// Every combination passes all 12 settlement cases (no binding call reaches a binding after
// the program settled), the total caps on the amplifiers, the hostile binding errors and the
// error positions. The hostile programs and language features, with the cases each
// combination skips or fails loudly and why:
//
//	goja/none: hostile programs ended as required 23 of 32; language features working 28 of 31
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
//	goja/process: hostile programs ended as required 32 of 32; language features working 28 of 31
//	  fails loudly "BigInt arithmetic": BigInt is refused: its operators allocate without bound in one native step
//	  fails loudly "Unicode property escape that works or fails loudly": goja's regexp engines do not implement Unicode property escapes
//	  fails loudly "WeakRef keeps its target during the job": goja has no WeakRef (a ReferenceError)
//	quickjs/none: hostile programs ended as required 31 of 32; language features working 31 of 31
//	  skipped "operator chain via eval": eval'd text is not bounds-checked; QuickJS runs this program to completion (harmlessly)
//	quickjs/process: hostile programs ended as required 32 of 32; language features working 31 of 31
//
// (Generated by TestConformanceDocTable: do not edit by hand.)
package isolated
