// Package coderuntime is the code-execution seam of Code Mode: the [Runtime] interface a
// model-written [Program] runs through, the [Binding]s it calls, its [Result] or [*Failure], the
// [Config] every implementation reads, and [Service], through which a code-runtime plugin provides
// its runtime. It imports the standard library only (and package host, for the service key): no
// engine is linked by importing it.
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
// # Implementations, chosen by import
//
// The engines and the isolation are packages of their own, linked only into a program that
// imports them:
//
//   - codeRuntime/isolated: the default and the safe choice. isolated.New runs each program in a
//     worker process the host can kill; isolated.NewFromConfig returns what a Config selects
//     (isolated unless Isolation is "none"); isolated.Plugin is the code-runtime plugin providing it
//     through [Service]. A program that uses it calls isolated.ServeIfWorker first thing in main.
//     It imports both engines (a worker runs the one Config.Engine names).
//   - codeRuntime/goja: goja.NewInProcess, goja in the host process, for trusted code only.
//   - codeRuntime/quickjs: quickjs.NewInProcess, QuickJS (translated to Go, no cgo) in the host
//     process, with a per-run memory cap.
//
// The shared JavaScript plumbing (the TypeScript transform, source bounds, source maps, the
// binding-call pool, the reading of binding errors) is codeRuntime/internal/jsengine.
//
// Who picks the default: Code Mode links no engine; it runs programs in the runtime provided
// through [Service], and fails with an actionable error when none is. The program that assembles
// the host picks one: dsh (cmd/dsh) loads isolated.Plugin (isolated goja unless configured
// otherwise), and an embedder loads isolated.Plugin or provides any [Runtime] of its own.
package coderuntime
