package coderuntime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2/v2"
	"github.com/dop251/goja"
	"github.com/dop251/goja/parser"
)

// Goja is the shipped [Runtime]: TypeScript stripped by esbuild, run by goja. Safe for concurrent use:
// each Run builds a fresh goja.Runtime on the calling goroutine and shares no mutable state with other
// runs (compiled programs, which are immutable, are cached by source; see programCache).
type Goja struct {
	cfg      Config
	programs programCache
	maxDepth int // the nesting limit of its runs: maxNestingDepth, lowered only by tests
}

var _ Runtime = (*Goja)(nil)

// New returns a Goja runtime with cfg's limits (zero fields take their defaults), or the error
// cfg.Validate reports.
func New(cfg Config) (*Goja, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Goja{cfg: cfg.withDefaults(), maxDepth: maxNestingDepth}, nil
}

// Config returns the effective limits (defaults filled in).
func (g *Goja) Config() Config { return g.cfg }

// Language returns "typescript".
func (g *Goja) Language() string { return "typescript" }

// Run runs p on the calling goroutine and returns its Result or a *Failure; see [Runtime].
//
// Cancelling ctx interrupts the program (kind "abort", or "timeout" for a deadline). When the
// program settles for any reason, the context handed to bindings is cancelled and Run waits for every
// binding call it started to return before it returns.
func (g *Goja) Run(ctx context.Context, p Program) (res *Result, err error) {
	if err := validateProgram(p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxFailure(err, nil)
	}
	prg, f := g.programs.compile(p.Source)
	if f != nil {
		return nil, f
	}
	return g.execute(ctx, prg, p)
}

func validateProgram(p Program) error {
	for name, b := range p.Bindings {
		if name == "" {
			return fmt.Errorf("%w: empty binding name", ErrInvalidProgram)
		}
		if b == nil {
			return fmt.Errorf("%w: binding %q is nil", ErrInvalidProgram, name)
		}
	}
	return nil
}

// maxNestingDepth bounds how deeply nested a value JSON.parse and JSON.stringify (the program's and
// the host's) and the recursive Array.prototype.join / toString / toLocaleString accept: goja
// implements them with Go recursion that never checks for an interrupt (and, for stringify and join,
// a cycle check linear in the depth), so an unbounded depth means a quadratic native loop or a Go
// stack overflow, a fatal error that takes the process down.
const maxNestingDepth = 10000

// maxArrayLength bounds the length of the array or array-like object a built-in that iterates over
// every index in native code (indexOf, join, forEach, Array.from, Function.prototype.apply, ...)
// accepts: no interrupt reaches a native loop, so a sparse array or an object like
// {length: 2 ** 53 - 1} would otherwise keep it busy (or allocating) beyond every budget.
const maxArrayLength = 1 << 22

// regexpMatchTimeout bounds a single regexp2 match (goja uses regexp2 for patterns Go's regexp
// cannot run: backreferences and lookaround), which backtracks in native code no interrupt reaches.
// A match that runs out finds nothing; the run's own budgets then apply.
const regexpMatchTimeout = 250 * time.Millisecond

func init() {
	// regexp2 reads it when compiling a pattern; goja offers no per-runtime setting. It is
	// process-wide, but nothing else in this module uses regexp2, and "forever" is never wanted.
	if regexp2.DefaultMatchTimeout > regexpMatchTimeout {
		regexp2.DefaultMatchTimeout = regexpMatchTimeout
	}
}

// helpers are the prelude's functions, captured before the program runs so it cannot replace them.
type helpers struct {
	format, describe, makeError, stringify, parse, rangeError goja.Callable
}

