package coderuntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Runtime runs a model-written program. Safe for concurrent use: each Run is independent.
//
// Run blocks until the program's promise settles, its budget runs out or ctx is done, and until
// every binding call the run started has returned. A program that fails returns a [*Failure]; any
// other error means the Program itself was invalid (see [ErrInvalidProgram]).
type Runtime interface {
	// Language names the source language accepted, "typescript" for the shipped backend.
	Language() string
	// Run runs p. Cancelling ctx interrupts the program; the run then fails with kind "abort"
	// (or "timeout" when ctx's deadline passed).
	Run(ctx context.Context, p Program) (*Result, error)
}

// RuntimeFunc adapts a function to [Runtime] for the language named by Lang.
type RuntimeFunc struct {
	Lang string
	Fn   func(ctx context.Context, p Program) (*Result, error)
}

// Language returns f.Lang.
func (f RuntimeFunc) Language() string { return f.Lang }

// Run calls f.Fn.
func (f RuntimeFunc) Run(ctx context.Context, p Program) (*Result, error) { return f.Fn(ctx, p) }

var _ Runtime = RuntimeFunc{}

// Binding is a host function the program calls as `await tools.name(args)`.
//
// args is the JSON produced in the VM by JSON.stringify of the call's single argument (undefined
// becomes `{}`; an argument that does not survive JSON.stringify rejects that call only, and the
// binding is not called). The returned JSON is parsed in the VM and resolves the call's promise; a nil
// or empty result resolves to undefined, invalid JSON rejects the call.
//
// A returned error rejects that call's promise with a JS Error whose message is err.Error() and which
// carries a `code` property when err (or an error it wraps) implements interface{ Code() string }, and
// a `name` property from interface{ Name() string } (default "Error"). A panic is recovered and
// rejects the call the same way.
//
// Calls in flight at once run on different goroutines (a run keeps up to MaxConcurrentCalls worker
// goroutines and reuses them for later calls, so a goroutine-local assumption must not outlive one
// call). A call the program awaits while it is the only one in flight may run on the goroutine that
// called Run (the goja engine runs it there when no worker has begun it yet, saving two hand-offs),
// so a binding must not wait for that goroutine. ctx is cancelled when the run settles (return, throw, budget
// or cancellation), with cause [ErrRunSettled] when the program simply finished; the binding must then
// return promptly, because Run waits for it.
//
// A call the program makes after its promise settled (from a promise callback, a finally block or a
// callback of a binding's answer queued before the return or throw) reaches no binding: it is refused
// in the program with an Error of code "RUN_SETTLED", on every engine and isolation, and gets no
// CallSeq number. Every other call the program makes reaches its binding exactly once: calls still queued (behind
// MaxConcurrentCalls) when the run settles are delivered afterwards, in submission order, with the
// already-cancelled ctx, and their results are discarded. A host can therefore account for every
// call (Code Mode logs each).
type Binding func(ctx context.Context, args json.RawMessage) (json.RawMessage, error)

// callSeqKey is the context key of a binding call's submission number.
type callSeqKey struct{}

// CallSeq returns the submission number of the binding call that ctx was
// passed to: 1 for the first call of a run that reached its binding, 2 for
// the next, and so on, in the order the program made them (even when
// calls in flight at once reach their bindings in another order, each on
// its own goroutine). ok is false for a context without one. A host that
// runs binding calls concurrently restores submission order from it (Code
// Mode does).
func CallSeq(ctx context.Context) (n uint64, ok bool) {
	if c, isSeq := ctx.(*CallSeqContext); isSeq && c != nil {
		return c.Seq, true
	}
	n, ok = ctx.Value(callSeqKey{}).(uint64)
	return n, ok
}

// CallSeqContext is a context carrying submission number Seq for [CallSeq]: what [WithCallSeq]
// returns, as a type a runtime can keep in its own per-call state, so that numbering a call
// allocates nothing. Its Done, Err, Deadline and other values are Context's.
type CallSeqContext struct {
	context.Context
	Seq uint64
}

// Value returns Seq for CallSeq's key, else Context's value for key.
func (c *CallSeqContext) Value(key any) any {
	if _, ok := key.(callSeqKey); ok {
		return c.Seq
	}
	return c.Context.Value(key)
}

// WithCallSeq returns ctx carrying submission number n for [CallSeq]. The
// shipped runtime sets it on the context of every binding call. A runtime
// that sets it must number the calls of a run 1, 2, 3, ... in submission
// order and deliver every number to its binding exactly once (a call it
// refuses gets no number): a host may hold a call until the calls
// numbered before it arrived, or until the run's context is done.
func WithCallSeq(ctx context.Context, n uint64) context.Context {
	return &CallSeqContext{Context: ctx, Seq: n}
}

// Program is a model-written program and the host functions it may call.
type Program struct {
	// Source is TypeScript: the body of an async function (top-level await and return work).
	Source string
	// Namespace names the global object holding the bindings; default "tools". It must not name an
	// existing global (such as "JSON" or "console").
	Namespace string
	// Bindings maps a name to its host function. Names may be any non-empty string; exotic ones
	// are reached with quoted keys: `await tools["my-tool"]({})`.
	Bindings map[string]Binding
	// MaxConcurrentCalls, when positive, overrides the runtime's
	// Config.MaxConcurrentCalls for this run. 1 makes binding calls run one
	// at a time in submission order (the order the program made them, even
	// under Promise.all): Code Mode's per-run queue.
	MaxConcurrentCalls int
}

