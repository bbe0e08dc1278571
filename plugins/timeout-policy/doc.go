// Package timeoutpolicy is the reference tools/execute wrapper: it bounds a
// tool body by the tool's cooperative time budget. Its import path is
// github.com/dsh-go/dsh/plugins/timeout-policy; the directory keeps the
// user's name, the package is named timeoutpolicy (import it under that
// name or an alias of your choice).
//
// Load [Plugin] with a [Config]:
//
//	root.Plugin(timeoutpolicy.Plugin, timeoutpolicy.Config{Default: 30 * time.Second})
//
// # What it does
//
// For every call that reaches tools/execute, the wrapper takes the tool's
// budget ([tools.Tool.Timeout]) or, when the tool declares none, the
// budget of the first [Config].Tools entry whose pattern names the tool
// (the grammar of the tool-name part of permission rules: "mcp__fs" names
// every tool of the server fs, as the rule deny: ["mcp__fs"] does), else
// [Config.Default] (zero: no budget, the call passes through untouched).
// The registry enforces a declared Timeout by itself too, per run of the
// body; the policy adds the budgets of tools that declare none, and makes
// a budget cover what the wrappers inside it do (retries, say). It derives a context with context.WithTimeoutCause whose cause
// is a fresh error private to this call, and passes only that derived
// context to next. The wrapper never changes anything else about the call:
// the arguments, the tool and the identity are the pipeline's.
//
// When next returns, the wrapper asks whether ITS deadline fired
// (context.Cause of the derived context is this call's cause). Only then,
// and only when the pipeline reported the expiry as an abort (ABORTED or
// ABORTED_BEFORE_DISPATCH), is the result replaced by a TOOL_TIMEOUT
// isError result (error.name "ToolTimeoutError"). Everything else stands:
//
//   - The caller's own deadline or cancellation that fired first is the
//     caller's: its cause is the caller's, the ABORTED result stays.
//   - A more specific failure the body already produced (a tool error with
//     its own code) is kept, as is a success a short-circuiting inner
//     wrapper returned.
//
// A tool body can tell why it was cancelled:
// errors.Is(context.Cause(ctx), timeoutpolicy.ErrTimeout) is true for this
// policy's expiry.
//
// The derived context exists only for the duration of next: the caller's
// context is what every phase after tools/execute sees (the wrapper cancels
// the derived one on return and hands nothing else on).
//
// # Cooperative budget
//
// Go cannot stop a goroutine. The budget is cooperative: the body is told
// through its context and is expected to return. A body that ignores its
// context is waited for by the pipeline (no goroutine is abandoned), and
// the overrun — how long after the deadline the body returned — is logged
// through the plugin's zerolog logger: at info level within [Config.Grace]
// (a cooperative body winding down), at warn level beyond it (an
// uncooperative body).
//
// # Composition with other wrappers
//
// tools/execute is a waterfall: listeners run in registration order and the
// first registered is the outermost ([host.Prepend] puts one first).
// Registration order therefore decides what the budget covers when a retry
// wrapper is also loaded:
//
//   - timeout policy registered BEFORE the retry wrapper (outer): one budget
//     covers all attempts together — "timeout over retries". When it fires,
//     the attempt in flight is cancelled, the retry wrapper (which runs
//     under the policy's derived context, now done) should stop retrying;
//     the result is TOOL_TIMEOUT.
//   - timeout policy registered AFTER the retry wrapper (inner): every
//     attempt gets a fresh budget — "per attempt". Each expiry is a
//     TOOL_TIMEOUT result the retry wrapper may retry.
//
// # Concurrency
//
// The wrapper keeps no per-call state outside the call's stack; it is safe
// for any number of concurrent calls.
package timeoutpolicy