// preludeSource is a function of the nesting limit that builds, without leaving anything global,
// the helpers the host calls into the VM with.
var preludeSource = `(function (MAX_DEPTH) {
	"use strict";
	var nativeStringify = JSON.stringify, parse = JSON.parse, ErrorCtor = Error, RangeErrorCtor = RangeError,
		defineProperty = Object.defineProperty, StringCtor = String, isArray = Array.isArray,
		apply = Reflect.apply,
		tagOf = Function.prototype.call.bind(Object.prototype.toString), hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
	// stringify is JSON.stringify through a replacer function: goja's native stringify never checks
	// for an interrupt and its cycle check is linear in the depth, so without a JavaScript call per
	// value a deep structure keeps it busy (quadratic, on a Go stack as deep as the value) beyond
	// every budget. The replacer makes each value an interrupt point and refuses values nested more
	// than MAX_DEPTH levels. A list replacer is emulated (plain objects keep the list's key order).
	// cur is the state of the stringify in progress (saved and restored around a nested one, which
	// a replacer or toJSON may start): one shared guard function instead of a closure per call,
	// which in goja costs more than the stringify of a small value.
	var cur = null, states = [], depth = 0;
	function guard(key, v) {
		var st = cur;
		if (st.fn !== null) v = apply(st.fn, this, [key, v]);
		if (v === null || typeof v !== "object") return v;
		var stack = st.stack, holder = this;
		while (stack.length > 0 && stack[stack.length - 1] !== holder) stack.pop();
		var list = st.list;
		if (list !== null && !isArray(v)) {
			var tag = tagOf(v);
			if (tag !== "[object Number]" && tag !== "[object String]" && tag !== "[object Boolean]" && tag !== "[object BigInt]") {
				var o = {};
				for (var j = 0; j < list.length; j++) {
					var p = list[j], pv = v[p];
					if (pv !== undefined) defineProperty(o, p, {value: pv, writable: true, enumerable: true, configurable: true});
				}
				v = o;
			}
		}
		stack.push(v);
		if (stack.length > MAX_DEPTH) throw new RangeErrorCtor("JSON.stringify: the value is nested more than " + MAX_DEPTH + " levels deep");
		return v;
	}
	function stringify(value, replacer, space) {
		// One state per nesting level, reused (a run stringifies every binding argument).
		var st = states[depth];
		if (st === undefined) {
			st = {fn: null, list: null, stack: []};
			states[depth] = st;
		}
		if (typeof replacer === "function") {
			st.fn = replacer;
		} else if (isArray(replacer)) {
			var list = [], seen = {};
			for (var i = 0; i < replacer.length; i++) {
				var it = replacer[i], t = typeof it, k;
				if (t === "string") k = it;
				else if (t === "number") k = StringCtor(it);
				else if (t === "object" && it !== null && (tagOf(it) === "[object String]" || tagOf(it) === "[object Number]")) k = StringCtor(it);
				else continue;
				if (!hasOwn(seen, k)) { seen[k] = true; list.push(k); }
			}
			st.list = list;
		}
		var prev = cur;
		cur = st;
		depth++;
		try {
			return nativeStringify(value, guard, space);
		} finally {
			depth--;
			cur = prev;
			st.fn = null;
			st.list = null;
			st.stack.length = 0;
		}
	}
	function errText(e) {
		var name = e.name, msg = e.message;
		name = name === undefined ? "Error" : StringCtor(name);
		msg = msg === undefined ? "" : StringCtor(msg);
		return msg ? name + ": " + msg : name;
	}
	function fmt(v) {
		var t = typeof v;
		if (t === "string") return v;
		if (t === "undefined") return "undefined";
		if (t === "function") return "[Function: " + (v.name ? StringCtor(v.name) : "(anonymous)") + "]";
		if (t === "bigint") return StringCtor(v) + "n";
		if (t === "symbol") return v.toString();
		if (v === null || t !== "object") return StringCtor(v);
		if (v instanceof ErrorCtor) return errText(v);
		try { var s = stringify(v); if (s !== undefined) return s; } catch (e) {}
		try { return StringCtor(v); } catch (e) { return "[object]"; }
	}
	function format() {
		var s = "";
		for (var i = 0; i < arguments.length; i++) { if (i > 0) s += " "; s += fmt(arguments[i]); }
		return s;
	}
	function describe(e) {
		try {
			if (e !== null && typeof e === "object" && (e instanceof ErrorCtor || typeof e.message === "string")) {
				var st = e.stack;
				return [errText(e), typeof st === "string" ? st : ""];
			}
			return ["Uncaught " + fmt(e), ""];
		} catch (x) {
			return ["Uncaught exception (not printable)", ""];
		}
	}
	function makeError(message, code, name, details) {
		var e = new ErrorCtor(message);
		if (code) defineProperty(e, "code", {value: code, writable: true, enumerable: true, configurable: true});
		if (name) defineProperty(e, "name", {value: name, writable: true, enumerable: false, configurable: true});
		if (details) {
			var keys = Object.keys(details);
			for (var i = 0; i < keys.length; i++) {
				var k = keys[i];
				if (k === "message" || k === "code" || k === "name" || k === "stack") continue;
				defineProperty(e, k, {value: String(details[k]), writable: true, enumerable: true, configurable: true});
			}
		}
		return e;
	}
	function rangeError(message) { return new RangeErrorCtor(message); }
	defineProperty(JSON, "stringify", {value: stringify, writable: true, enumerable: false, configurable: true});
	return [format, describe, makeError, stringify, parse, rangeError];
})`

