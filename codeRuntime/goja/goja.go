package goja

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Runtime is the goja engine, a [coderuntime.Runtime] in the host process: TypeScript stripped by esbuild, run by goja. Safe for concurrent use:
// each Run gets a fresh goja.Runtime and shares no mutable state with other
// runs (compiled programs, which are immutable, are cached by source; see programCache). After a
// run, one VM is prepared ahead on a background goroutine (prelude, guards and console set up,
// none of a program's code run) for the next run, which then skips that setup; each VM serves
// one run only. Close stops that and waits for it.
//
// Its budgets hold against every program only in a process that called [LimitRegexpMatchTime]
// before the first Run (see the package doc, "Native loops").
type Runtime struct {
	cfg      coderuntime.Config
	programs programCache
	maxDepth int // the nesting limit of its runs: maxNestingDepth, lowered only by tests
	spare    spareVM
}

var _ coderuntime.Runtime = (*Runtime)(nil)

// NewInProcess returns a goja runtime, in the host process (for trusted code only: see the
// package doc; isolated.New is the default), with cfg's limits (zero fields take their defaults), or the error
// cfg.Validate reports.
func NewInProcess(cfg coderuntime.Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Runtime{cfg: cfg.WithDefaults(), maxDepth: jsengine.MaxNestingDepth}, nil
}

// Close stops preparing VMs ahead (see [Runtime]), waits for one being prepared and drops the one
// held, so that no goroutine of the runtime outlives it. Runs after Close still work (each sets up
// its own VM). Close is idempotent and always returns nil.
func (g *Runtime) Close() error {
	g.spare.close()
	return nil
}

// Config returns the effective limits (defaults filled in).
func (g *Runtime) Config() coderuntime.Config { return g.cfg }

// Language returns "typescript".
func (g *Runtime) Language() string { return "typescript" }

// Run runs p on the calling goroutine and returns its Result or a *Failure; see [coderuntime.Runtime].
//
// Cancelling ctx interrupts the program (kind "abort", or "timeout" for a deadline). When the
// program settles for any reason, the context handed to bindings is cancelled and Run waits for every
// binding call it started to return before it returns.
func (g *Runtime) Run(ctx context.Context, p coderuntime.Program) (res *coderuntime.Result, err error) {
	return g.RunTransformed(ctx, p, jsengine.Transformed{})
}

// RunTransformed is Run with p's TypeScript already transformed (pre.JS, when not empty, must be
// the transform of p.Source): the isolated runtime's worker process calls it with the transform
// its parent made and cached, so that it does not transform again. Only the code runtime's
// packages can make a non-empty pre.
func (g *Runtime) RunTransformed(ctx context.Context, p coderuntime.Program, pre jsengine.Transformed) (res *coderuntime.Result, err error) {
	if err := jsengine.ValidateProgram(p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, jsengine.ContextFailure(err, nil)
	}
	// Compiling runs outside the VM, where no interrupt reaches; the bounds scan keeps it short, and
	// its time counts against the busy-CPU budget.
	start := time.Now()
	prg, f := g.programs.compile(p.Source, pre)
	if f != nil {
		return nil, f
	}
	return g.execute(ctx, prg, p, time.Since(start))
}

// run is the state of one Run. Everything but done, work, wg and the watchdog is touched only on the
// run goroutine.
type run struct {
	cfg coderuntime.Config
	vm  *goja.Runtime
	h   helpers

	main    *goja.Promise
	settled bool

	jsengine.CallPool
	pending int
	// promises settle the binding calls in flight, by their call's Slot (see holdPromise);
	// freeSlots are the slots free for reuse.
	promises  []callPromise
	freeSlots []int

	logs     []coderuntime.Log
	logBytes int

	// unhandled are the promises rejected with no handler (yet), in rejection order; a handler
	// attached later removes one. At settlement each left is noted in the logs.
	unhandled []*goja.Promise

	maxDepth  int // the nesting limit (see maxNestingDepth)
	joinDepth int // nesting of the guarded Array.prototype.join / toLocaleString in progress

	// interrupted is set (from any goroutine) when the run was interrupted: a budget ran out, ctx
	// ended or the heap watchdog fired. Native code that loops without VM instructions (argJSON)
	// reads it to stop early; the VM stops at its next instruction anyway.
	interrupted atomic.Bool
	// argW serializes binding arguments (see argJSON).
	argW argJSON
	// lastStr and lastStrV are the last binding result that was a short JSON string and the value it
	// decoded to: a tool answering the same string call after call reuses the value (a string is a
	// primitive, so sharing it is not observable) instead of allocating it again.
	lastStr  []byte
	lastStrV goja.Value

	inVM     bool
	cpuTimer *time.Timer // interrupts the VM when the busy-CPU budget is used (see enter)
	// cpuMu guards the budget's state, which cpuTimer's function reads.
	cpuMu    sync.Mutex
	cpuLeft  time.Duration // the budget left, as of the last exit from the VM
	cpuIn    bool          // the run goroutine is in the VM, since cpuStart
	cpuStart time.Time
	cpuArmed bool // cpuTimer is set and its function has not begun
	cpuArms  int  // how often cpuTimer was set (for tests)
	cpuUsed  bool // cpuTimer's function found the budget used and interrupted the VM
	cpuDone  bool // settlement: cpuTimer is stopped for good
}