// ErrorDetails is implemented by binding errors that carry more for the
// program than a message, code and name: each entry becomes an enumerable
// string property of the Error the call rejects with (for Code Mode, the
// failed sub-call's tool as err.tool). Entries named message, code, name or
// stack are ignored. It is found through wrapping with errors.As.
type ErrorDetails interface {
	ErrorDetails() map[string]string
}

// DefaultNamespace is the namespace used when Program.Namespace is empty.
const DefaultNamespace = "tools"

// Result is what a successful run produced.
type Result struct {
	// Value is the JSON of the returned value; nil when the program returned undefined.
	Value json.RawMessage
	// Logs is the captured console output, in order.
	Logs []Log
}

// Log is one captured console call.
type Log struct {
	// Level is "log", "info", "warn", "error" or "debug".
	Level string
	// Text is the arguments formatted roughly like Node: strings raw, others as JSON or String(),
	// joined by spaces.
	Text string
}

// FailureKind classifies why a run failed.
type FailureKind string

// The failure kinds.
const (
	// KindSyntax: the program did not parse (or is not valid TypeScript).
	KindSyntax FailureKind = "syntax"
	// KindException: the program threw, or its promise rejected, or it awaited a promise nothing
	// can ever settle.
	KindException FailureKind = "exception"
	// KindTimeout: the wall-clock or busy-CPU budget ran out, or ctx's deadline passed.
	KindTimeout FailureKind = "timeout"
	// KindAbort: ctx was cancelled.
	KindAbort FailureKind = "abort"
	// KindOutputLimit: the captured logs or the returned value exceeded their caps.
	KindOutputLimit FailureKind = "output-limit"
	// KindInvalidOutput: the returned value does not survive JSON.stringify (BigInt, circular,
	// function, symbol).
	KindInvalidOutput FailureKind = "invalid-output"
	// KindLimit: another resource limit, such as call-stack depth or the heap ceiling.
	KindLimit FailureKind = "limit"
	// KindCrash: the worker process running the program crashed, was killed from outside, or
	// broke the worker protocol (isolated runtimes only). The host and later runs are unaffected.
	KindCrash FailureKind = "crash"
)

// Failure is the error a failed run returns. It is data: Kind says why, Message says what, Line and
// Column (1-based, 0 when unknown) point into the program the model wrote, and Logs holds the console
// output captured before the failure.
type Failure struct {
	Kind    FailureKind
	Message string
	Line    int
	Column  int
	Logs    []Log
	// Cause is the underlying error, if any: context.DeadlineExceeded, context.Canceled,
	// ErrCPUBudget, ErrHeapLimit, ErrOutputLimit, ...
	Cause error
}

// Error returns "<kind>: <message>" plus " (line L, column C)" when the position is known.
func (f *Failure) Error() string {
	var b strings.Builder
	b.WriteString(string(f.Kind))
	if f.Message != "" {
		b.WriteString(": ")
		b.WriteString(f.Message)
	}
	if f.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d)", f.Line, f.Column)
	}
	return b.String()
}

// Unwrap returns f.Cause, so errors.Is(err, context.DeadlineExceeded) and
// errors.Is(err, context.Canceled) work for timeouts and aborts.
func (f *Failure) Unwrap() error { return f.Cause }

// ErrInvalidProgram is wrapped by the (non-Failure) error Run returns for a Program that cannot run
// at all: a nil binding, an empty binding name, or a namespace that names an existing global.
var ErrInvalidProgram = errors.New("coderuntime: invalid program")

// ErrRunSettled is the cause of a binding's context when the run settled normally, and the message
// of the rejection a binding call gets when it arrives after the run settled.
var ErrRunSettled = errors.New("coderuntime: run settled")

// ErrCPUBudget is the cause of a timeout failure when the busy-CPU budget (time spent executing
// JavaScript, excluding time waiting on bindings) ran out. errors.Is(ErrCPUBudget,
// context.DeadlineExceeded) is true, so every timeout matches context.DeadlineExceeded.
var ErrCPUBudget error = cpuBudgetError{}

type cpuBudgetError struct{}

func (cpuBudgetError) Error() string        { return "coderuntime: busy-CPU budget exhausted" }
func (cpuBudgetError) Is(target error) bool { return target == context.DeadlineExceeded }
func (cpuBudgetError) Timeout() bool        { return true }
func (cpuBudgetError) Temporary() bool      { return false }

// ErrHeapLimit is the cause of a limit failure when the heap watchdog saw the process heap above
// Config.MaxHeapBytes.
var ErrHeapLimit = errors.New("coderuntime: heap ceiling exceeded")

// ErrOutputLimit is the cause of an output-limit failure.
var ErrOutputLimit = errors.New("coderuntime: output limit exceeded")

// ErrStackDepth is the cause of a limit failure when the call stack exceeded Config.MaxCallStackSize.
var ErrStackDepth = errors.New("coderuntime: maximum call stack size exceeded")

// ErrSourceBounds is the cause of a limit failure when the program text (or text passed to eval or
// a Function constructor) is longer than 256 KiB or nested more than 1,000 levels deep, counting both
// brackets and the operators of one expression.
var ErrSourceBounds = errors.New("coderuntime: program text over its size or nesting limit")