var prelude = sync.OnceValue(func() *goja.Program {
	return goja.MustCompile("prelude.js", preludeSource, true)
})

// removedGlobals are deleted from every runtime: binary buffers allocate gigabytes in one native
// call, which no watchdog can interrupt.
var removedGlobals = []string{
	"GoError", // goja's wrapper for Go errors; nothing the program needs
	"ArrayBuffer", "SharedArrayBuffer", "DataView",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
}

var logLevels = []string{"log", "info", "warn", "error", "debug"}

// call is one binding call.
type call struct {
	name    string
	fn      Binding
	args    json.RawMessage
	resolve func(any) error
	reject  func(any) error
}

type completion struct {
	c      *call
	result json.RawMessage
	err    error
}

// run is the state of one Run. Everything but done, work, wg and the watchdog is touched only on the
// run goroutine.
type run struct {
	cfg Config
	vm  *goja.Runtime
	h   helpers

	bindCtx context.Context
	main    *goja.Promise
	settled bool

	done    chan completion
	work    chan *call // started calls, for idle workers; closed at settlement
	workers int        // worker goroutines started; those not running a call wait on work
	queue   []*call
	active  int
	pending int
	wg      sync.WaitGroup

	logs     []Log
	logBytes int

	maxDepth  int // the nesting limit (see maxNestingDepth)
	joinDepth int // nesting of the guarded Array.prototype.join / toLocaleString in progress

	inVM     bool
	cpuLeft  time.Duration
	cpuTimer *time.Timer
}

func (g *Goja) execute(ctx context.Context, prg *goja.Program, p Program) (res *Result, err error) {
	runCtx, cancelRun := context.WithTimeout(ctx, g.cfg.Timeout)
	defer cancelRun()
	bindCtx, cancelBind := context.WithCancelCause(runCtx)

	cfg := g.cfg
	if p.MaxConcurrentCalls > 0 {
		cfg.MaxConcurrentCalls = p.MaxConcurrentCalls
	}
	r := &run{
		cfg:      cfg,
		vm:       goja.New(),
		bindCtx:  bindCtx,
		done:     make(chan completion, cfg.MaxConcurrentCalls),
		work:     make(chan *call, cfg.MaxConcurrentCalls),
		cpuLeft:  g.cfg.CPUBudget,
		maxDepth: g.maxDepth,
	}
	vm := r.vm
	r.cpuTimer = time.AfterFunc(time.Duration(math.MaxInt64), func() { vm.Interrupt(ErrCPUBudget) })
	stopAfter := func() bool { return false }
	stopWatchdog := func() {}

	// Settlement, whatever the path: stop interrupting, cancel in-flight bindings, drain them.
	defer func() {
		stopAfter()
		r.settled = true
		cancelBind(ErrRunSettled)
		close(r.work)
		r.wg.Wait()
		r.deliverQueued()
		stopWatchdog()
		r.cpuTimer.Stop()
	}()
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, &Failure{Kind: KindException, Message: fmt.Sprintf("internal error: %v", x), Logs: r.logs}
		}
	}()

	if err := r.setup(p); err != nil {
		return nil, err
	}
	// The interrupters start once the VM is set up: setup runs none of the program's code and
	// takes a bounded time, and an interrupt landing in it would surface as a setup error instead
	// of a Failure. A context that ended meanwhile interrupts the program's first instruction.
	stopAfter = context.AfterFunc(runCtx, func() { vm.Interrupt(runCtx.Err()) })
	stopWatchdog = r.startWatchdog()
	var v goja.Value
	if err := r.enter(func() (err error) { v, err = vm.RunProgram(prg); return }); err != nil {
		return nil, r.failure(err)
	}
	main, ok := v.Export().(*goja.Promise)
	if !ok {
		return nil, &Failure{Kind: KindInvalidOutput, Message: "the program escaped its async wrapper", Logs: r.logs}
	}
	r.main = main
	if f := r.loop(runCtx); f != nil {
		return nil, f
	}
	return r.result()
}

// loop waits for binding completions and settles their promises until the main promise settles.
func (r *run) loop(runCtx context.Context) *Failure {
	for r.main.State() == goja.PromiseStatePending {
		if r.active == 0 {
			return &Failure{Kind: KindException, Logs: r.logs,
				Message: "the program awaits a promise that can never settle (no binding call is in flight, and there are no timers)"}
		}
		select {
		case c := <-r.done:
			r.active--
			r.pending--
			r.startQueued()
			if err := r.enter(func() error { return r.complete(c) }); err != nil {
				return r.failure(err)
			}
		case <-runCtx.Done():
			return ctxFailure(runCtx.Err(), r.logs)
		}
	}
	return nil
}