func (g *Runtime) execute(ctx context.Context, prg *goja.Program, p coderuntime.Program, compileTime time.Duration) (res *coderuntime.Result, err error) {
	runCtx, cancelRun := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancelRun()
	bindCtx, cancelBind := context.WithCancelCause(runCtx)

	cfg := g.cfg
	if p.MaxConcurrentCalls > 0 {
		cfg.MaxConcurrentCalls = p.MaxConcurrentCalls
	}
	// A VM prepared ahead (prelude, guards, console) when there is one; the next is prepared in
	// the background once this run is over.
	r, prepareErr := g.spare.take(), error(nil)
	if r == nil {
		r = g.newRun()
		prepareErr = r.prepare()
	}
	defer g.spare.refill(g.newRun)
	r.cfg = cfg
	r.CallPool = jsengine.NewCallPool(bindCtx, cfg.MaxConcurrentCalls)
	r.cpuLeft = g.cfg.CPUBudget - compileTime
	vm := r.vm
	r.cpuTimer = time.AfterFunc(time.Duration(math.MaxInt64), r.cpuCheck)
	stopAfter := func() bool { return false }
	stopWatchdog := func() {}

	// Settlement, whatever the path: stop interrupting, cancel in-flight bindings, drain them.
	defer func() {
		stopAfter()
		r.settled = true
		cancelBind(coderuntime.ErrRunSettled)
		r.Settle()
		stopWatchdog()
		r.cpuMu.Lock()
		r.cpuDone = true
		r.cpuTimer.Stop()
		r.cpuMu.Unlock()
	}()
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, &coderuntime.Failure{Kind: coderuntime.KindException, Message: fmt.Sprintf("internal error: %v", x), Logs: r.logs}
		}
	}()

	if prepareErr != nil {
		return nil, prepareErr
	}
	if err := r.install(p); err != nil {
		return nil, err
	}
	// The interrupters start once the VM is set up: setup runs none of the program's code and
	// takes a bounded time, and an interrupt landing in it would surface as a setup error instead
	// of a Failure. A context that ended meanwhile interrupts the program's first instruction.
	stopAfter = context.AfterFunc(runCtx, func() { r.interrupted.Store(true); vm.Interrupt(runCtx.Err()) })
	stopWatchdog = r.startWatchdog()
	// The program runs inside the prelude's trampoline, so goja runs the jobs it queued only after
	// r.main is known: a binding call from one of them is refused once the program settled, even
	// when it settled before its first await.
	escaped := false
	runProgram := vm.ToValue(func(goja.FunctionCall) goja.Value {
		v, err := vm.RunProgram(prg)
		if err != nil {
			throw(err)
		}
		main, ok := v.Export().(*goja.Promise)
		if !ok {
			escaped = true
			return goja.Undefined()
		}
		r.main = main
		return goja.Undefined()
	})
	if err := r.enter(func() (err error) { _, err = r.h.trampoline(goja.Undefined(), runProgram); return }); err != nil {
		return nil, r.failure(err)
	}
	if escaped || r.main == nil {
		return nil, &coderuntime.Failure{Kind: coderuntime.KindInvalidOutput, Message: "the program escaped its async wrapper", Logs: r.logs}
	}
	if f := r.loop(runCtx); f != nil {
		return nil, f
	}
	return r.result()
}