// result turns the settled main promise into the Result or Failure.
func (r *run) result() (*Result, error) {
	if r.main.State() == goja.PromiseStateRejected {
		return nil, r.exception(r.main.Result())
	}
	v := r.main.Result()
	if v == nil || goja.IsUndefined(v) {
		return &Result{Logs: r.logs}, nil
	}
	if str, ok := v.(goja.String); ok && str.Length()+2 > r.cfg.MaxResultBytes {
		// Its JSON has at least as many bytes as it has UTF-16 units, plus the quotes: over the cap
		// without quoting it all.
		return nil, &Failure{Kind: KindOutputLimit, Logs: r.logs, Cause: ErrOutputLimit,
			Message: fmt.Sprintf("the returned value is a string of %d characters, over the %d-byte limit for its JSON", str.Length(), r.cfg.MaxResultBytes)}
	}
	var s goja.Value
	err := r.enter(func() (err error) { s, err = r.h.stringify(goja.Undefined(), v); return })
	if err != nil {
		var ex *goja.Exception
		if errors.As(err, &ex) {
			msg, _ := r.describe(ex.Value())
			return nil, &Failure{Kind: KindInvalidOutput, Message: "the returned value is not JSON-serializable: " + msg, Logs: r.logs, Cause: err}
		}
		return nil, r.failure(err)
	}
	if s == nil || goja.IsUndefined(s) {
		return nil, &Failure{Kind: KindInvalidOutput, Message: "the returned value is not JSON-serializable (a function or symbol)", Logs: r.logs}
	}
	out := s.String()
	if len(out) > r.cfg.MaxResultBytes {
		return nil, &Failure{Kind: KindOutputLimit, Logs: r.logs, Cause: ErrOutputLimit,
			Message: fmt.Sprintf("the returned value is %d bytes of JSON, over the %d-byte limit", len(out), r.cfg.MaxResultBytes)}
	}
	return &Result{Value: json.RawMessage(out), Logs: r.logs}, nil
}

// enter runs f (which enters the VM) under the busy-CPU budget.
func (r *run) enter(f func() error) error {
	if r.inVM {
		return f() // nested (a native function calling back into the VM): already under the budget
	}
	if r.cpuLeft <= 0 {
		return ErrCPUBudget
	}
	r.inVM = true
	defer func() { r.inVM = false }()
	start := time.Now()
	r.cpuTimer.Reset(r.cpuLeft)
	err := f()
	if !r.cpuTimer.Stop() {
		// The timer fired: the interrupt either stopped f or is pending for the next entry.
		r.cpuLeft = 0
	} else {
		r.cpuLeft -= time.Since(start)
	}
	return err
}

// failure classifies an error that came out of the VM.
func (r *run) failure(err error) *Failure {
	var ie *goja.InterruptedError
	if errors.As(err, &ie) {
		if cause, ok := ie.Value().(error); ok {
			err = cause
		}
	}
	var so *goja.StackOverflowError
	var ex *goja.Exception
	switch {
	case errors.Is(err, ErrCPUBudget):
		return &Failure{Kind: KindTimeout, Cause: ErrCPUBudget, Logs: r.logs,
			Message: fmt.Sprintf("the program used its %s busy-CPU budget", r.cfg.CPUBudget)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return ctxFailure(err, r.logs)
	case errors.Is(err, ErrOutputLimit):
		return &Failure{Kind: KindOutputLimit, Cause: ErrOutputLimit, Logs: r.logs,
			Message: fmt.Sprintf("console output exceeded %d bytes", r.cfg.MaxLogBytes)}
	case errors.Is(err, ErrHeapLimit):
		return &Failure{Kind: KindLimit, Cause: ErrHeapLimit, Logs: r.logs,
			Message: fmt.Sprintf("the process heap exceeded %d bytes while the program ran", r.cfg.MaxHeapBytes)}
	case errors.As(err, &so):
		return &Failure{Kind: KindLimit, Cause: ErrStackDepth, Logs: r.logs,
			Message: fmt.Sprintf("maximum call stack size (%d) exceeded", r.cfg.MaxCallStackSize)}
	case errors.As(err, &ex):
		f := r.exception(ex.Value())
		if f.Line == 0 {
			for _, fr := range ex.Stack() {
				if pos := fr.Position(); pos.Filename == sourceName && pos.Line > 0 {
					f.Line, f.Column = pos.Line, pos.Column
					break
				}
			}
		}
		return f
	}
	return &Failure{Kind: KindException, Message: err.Error(), Cause: err, Logs: r.logs}
}

func ctxFailure(err error, logs []Log) *Failure {
	if errors.Is(err, context.DeadlineExceeded) {
		return &Failure{Kind: KindTimeout, Message: "the program exceeded its time budget", Cause: context.DeadlineExceeded, Logs: logs}
	}
	return &Failure{Kind: KindAbort, Message: "the run was cancelled", Cause: context.Canceled, Logs: logs}
}

// exception describes a thrown or rejected value, with the model-source position of its stack.
func (r *run) exception(v goja.Value) *Failure {
	msg, stack := r.describe(v)
	f := &Failure{Kind: KindException, Message: msg, Logs: r.logs}
	f.Line, f.Column = stackPosition(stack)
	return f
}

// describe returns "name: message" (or "Uncaught <value>") and the stack of a thrown value.
func (r *run) describe(v goja.Value) (msg, stack string) {
	if v == nil {
		v = goja.Undefined()
	}
	var out goja.Value
	err := r.enter(func() (err error) { out, err = r.h.describe(goja.Undefined(), v); return })
	if err != nil {
		return "Uncaught exception (not printable)", ""
	}
	o, ok := out.(*goja.Object)
	if !ok {
		return "Uncaught exception (not printable)", ""
	}
	return o.Get("0").String(), o.Get("1").String()
}

var stackPosRe = regexp.MustCompile(regexp.QuoteMeta(sourceName) + `:(\d+):(\d+)`)

// stackPosition finds the innermost frame of the model's program in a goja stack string.
func stackPosition(stack string) (line, col int) {
	for _, l := range strings.Split(stack, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "at ") {
			continue
		}
		m := stackPosRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		line, _ = strconv.Atoi(m[1])
		col, _ = strconv.Atoi(m[2])
		if line > 0 {
			return line, col
		}
	}
	return 0, 0
}

// setup installs the helpers, console, namespace and guards, and removes what must not be reachable.
func (r *run) setup(p Program) error {
	vm := r.vm
	vm.SetMaxCallStackSize(r.cfg.MaxCallStackSize)
	// eval and new Function would otherwise read a source map named by a sourceMappingURL comment
	// from the file system.
	vm.SetParserOptions(parser.WithDisableSourceMaps)

	pv, err := vm.RunProgram(prelude())
	if err != nil {
		return fmt.Errorf("coderuntime: prelude: %w", err)
	}
	build, ok := goja.AssertFunction(pv)
	if !ok {
		return errors.New("coderuntime: the prelude is not a function")
	}
	hv, err := build(goja.Undefined(), vm.ToValue(r.maxDepth))
	if err != nil {
		return fmt.Errorf("coderuntime: prelude: %w", err)
	}
	ho := hv.(*goja.Object)
	fns := []*goja.Callable{&r.h.format, &r.h.describe, &r.h.makeError, &r.h.stringify, &r.h.parse, &r.h.rangeError}
	for i, dst := range fns {
		f, ok := goja.AssertFunction(ho.Get(strconv.Itoa(i)))
		if !ok {
			return fmt.Errorf("coderuntime: prelude helper %d is not a function", i)
		}
		*dst = f
	}

	global := vm.GlobalObject()
	for _, name := range removedGlobals {
		_ = global.Delete(name)
	}
	r.guardAmplifiers()

	console := vm.NewObject()
	for _, level := range logLevels {
		_ = console.Set(level, r.consoleFunc(level))
	}
	_ = global.DefineDataProperty("console", console, goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)

	ns := p.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	if global.Get(ns) != nil {
		return fmt.Errorf("%w: namespace %q names an existing global", ErrInvalidProgram, ns)
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

func (r *run) throwRange(msg string) {
	v, err := r.h.rangeError(goja.Undefined(), r.vm.ToValue(msg))
	if err != nil {
		throw(err)
	}
	panic(v)
}

func (r *run) consoleFunc(level string) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		if r.logBytes > r.cfg.MaxLogBytes {
			r.vm.Interrupt(ErrOutputLimit)
			return goja.Undefined()
		}
		v, err := r.h.format(goja.Undefined(), fc.Arguments...)
		if err != nil {
			throw(err)
		}
		text := v.String()
		r.logBytes += len(text) + 1
		if r.logBytes > r.cfg.MaxLogBytes {
			if keep := r.cfg.MaxLogBytes - (r.logBytes - len(text) - 1); keep >= 0 && keep < len(text) {
				text = text[:keep]
			}
			r.logs = append(r.logs, Log{Level: level, Text: text})
			r.vm.Interrupt(ErrOutputLimit)
			return goja.Undefined()
		}
		r.logs = append(r.logs, Log{Level: level, Text: text})
		return goja.Undefined()
	}
}