// loop waits for binding completions and settles their promises until the main promise settles.
// A call the program awaits alone before a worker began it runs on this goroutine (see
// jsengine.CallPool.ClaimAlone).
func (r *run) loop(runCtx context.Context) *coderuntime.Failure {
	for r.main.State() == goja.PromiseStatePending {
		if r.Active() == 0 {
			return &coderuntime.Failure{Kind: coderuntime.KindException, Logs: r.logs,
				Message: "the program awaits a promise that can never settle (no binding call is in flight, and there are no timers)"}
		}
		var c jsengine.Completion
		if alone := r.ClaimAlone(); alone != nil {
			// The only call in flight, not begun by a worker yet: it runs here.
			c = r.RunClaimed(alone)
			if err := runCtx.Err(); err != nil {
				// The run ended while the call ran: as when the select below sees it first.
				return jsengine.ContextFailure(err, r.logs)
			}
		} else {
			select {
			case c = <-r.Completions():
			case <-runCtx.Done():
				return jsengine.ContextFailure(runCtx.Err(), r.logs)
			}
		}
		r.Handled()
		r.pending--
		if err := r.enter(func() error { return r.complete(c) }); err != nil {
			return r.failure(err)
		}
	}
	return nil
}

// result turns the settled main promise into the Result or Failure.
func (r *run) result() (*coderuntime.Result, error) {
	r.noteUnhandled()
	if r.main.State() == goja.PromiseStateRejected {
		return nil, r.exception(r.main.Result())
	}
	v := r.main.Result()
	if v == nil || goja.IsUndefined(v) {
		return &coderuntime.Result{Logs: r.logs}, nil
	}
	if str, ok := v.(goja.String); ok && str.Length()+2 > r.cfg.MaxResultBytes {
		// Its JSON has at least as many bytes as it has UTF-16 units, plus the quotes: over the cap
		// without quoting it all.
		return nil, &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Logs: r.logs, Cause: coderuntime.ErrOutputLimit,
			Message: fmt.Sprintf("the returned value is a string of %d characters, over the %d-byte limit for its JSON", str.Length(), r.cfg.MaxResultBytes)}
	}
	var s goja.Value
	err := r.enter(func() (err error) { s, err = r.h.stringify(goja.Undefined(), v); return })
	if err != nil {
		var ex *goja.Exception
		if safeerr.AsAny(err, &ex) {
			msg, _, err := r.describe(ex.Value())
			if err != nil {
				return nil, r.failure(err)
			}
			return nil, &coderuntime.Failure{Kind: coderuntime.KindInvalidOutput, Message: "the returned value is not JSON-serializable: " + msg, Logs: r.logs, Cause: err}
		}
		return nil, r.failure(err)
	}
	if s == nil || goja.IsUndefined(s) {
		return nil, &coderuntime.Failure{Kind: coderuntime.KindInvalidOutput, Message: "the returned value is not JSON-serializable (a function or symbol)", Logs: r.logs}
	}
	out := s.String()
	if len(out) > r.cfg.MaxResultBytes {
		return nil, &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Logs: r.logs, Cause: coderuntime.ErrOutputLimit,
			Message: fmt.Sprintf("the returned value is %d bytes of JSON, over the %d-byte limit", len(out), r.cfg.MaxResultBytes)}
	}
	return &coderuntime.Result{Value: json.RawMessage(out), Logs: r.logs}, nil
}

// enter runs f (which enters the VM) under the busy-CPU budget.
//
// The budget's timer is not set per entry (a program awaiting its binding calls one by one enters
// the VM once per call): it is set when an entry finds it unset, for the budget left, so it is
// due no later than the budget could run out (time out of the VM only moves that later), and
// cpuCheck, when it fires, interrupts the VM only if the time spent in it used the budget, else
// sets it again for the rest (or leaves it unset while the run is out of the VM).
func (r *run) enter(f func() error) error {
	if r.inVM {
		return f() // nested (a native function calling back into the VM): already under the budget
	}
	r.cpuMu.Lock()
	if r.cpuLeft <= 0 {
		r.cpuMu.Unlock()
		return coderuntime.ErrCPUBudget
	}
	r.inVM, r.cpuIn = true, true
	start := time.Now()
	r.cpuStart = start
	if !r.cpuArmed {
		r.cpuArmed = true
		r.cpuArms++
		r.cpuTimer.Reset(r.cpuLeft)
	}
	r.cpuMu.Unlock()
	defer func() {
		r.cpuMu.Lock()
		r.inVM, r.cpuIn = false, false
		if r.cpuUsed {
			// The interrupt either stopped f or is pending for the next entry.
			r.cpuLeft = 0
		} else {
			r.cpuLeft -= time.Since(start)
		}
		r.cpuMu.Unlock()
	}()
	return f()
}