// bindingFunc is the native function installed as namespace[name].
func (r *run) bindingFunc(name string, b Binding) func(goja.FunctionCall) goja.Value {
	return func(fc goja.FunctionCall) goja.Value {
		p, resolve, reject := r.vm.NewPromise()
		refuse := func(msg, code, errName string) goja.Value {
			e, err := r.h.makeError(goja.Undefined(), r.vm.ToValue(msg), r.vm.ToValue(code), r.vm.ToValue(errName))
			if err != nil {
				throw(err)
			}
			if err := reject(e); err != nil {
				throw(err)
			}
			return r.vm.ToValue(p)
		}
		if r.settled || (r.main != nil && r.main.State() != goja.PromiseStatePending) {
			return refuse(fmt.Sprintf("%s.%s: %v", DefaultNamespace, name, ErrRunSettled), "RUN_SETTLED", "Error")
		}
		if r.pending >= r.cfg.MaxPendingCalls {
			return refuse(fmt.Sprintf("%s: too many pending binding calls (limit %d)", name, r.cfg.MaxPendingCalls), "TOO_MANY_CALLS", "RangeError")
		}
		args := json.RawMessage("{}")
		if a := fc.Argument(0); !goja.IsUndefined(a) {
			s, err := r.h.stringify(goja.Undefined(), a)
			if err != nil {
				var ex *goja.Exception
				if errors.As(err, &ex) {
					msg, _ := r.describe(ex.Value())
					return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable: %s", name, msg), "INVALID_ARGUMENTS", "TypeError")
				}
				throw(err)
			}
			if goja.IsUndefined(s) {
				return refuse(fmt.Sprintf("%s: the argument is not JSON-serializable (a function or symbol)", name), "INVALID_ARGUMENTS", "TypeError")
			}
			args = json.RawMessage(s.String())
		}
		c := &call{name: name, fn: b, args: args, resolve: resolve, reject: reject}
		r.pending++
		if r.active < r.cfg.MaxConcurrentCalls {
			r.start(c)
		} else {
			r.queue = append(r.queue, c)
		}
		return r.vm.ToValue(p)
	}
}

func (r *run) startQueued() {
	for len(r.queue) > 0 && r.active < r.cfg.MaxConcurrentCalls {
		c := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.start(c)
	}
}

// start hands a call to an idle worker, or starts a worker when every worker is busy, so there are
// never more workers than MaxConcurrentCalls and a sequence of awaited calls reuses one goroutine (and
// its grown stack). done and work each have room for every active call, so neither send blocks, even
// after the loop stopped reading.
func (r *run) start(c *call) {
	r.active++
	if r.workers >= r.active {
		r.work <- c
		return
	}
	r.workers++
	r.wg.Add(1)
	go r.worker(c)
}

// deliverQueued runs at settlement, after every started call returned:
// calls the program made that had not started yet are still delivered to
// their bindings, once each and in submission order, with the run's
// (cancelled) binding context, on a goroutine other than the run's. So a
// host sees every call the program made, exactly once (Code Mode records
// each as aborted before dispatch). Their results are discarded: the
// program has settled.
func (r *run) deliverQueued() {
	if len(r.queue) == 0 {
		return
	}
	queued := r.queue
	r.queue = nil
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range queued {
			_, _ = invoke(r.bindCtx, c)
		}
	}()
	<-done
}

// worker runs c, then every call handed to it, until the run settles.
func (r *run) worker(c *call) {
	defer r.wg.Done()
	for {
		res, err := invoke(r.bindCtx, c)
		r.done <- completion{c: c, result: res, err: err}
		var ok bool
		if c, ok = <-r.work; !ok {
			return
		}
	}
}

func invoke(ctx context.Context, c *call) (res json.RawMessage, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, fmt.Errorf("binding %q panicked: %v", c.name, x)
		}
	}()
	return c.fn(ctx, c.args)
}

// complete settles a binding call's promise on the run goroutine.
func (r *run) complete(cp completion) error {
	vm := r.vm
	if cp.err != nil {
		code, name := "", ""
		var coder interface{ Code() string }
		if errors.As(cp.err, &coder) {
			code = coder.Code()
		}
		var namer interface{ Name() string }
		if errors.As(cp.err, &namer) {
			name = namer.Name()
		}
		details := goja.Undefined()
		var dx ErrorDetails
		if errors.As(cp.err, &dx) {
			// A plain object of strings: no Go value reaches the program.
			obj := vm.NewObject()
			for k, v := range dx.ErrorDetails() {
				if err := obj.Set(k, v); err != nil {
					return err
				}
			}
			details = obj
		}
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(cp.err.Error()), vm.ToValue(code), vm.ToValue(name), details)
		if err != nil {
			return err
		}
		return cp.c.reject(e)
	}
	if len(bytes.TrimSpace(cp.result)) == 0 {
		return cp.c.resolve(goja.Undefined())
	}
	if v, ok := decodeJSON(vm, cp.result); ok {
		return cp.c.resolve(v)
	}
	invalid := func(why string) error {
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(fmt.Sprintf("%s: the binding returned %s", cp.c.name, why)), vm.ToValue("INVALID_RESULT"), vm.ToValue(""))
		if err != nil {
			return err
		}
		return cp.c.reject(e)
	}
	if jsonTooDeep(cp.result, r.maxDepth) {
		// goja's JSON.parse would recurse once per level on the Go stack.
		return invalid(fmt.Sprintf("JSON nested more than %d levels deep", r.maxDepth))
	}
	v, err := r.h.parse(goja.Undefined(), vm.ToValue(string(cp.result)))
	if err != nil {
		var ex *goja.Exception
		if !errors.As(err, &ex) {
			return err
		}
		e, err := r.h.makeError(goja.Undefined(), vm.ToValue(fmt.Sprintf("%s: the binding returned invalid JSON", cp.c.name)), vm.ToValue("INVALID_RESULT"), vm.ToValue(""))
		if err != nil {
			return err
		}
		return cp.c.reject(e)
	}
	return cp.c.resolve(v)
}