// cpuCheck is cpuTimer's function (see enter): it interrupts the VM when the run goroutine is in
// it and has used the budget, sets the timer again for the rest when it has not, and leaves it
// unset while the run is out of the VM (the next entry sets it).
func (r *run) cpuCheck() {
	r.cpuMu.Lock()
	defer r.cpuMu.Unlock()
	r.cpuArmed = false
	if r.cpuDone || !r.cpuIn {
		return
	}
	if left := r.cpuLeft - time.Since(r.cpuStart); left > 0 {
		r.cpuArmed = true
		r.cpuArms++
		r.cpuTimer.Reset(left)
		return
	}
	r.cpuUsed = true
	r.interrupted.Store(true)
	r.vm.Interrupt(coderuntime.ErrCPUBudget)
}

// newRun returns a run with a fresh VM, not yet prepared.
func (g *Runtime) newRun() *run {
	return &run{cfg: g.cfg, vm: goja.New(), maxDepth: g.maxDepth}
}

// prepare installs the helpers, console and guards, and removes what must not be reachable: all
// of a run's setup that does not depend on its program, which is why it can be done ahead. It
// runs none of a program's code; the run's limits that it reads (r.cfg) are the Runtime's, the
// same for every program.
func (r *run) prepare() error {
	vm := r.vm
	vm.SetMaxCallStackSize(r.cfg.MaxCallStackSize)
	vm.SetPromiseRejectionTracker(r.trackRejection)
	// eval and new Function would otherwise read a source map named by a sourceMappingURL comment
	// from the file system.
	vm.SetParserOptions(parser.WithDisableSourceMaps)

	if err := r.loadPrelude(); err != nil {
		return err
	}

	global := vm.GlobalObject()
	// goja builds Promise and its prototype on first use, which every program makes (its body is
	// an async function): built here, ahead of the program, like the rest of the setup.
	if _, ok := global.Get("Promise").(*goja.Object); !ok {
		return errors.New("coderuntime: no Promise")
	}
	for _, name := range removedGlobals {
		_ = global.Delete(name)
	}
	r.guardAmplifiers()
	r.guardCompilers()
	if err := r.installLocale(); err != nil {
		return fmt.Errorf("coderuntime: locale: %w", err)
	}

	console := vm.NewObject()
	for _, level := range logLevels {
		_ = console.Set(level, r.consoleFunc(level))
	}
	_ = global.DefineDataProperty("console", console, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	return nil
}

// install defines p's namespace of bindings in a prepared VM.
func (r *run) install(p coderuntime.Program) error {
	vm := r.vm
	global := vm.GlobalObject()
	ns := p.Namespace
	if ns == "" {
		ns = coderuntime.DefaultNamespace
	}
	if global.Get(ns) != nil {
		return fmt.Errorf("%w: namespace %q names an existing global", coderuntime.ErrInvalidProgram, ns)
	}
	tools := vm.NewObject()
	for name, b := range p.Bindings {
		// An own data property, even for a name like __proto__ (Set would
		// change the namespace's prototype instead).
		_ = tools.DefineDataProperty(name, r.vm.ToValue(r.bindingFunc(name, b)), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_TRUE)
	}
	return global.DefineDataProperty(ns, tools, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
}

// throw panics with a JS value, which goja turns into a catchable exception in the program; an error
// from a nested call (possibly uncatchable, like an interrupt) propagates as is.
func throw(err error) {
	panic(err)
}

// throwRange throws a RangeError with msg in the program.
func (r *run) throwRange(msg string) {
	v, err := r.h.rangeError(goja.Undefined(), r.vm.ToValue(msg))
	if err != nil {
		throw(err)
	}
	panic(v)
}