// guardAmplifiers caps built-ins that build a huge string in one native call.
func (r *run) guardAmplifiers() {
	vm := r.vm
	max := int64(r.cfg.MaxStringLength)
	tooLong := func() { r.throwRange("Invalid string length") }
	wrap := func(proto *goja.Object, name string, check func(fc goja.FunctionCall)) {
		orig, ok := goja.AssertFunction(proto.Get(name))
		if !ok {
			return
		}
		_ = proto.DefineDataProperty(name, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			check(fc)
			v, err := orig(fc.This, fc.Arguments...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	strProto := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	thisLen := func(fc goja.FunctionCall) int64 {
		if s, ok := fc.This.(goja.String); ok {
			return int64(s.Length())
		}
		return 1
	}
	wrap(strProto, "repeat", func(fc goja.FunctionCall) {
		n := fc.Argument(0).ToFloat()
		if n > 0 && !math.IsInf(n, 1) && float64(thisLen(fc))*math.Trunc(n) > float64(max) {
			tooLong()
		}
	})
	pad := func(fc goja.FunctionCall) {
		if n := fc.Argument(0).ToFloat(); n > float64(max) {
			tooLong()
		}
	}
	wrap(strProto, "padStart", pad)
	wrap(strProto, "padEnd", pad)

	arrProto := vm.Get("Array").ToObject(vm).Get("prototype").ToObject(vm)
	r.guardNativeLoops(wrap, arrProto)
	wrap(arrProto, "join", func(fc goja.FunctionCall) {
		o, ok := fc.This.(*goja.Object)
		if !ok {
			return
		}
		n := o.Get("length")
		if n == nil {
			return
		}
		length := n.ToFloat()
		if !(length > 0) {
			return
		}
		sepLen := 1.0
		if sep := fc.Argument(0); !goja.IsUndefined(sep) {
			if s, ok := sep.(goja.String); ok {
				sepLen = float64(s.Length())
			}
		}
		total := (length - 1) * sepLen
		if total > float64(max) {
			tooLong()
		}
		if length <= 1<<20 {
			for i := int64(0); i < int64(length); i++ {
				if s, ok := o.Get(strconv.FormatInt(i, 10)).(goja.String); ok {
					total += float64(s.Length())
					if total > float64(max) {
						tooLong()
					}
				}
			}
		}
	})
}

// guardNativeLoops refuses, with a RangeError, the calls of built-ins that would loop in native code
// over a program-chosen length or depth (see maxArrayLength and maxNestingDepth).
func (r *run) guardNativeLoops(wrap func(*goja.Object, string, func(goja.FunctionCall)), arrProto *goja.Object) {
	vm := r.vm
	tooLong := func() {
		r.throwRange(fmt.Sprintf("the array or array-like object is longer than %d elements, the limit for this built-in", maxArrayLength))
	}
	checkLen := func(v goja.Value) {
		o, ok := v.(*goja.Object)
		if !ok {
			return // a primitive: a string is bounded by MaxStringLength, others have no length
		}
		if n := o.Get("length"); n != nil && n.ToFloat() > maxArrayLength {
			tooLong()
		}
	}
	thisLen := func(fc goja.FunctionCall) { checkLen(fc.This) }
	for _, name := range []string{
		"concat", "copyWithin", "entries", "every", "fill", "filter", "flat", "flatMap", "forEach", "includes",
		"indexOf", "join", "keys", "lastIndexOf", "map", "reduce", "reduceRight", "reverse", "shift", "slice",
		"some", "sort", "splice", "toLocaleString", "toReversed", "toSorted", "toSpliced", "toString", "unshift",
		"values", "with",
	} {
		wrap(arrProto, name, thisLen)
	}
	// Array.prototype[Symbol.iterator] is the same function as values: spread and for-of reach it.
	if values := arrProto.Get("values"); values != nil {
		_ = arrProto.DefineDataPropertySymbol(goja.SymIterator, values, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	isConcatSpreadable := func(o *goja.Object) bool {
		if o.ClassName() == "Array" {
			return true
		}
		v := o.GetSymbol(goja.SymIsConcatSpreadable)
		return v != nil && v.ToBoolean()
	}
	wrap(arrProto, "concat", func(fc goja.FunctionCall) {
		for _, a := range fc.Arguments {
			if o, ok := a.(*goja.Object); ok && isConcatSpreadable(o) {
				checkLen(o)
			}
		}
	})
	arrayCtor := vm.Get("Array").ToObject(vm)
	wrap(arrayCtor, "from", func(fc goja.FunctionCall) { checkLen(fc.Argument(0)) })
	funcProto := vm.Get("Function").ToObject(vm).Get("prototype").ToObject(vm)
	wrap(funcProto, "apply", func(fc goja.FunctionCall) { checkLen(fc.Argument(1)) })
	reflect := vm.Get("Reflect").ToObject(vm)
	wrap(reflect, "apply", func(fc goja.FunctionCall) { checkLen(fc.Argument(2)) })
	wrap(reflect, "construct", func(fc goja.FunctionCall) { checkLen(fc.Argument(1)) })

	// join, toString and toLocaleString recurse through nested arrays (toString calls the join the
	// array has, so every level passes a wrapper): count the depth.
	for _, name := range []string{"join", "toLocaleString"} {
		orig, ok := goja.AssertFunction(arrProto.Get(name))
		if !ok {
			continue
		}
		_ = arrProto.DefineDataProperty(name, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			if r.joinDepth >= r.maxDepth {
				r.throwRange(fmt.Sprintf("the array is nested more than %d levels deep", r.maxDepth))
			}
			r.joinDepth++
			defer func() { r.joinDepth-- }()
			v, err := orig(fc.This, fc.Arguments...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}

	json := vm.Get("JSON").ToObject(vm)
	wrap(json, "parse", func(fc goja.FunctionCall) {
		if s, ok := fc.Argument(0).(goja.String); ok && jsonTooDeep(s.String(), r.maxDepth) {
			r.throwJSONDepth()
		}
	})
}

func (r *run) throwJSONDepth() {
	r.throwRange(fmt.Sprintf("JSON.parse: the text is nested more than %d levels deep", r.maxDepth))
}

// jsonTooDeep reports whether the JSON text s opens more than limit arrays or objects at once
// (brackets inside strings do not count). It accepts anything; JSON.parse judges validity.
func jsonTooDeep[T ~string | ~[]byte](s T, limit int) bool {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// heapSample is the metric the watchdog reads: bytes in live and not-yet-swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

var heapCeilingHit atomic.Int64 // for tests: how many runs the watchdog interrupted

// startWatchdog samples the process heap while the run is active and interrupts the VM when it is
// over the ceiling. The returned stop waits for the sampler to exit.
func (r *run) startWatchdog() (stop func()) {
	if r.cfg.MaxHeapBytes <= 0 {
		return func() {}
	}
	quit, exited := make(chan struct{}), make(chan struct{})
	limit, vm, every := uint64(r.cfg.MaxHeapBytes), r.vm, r.cfg.HeapCheckInterval
	go func() {
		defer close(exited)
		sample := []metrics.Sample{{Name: heapMetric}}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				metrics.Read(sample)
				if sample[0].Value.Kind() == metrics.KindUint64 && sample[0].Value.Uint64() > limit {
					heapCeilingHit.Add(1)
					vm.Interrupt(ErrHeapLimit)
					return
				}
			}
		}
	}()
	return func() { close(quit); <-exited }
}
