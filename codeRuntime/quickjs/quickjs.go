package quickjs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"modernc.org/quickjs"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Runtime is a [coderuntime.Runtime] on QuickJS (modernc.org/quickjs, pure Go): TypeScript stripped by esbuild
// as for goja.Runtime, run in a fresh QuickJS VM per run. It honours the same contract as Goja (bindings,
// console capture, budgets, failure kinds), and adds a hard per-run memory limit: the VM's
// allocator refuses to grow past Config.MaxHeapBytes, so a program that allocates without bound
// gets a catchable out-of-memory InternalError, and a run that ends because of it fails with kind
// "limit" (cause [coderuntime.ErrHeapLimit]). Safe for concurrent use: each Run builds its own VM, used only
// by the goroutine that called Run (a QuickJS VM must not be used by two goroutines at once).
type Runtime struct {
	cfg      coderuntime.Config
	programs qjsCache
}

var _ coderuntime.Runtime = (*Runtime)(nil)

// NewInProcess returns a QuickJS runtime in the host process with cfg's limits (zero fields take their defaults), or the
// error cfg.Validate reports. Config.MaxHeapBytes is the per-run VM memory limit (negative: no
// limit); HeapCheckInterval is unused (no watchdog is needed).
func NewInProcess(cfg coderuntime.Config) (*Runtime, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if _, err := qjsValueLayout(); err != nil {
		return nil, err
	}
	return &Runtime{cfg: cfg.WithDefaults()}, nil
}

// Config returns the effective limits (defaults filled in).
func (q *Runtime) Config() coderuntime.Config { return q.cfg }

// Language returns "typescript".
func (q *Runtime) Language() string { return "typescript" }

// Run runs p on the calling goroutine and returns its Result or a *Failure; see [coderuntime.Runtime].
func (q *Runtime) Run(ctx context.Context, p coderuntime.Program) (*coderuntime.Result, error) {
	if err := jsengine.ValidateProgram(p); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, jsengine.ContextFailure(err, nil)
	}
	prg, f := q.programs.compile(p.Source)
	if f != nil {
		return nil, f
	}
	return q.execute(ctx, prg, p)
}

// qjsProgram is a transformed program: the JavaScript to evaluate and its map to the model's source.
// Its bytecode, compiled by the first run that evaluates it, is kept for the next runs.
type qjsProgram struct {
	js string
	sm *qjsSourceMap

	mu       sync.Mutex
	bytecode []byte
}

// eval evaluates the program in vm, from its bytecode when an earlier run compiled it. The bytecode
// is produced by this package from the transformed program, never taken from outside.
func (p *qjsProgram) eval(vm *quickjs.VM) (quickjs.Value, error) {
	p.mu.Lock()
	bc := p.bytecode
	p.mu.Unlock()
	if bc == nil {
		var err error
		if bc, err = vm.Compile(p.js, quickjs.EvalGlobal); err != nil {
			return quickjs.Value{}, err
		}
		p.mu.Lock()
		p.bytecode = bc
		p.mu.Unlock()
	}
	return vm.EvalBytecodeValue(bc)
}

// qjsPreludeBytecode is the prelude compiled once per process, in a VM of its own.
var qjsPreludeBytecode = sync.OnceValues(func() ([]byte, error) {
	vm, err := quickjs.NewVM()
	if err != nil {
		return nil, err
	}
	defer vm.Close()
	return vm.Compile(quickjsPreludeWithLocale(), quickjs.EvalGlobal)
})

// qjsStop is what a host function panics with to end the run: the VM turns the panic into an
// uncatchable exception and the panic goes on where Go called into the VM, where enter recovers it.
type qjsStop struct{ err error }

// qjsRun is the state of one QuickJS run. Everything but done, work, wg and cause is touched only
// on the run goroutine.
type qjsRun struct {
	cfg  coderuntime.Config
	vm   *quickjs.VM
	prg  *qjsProgram
	p    coderuntime.Program
	logs []coderuntime.Log
	// logBytes counts the captured console output against MaxLogBytes.
	logBytes int

	mainSettled bool
	settled     bool
	// main is the program's promise once its evaluation returned; promises reads its state.
	main     quickjs.Value
	hasMain  bool
	promises qjsPromiseReader

	jsengine.CallPool

	// cause is the first reason an interrupter (context, wall clock) stopped the run.
	cause atomic.Pointer[error]
	// stopped is closed when the run settles; interrupters watch it.
	stopped chan struct{}

	cpuLeft time.Duration

	// The prelude's helpers (see quickjsPrelude); freed before the VM closes.
	hRun, hComplete, hOutcome, hNamespace quickjs.Value
	helpers                               bool
}

func (q *Runtime) execute(ctx context.Context, prg *qjsProgram, p coderuntime.Program) (res *coderuntime.Result, err error) {
	runCtx, cancelRun := context.WithTimeout(ctx, q.cfg.Timeout)
	defer cancelRun()
	bindCtx, cancelBind := context.WithCancelCause(runCtx)

	cfg := q.cfg
	if p.MaxConcurrentCalls > 0 {
		cfg.MaxConcurrentCalls = p.MaxConcurrentCalls
	}
	vm, err := quickjs.NewVM()
	if err != nil {
		cancelBind(coderuntime.ErrRunSettled)
		return nil, &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrHeapLimit, Message: "could not create a QuickJS VM: " + err.Error()}
	}
	r := &qjsRun{
		cfg:      cfg,
		vm:       vm,
		prg:      prg,
		p:        p,
		CallPool: jsengine.NewCallPool(bindCtx, cfg.MaxConcurrentCalls),
		stopped:  make(chan struct{}),
		cpuLeft:  cfg.CPUBudget,
	}
	interrupted := make(chan struct{})
	stopAfter := func() bool { return true }
	defer func() {
		close(r.stopped)
		if !stopAfter() {
			<-interrupted // the interrupter started: wait until it saw stopped
		}
		r.settled = true
		cancelBind(coderuntime.ErrRunSettled)
		r.Settle()
		closeAfterRun(func() {
			r.freeHelpers()
			if r.hasMain {
				r.hasMain = false
				r.main.Free()
			}
			r.promises.close()
			_ = vm.Close()
		})
	}()
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, &coderuntime.Failure{Kind: coderuntime.KindException, Message: fmt.Sprintf("internal error: %v", x), Logs: r.logs}
		}
	}()

	if err := r.setup(); err != nil {
		return nil, err
	}
	stopAfter = context.AfterFunc(runCtx, func() {
		defer close(interrupted)
		r.interrupt(runCtx.Err())
	})
	var main quickjs.Value
	if err := r.enter(func() (err error) { main, err = prg.eval(vm); return err }); err != nil {
		return nil, r.failure(err, true)
	}
	// From here on a binding call is refused once main settled. The evaluation itself ran no job,
	// so main could not settle before it returned.
	r.main, r.hasMain = main, true
	err = r.enter(func() error { _, err := r.hRun.Call(quickjs.UndefinedValue, main); return err })
	if err != nil {
		return nil, r.failure(err, false)
	}
	if f := r.loop(runCtx); f != nil {
		return nil, f
	}
	return r.result()
}

// interrupt stops the program for cause: the first cause wins. The VM clears a pending interrupt
// each time Go calls into it, so the request is repeated until the run settles.
func (r *qjsRun) interrupt(cause error) {
	r.cause.CompareAndSwap(nil, &cause)
	for {
		r.vm.Interrupt()
		select {
		case <-r.stopped:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// setup registers the host functions, runs the prelude and installs the namespace.
func (r *qjsRun) setup() error {
	vm := r.vm
	if r.cfg.MaxHeapBytes > 0 {
		vm.SetMemoryLimit(uintptr(r.cfg.MaxHeapBytes))
	}
	// About one stack slot per JavaScript frame; a few more for the wrapper's own frames.
	vm.SetMaxStackSize(uintptr(r.cfg.MaxCallStackSize + 8))
	if err := vm.RegisterHostFunc("__qjsCall", r.hostCall); err != nil {
		return fmt.Errorf("coderuntime: quickjs setup: %w", err)
	}
	if err := vm.RegisterHostFunc("__qjsLog", r.hostLog); err != nil {
		return fmt.Errorf("coderuntime: quickjs setup: %w", err)
	}
	if err := vm.RegisterHostFunc("__qjsSettled", func([]any) (any, error) { r.mainSettled = true; return nil, nil }); err != nil {
		return fmt.Errorf("coderuntime: quickjs setup: %w", err)
	}
	bc, err := qjsPreludeBytecode()
	if err != nil {
		return fmt.Errorf("coderuntime: quickjs prelude: %w", err)
	}
	build, err := vm.EvalBytecodeValue(bc)
	if err != nil {
		return fmt.Errorf("coderuntime: quickjs prelude: %w", err)
	}
	hs, err := build.CallValue(quickjs.UndefinedValue, r.cfg.MaxPendingCalls, r.cfg.MaxResultBytes, r.cfg.MaxLogBytes, jsengine.MaxArrayLength, r.cfg.MaxStringLength)
	build.Free()
	if err != nil {
		return fmt.Errorf("coderuntime: quickjs prelude: %w", err)
	}
	defer hs.Free()
	dst := []*quickjs.Value{&r.hRun, &r.hComplete, &r.hOutcome, &r.hNamespace}
	for i, d := range dst {
		a, err := vm.NewAtom(strconv.Itoa(i))
		if err != nil {
			return fmt.Errorf("coderuntime: quickjs prelude: %w", err)
		}
		v, err := hs.GetPropertyValue(a)
		if err != nil {
			for _, d := range dst[:i] {
				d.Free()
			}
			return fmt.Errorf("coderuntime: quickjs prelude: %w", err)
		}
		*d = v
	}
	r.helpers = true

	ns := r.p.Namespace
	if ns == "" {
		ns = coderuntime.DefaultNamespace
	}
	names := make([]string, 0, len(r.p.Bindings))
	for name := range r.p.Bindings {
		names = append(names, name)
	}
	ok, err := r.hNamespace.Call(quickjs.UndefinedValue, ns, names)
	if err != nil {
		return fmt.Errorf("coderuntime: quickjs namespace: %w", err)
	}
	if ok != true {
		return fmt.Errorf("%w: namespace %q names an existing global", coderuntime.ErrInvalidProgram, ns)
	}
	return nil
}

func (r *qjsRun) freeHelpers() {
	if !r.helpers {
		return
	}
	r.helpers = false
	r.hRun.Free()
	r.hComplete.Free()
	r.hOutcome.Free()
	r.hNamespace.Free()
}

// enter runs f (which calls into the VM) under the busy-CPU budget and turns a host function's
// stop into its error.
func (r *qjsRun) enter(f func() error) (err error) {
	if c := r.cause.Load(); c != nil {
		return *c
	}
	if r.cpuLeft <= 0 {
		return coderuntime.ErrCPUBudget
	}
	_ = r.vm.SetEvalTimeout(r.cpuLeft)
	start := time.Now()
	defer func() {
		if x := recover(); x != nil {
			s, ok := x.(qjsStop)
			if !ok {
				panic(x)
			}
			err = s.err
		}
		r.cpuLeft -= time.Since(start)
		if c := r.cause.Load(); c != nil {
			err = *c
		} else if r.cpuLeft <= 0 && err != nil {
			err = coderuntime.ErrCPUBudget
		}
	}()
	return f()
}

// loop drains the VM's jobs and settles binding calls until the program's promise settles.
func (r *qjsRun) loop(runCtx context.Context) *coderuntime.Failure {
	for {
		if err := r.enter(r.drain); err != nil {
			return r.failure(err, false)
		}
		if r.mainSettled {
			return nil
		}
		if r.Active() == 0 {
			return &coderuntime.Failure{Kind: coderuntime.KindException, Logs: r.logs,
				Message: "the program awaits a promise that can never settle (no binding call is in flight, and there are no timers)"}
		}
		var c jsengine.Completion
		if alone := r.ClaimAlone(); alone != nil {
			// The only call in flight, not begun by a worker yet: it runs here (see ClaimAlone).
			if c = r.RunClaimed(alone); runCtx.Err() != nil {
				return jsengine.ContextFailure(runCtx.Err(), r.logs)
			}
		} else {
			select {
			case c = <-r.Completions():
			case <-runCtx.Done():
				return jsengine.ContextFailure(runCtx.Err(), r.logs)
			}
		}
		r.Handled()
		if err := r.enter(func() error { return r.complete(c) }); err != nil {
			return r.failure(err, false)
		}
	}
}

// drain runs the VM's pending jobs until none is left.
func (r *qjsRun) drain() error {
	for {
		n, err := r.vm.ExecutePendingJobs()
		if err != nil {
			if strings.HasPrefix(err.Error(), "quickjs: aborted draining") {
				continue // a self-feeding job queue: go on, under the budgets
			}
			return err
		}
		if n == 0 {
			return nil
		}
	}
}

// complete settles a binding call's promise in the VM.
func (r *qjsRun) complete(cp jsengine.Completion) error {
	id := int(cp.C.Seq)
	if cp.Err != nil {
		a := jsengine.AnswerOf(cp.Err)
		details := ""
		if a.Details != nil {
			if b, err := json.Marshal(a.Details); err == nil {
				details = string(b)
			}
		}
		_, err := r.hComplete.Call(quickjs.UndefinedValue, id, false, a.Message, a.Code, a.Name, details)
		return err
	}
	payload := strings.TrimSpace(string(cp.Result))
	if payload != "" && jsengine.JSONTooDeep(payload, jsengine.MaxNestingDepth) {
		_, err := r.hComplete.Call(quickjs.UndefinedValue, id, false,
			fmt.Sprintf("%s: the binding returned JSON nested more than %d levels deep", cp.C.Name, jsengine.MaxNestingDepth), "INVALID_RESULT", "", "")
		return err
	}
	_, err := r.hComplete.Call(quickjs.UndefinedValue, id, true, payload, "", cp.C.Name, "")
	return err
}

// hostCall is __qjsCall(name, argsJSON): it starts (or queues) a binding call and returns its id.
func (r *qjsRun) hostCall(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("coderuntime: bad host call")
	}
	name, _ := args[0].(string)
	js, _ := args[1].(string)
	b := r.p.Bindings[name]
	if b == nil || r.settled {
		return nil, errors.New("coderuntime: bad host call")
	}
	if r.hasMain && r.promises.settled(&r.main) {
		return 0, nil // the program settled: the prelude refuses the call
	}
	c := jsengine.NewCall(name, b, js)
	r.Submit(c)
	return int(c.Seq), nil
}

// hostLog is __qjsLog(level, text): it appends a log line and ends the run with ErrOutputLimit
// once the logs exceed MaxLogBytes (keeping them up to the cap).
func (r *qjsRun) hostLog(args []any) (any, error) {
	if len(args) != 2 {
		return nil, errors.New("coderuntime: bad host call")
	}
	level, _ := args[0].(string)
	text, _ := args[1].(string)
	if r.logBytes > r.cfg.MaxLogBytes {
		panic(qjsStop{coderuntime.ErrOutputLimit})
	}
	r.logBytes += len(text) + 1
	if r.logBytes > r.cfg.MaxLogBytes {
		if keep := r.cfg.MaxLogBytes - (r.logBytes - len(text) - 1); keep >= 0 && keep < len(text) {
			text = text[:keep]
		}
		r.logs = append(r.logs, coderuntime.Log{Level: level, Text: text})
		panic(qjsStop{coderuntime.ErrOutputLimit})
	}
	r.logs = append(r.logs, coderuntime.Log{Level: level, Text: text})
	return nil, nil
}

// result turns the settled program into the Result or Failure.
func (r *qjsRun) result() (*coderuntime.Result, error) {
	var out any
	if err := r.enter(func() (err error) { out, err = r.hOutcome.Call(quickjs.UndefinedValue); return err }); err != nil {
		return nil, r.failure(err, false)
	}
	s, ok := out.(string)
	if !ok || s == "" {
		return nil, r.outOfMemory("the result could not be read")
	}
	body := s[1:]
	switch s[0] {
	case '1':
		if body == "" {
			return &coderuntime.Result{Logs: r.logs}, nil
		}
		if len(body) > r.cfg.MaxResultBytes {
			return nil, &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Logs: r.logs, Cause: coderuntime.ErrOutputLimit,
				Message: fmt.Sprintf("the returned value is %d bytes of JSON, over the %d-byte limit", len(body), r.cfg.MaxResultBytes)}
		}
		return &coderuntime.Result{Value: json.RawMessage(body), Logs: r.logs}, nil
	case '2':
		msg, stack, _ := strings.Cut(body, "\x00")
		return nil, r.exception(msg, stack)
	case '3':
		if body == "" {
			return nil, &coderuntime.Failure{Kind: coderuntime.KindInvalidOutput, Message: "the returned value is not JSON-serializable (a function or symbol)", Logs: r.logs}
		}
		return nil, &coderuntime.Failure{Kind: coderuntime.KindInvalidOutput, Message: "the returned value is not JSON-serializable: " + body, Logs: r.logs}
	case '4':
		return nil, &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Logs: r.logs, Cause: coderuntime.ErrOutputLimit,
			Message: fmt.Sprintf("the returned value is a string of %s characters, over the %d-byte limit for its JSON", body, r.cfg.MaxResultBytes)}
	}
	return nil, r.outOfMemory("the result could not be read")
}

// qjsNullOOMNote follows "Uncaught null": QuickJS throws null when it runs out of memory while
// building the error itself, which the host cannot tell from a program's own throw null.
const qjsNullOOMNote = " (the program threw null, or the VM ran out of memory)"

// qjsNoModulesNote follows the ReferenceError an import(name) rejects with (esbuild lowers it to a
// require call) or a call of require: no program can load a module.
const qjsNoModulesNote = " (a program cannot load modules: import() and require are not available)"

// qjsOOM is the message QuickJS throws when the VM's memory limit refuses an allocation.
const qjsOOM = "out of memory"

func (r *qjsRun) outOfMemory(detail string) *coderuntime.Failure {
	return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrHeapLimit, Logs: r.logs,
		Message: fmt.Sprintf("the program ran out of memory (limit %d bytes): %s", r.cfg.MaxHeapBytes, detail)}
}

// exception is the Failure of a thrown value described as msg and stack.
func (r *qjsRun) exception(msg, stack string) *coderuntime.Failure {
	if strings.HasPrefix(msg, "InternalError: "+qjsOOM) {
		return r.outOfMemory(msg)
	}
	// The parser's own overflow (eval or Function recursing) is the same limit.
	if msg == "InternalError: stack overflow" || msg == "SyntaxError: stack overflow" {
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrStackDepth, Logs: r.logs,
			Message: fmt.Sprintf("maximum call stack size (%d) exceeded", r.cfg.MaxCallStackSize)}
	}
	if msg == "InternalError: string too long" {
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Logs: r.logs,
			Message: "a string grew past the engine's maximum string length (2^30 - 1 characters)"}
	}
	switch msg {
	case "Uncaught null":
		msg += qjsNullOOMNote
	case "ReferenceError: 'require' is not defined":
		msg += qjsNoModulesNote
	}
	f := &coderuntime.Failure{Kind: coderuntime.KindException, Message: msg, Logs: r.logs}
	f.Line, f.Column = r.stackPosition(stack)
	return f
}

var qjsFrameRe = regexp.MustCompile(`<eval>:(\d+):(\d+)`)

// stackPosition finds the innermost frame of the model's program in a QuickJS stack.
func (r *qjsRun) stackPosition(stack string) (int, int) {
	for _, m := range qjsFrameRe.FindAllStringSubmatch(stack, 8) {
		l, _ := strconv.Atoi(m[1])
		c, _ := strconv.Atoi(m[2])
		l, c = qjsFramePosition(r.prg.js, l, c)
		if line, col := r.prg.sm.position(l, c); line > 0 {
			return line, col
		}
	}
	return 0, 0
}

// qjsFramePosition moves a QuickJS frame's position in js (1-based line and column) to where goja
// and V8 report the same frame, before it is mapped to the model's source. js is esbuild's output:
// ASCII (esbuild escapes the rest), with parentheses after every callee and one space after new.
//
//   - A constructor call is recorded at its opening parenthesis, which the source map takes to the
//     callee (throw new Error('x') was reported at Error, column 11, not 7): it moves back over the
//     callee (a name or a chain of names) and what esbuild keeps between it and new (spaces, line
//     breaks, a block comment, a line comment ending new's line) to the new keyword.
//   - A failed property read (x.a.b with x.a undefined) is recorded at its dot, which the source map
//     takes to the object's last name (a): it moves to the property's name (b).
func qjsFramePosition(js string, line, col int) (int, int) {
	if line < 1 {
		return line, col
	}
	start := 0 // offset of the frame's line in js
	for i := 1; i < line; i++ {
		nl := strings.IndexByte(js[start:], '\n')
		if nl < 0 {
			return line, col
		}
		start += nl + 1
	}
	i := start + col - 1
	if col < 1 || i >= len(js) || (strings.IndexByte(js[start:i], '\n') >= 0) {
		return line, col
	}
	switch js[i] {
	case '.':
		if i+1 < len(js) && jsengine.IsIdentByte(js[i+1]) && !(js[i+1] >= '0' && js[i+1] <= '9') {
			return line, col + 1
		}
		return line, col
	case '(':
	default:
		return line, col
	}
	j := i // back over the callee: a name or a chain of names
	for j > 0 && (jsengine.IsIdentByte(js[j-1]) || js[j-1] == '.') {
		j--
	}
	if j == i {
		if i > 0 && js[i-1] == ']' {
			if n, ok := qjsComputedNew(js, i); ok {
				return 1 + strings.Count(js[:n], "\n"), n - strings.LastIndexByte(js[:n], '\n')
			}
		}
		return line, col
	}
	k := qjsBackOverSpace(js, j)
	if k < 3 || js[k-3:k] != "new" || (k > 3 && (jsengine.IsIdentByte(js[k-4]) || js[k-4] == '.')) || k == j {
		return line, col
	}
	n := k - 3 // the new keyword's offset
	nline := 1 + strings.Count(js[:n], "\n")
	return nline, n - strings.LastIndexByte(js[:n], '\n')
}

// qjsComputedNewReach bounds how far before a constructor call's "(" its new keyword is looked for.
const qjsComputedNewReach = 4096

// qjsComputedNew returns the offset of the new keyword whose callee, a chain of names and computed
// members ending with "]", ends at the "(" at offset i of js (esbuild's output), if there is one.
// Going back over brackets cannot tell a bracket from one in a string, so each new keyword before i
// (within qjsComputedNewReach bytes) is tried forward: after it, spaces and comments, then the
// callee read forward (strings skipped) must end exactly at i.
func qjsComputedNew(js string, i int) (int, bool) {
	lo := max(0, i-qjsComputedNewReach)
	for n := strings.LastIndex(js[lo:i], "new"); n >= 0; n = strings.LastIndex(js[lo:lo+n], "new") {
		k := lo + n
		if k > 0 && (jsengine.IsIdentByte(js[k-1]) || js[k-1] == '.') {
			continue
		}
		if qjsCalleeEnd(js, k+3) == i {
			return k, true
		}
	}
	return 0, false
}

// qjsCalleeEnd reads forward from j (just after a new keyword): at least one space or comment,
// then a name followed by any chain of .name and [ ... ] members; it returns the offset after the
// callee, or -1 when the text does not have that shape.
func qjsCalleeEnd(js string, j int) int {
	start := j
	for j < len(js) {
		switch {
		case js[j] == ' ' || js[j] == '\t' || js[j] == '\n':
			j++
			continue
		case strings.HasPrefix(js[j:], "/*"):
			e := strings.Index(js[j+2:], "*/")
			if e < 0 {
				return -1
			}
			j += 2 + e + 2
			continue
		case strings.HasPrefix(js[j:], "//"):
			e := strings.IndexByte(js[j:], '\n')
			if e < 0 {
				return -1
			}
			j += e
			continue
		}
		break
	}
	if j == start || j >= len(js) || !jsengine.IsIdentByte(js[j]) {
		return -1
	}
	for j < len(js) && jsengine.IsIdentByte(js[j]) {
		j++
	}
	for j < len(js) {
		switch js[j] {
		case '.':
			j++
			if j >= len(js) || !jsengine.IsIdentByte(js[j]) {
				return -1
			}
			for j < len(js) && jsengine.IsIdentByte(js[j]) {
				j++
			}
		case '[':
			if j = qjsSkipBracket(js, j); j < 0 {
				return -1
			}
		default:
			return j
		}
	}
	return j
}

// qjsSkipBracket returns the offset after the "]" that closes the "[" at j, skipping strings; -1
// for a text it does not follow (a template with a substitution, a slash, an unclosed bracket).
func qjsSkipBracket(js string, j int) int {
	depth := 0
	for ; j < len(js); j++ {
		switch c := js[j]; c {
		case '[', '(', '{':
			depth++
		case ']', ')', '}':
			depth--
			if depth == 0 {
				if c != ']' {
					return -1
				}
				return j + 1
			}
		case '"', '\'', '`':
			for j++; j < len(js) && js[j] != c; j++ {
				if js[j] == '\\' {
					j++
				} else if js[j] == '\n' || (c == '`' && js[j] == '$') {
					return -1
				}
			}
			if j >= len(js) {
				return -1
			}
		case '/':
			return -1
		}
	}
	return -1
}

// qjsBackOverSpace returns the offset before the spaces, line breaks and comments that end at j in
// esbuild's output: block comments, and a line comment ending the line before a line break.
func qjsBackOverSpace(js string, j int) int {
	for {
		k := j
		for k > 0 && (js[k-1] == ' ' || js[k-1] == '\t') {
			k--
		}
		switch {
		case k > 0 && js[k-1] == '\n':
			k--
			// The line before may end with a line comment: back to its //, when the line has one.
			ls := strings.LastIndexByte(js[:k], '\n') + 1
			if c := strings.Index(js[ls:k], "//"); c >= 0 {
				k = ls + c
			}
		case k >= 2 && js[k-2:k] == "*/":
			c := strings.LastIndex(js[:k-2], "/*")
			if c < 0 {
				return k
			}
			k = c
		}
		if k == j {
			return k
		}
		j = k
	}
}

// failure classifies an error that came out of the VM. compiling is true for the program's own
// evaluation, where a SyntaxError is the program's (kind syntax).
func (r *qjsRun) failure(err error, compiling bool) *coderuntime.Failure {
	switch {
	case safeerr.Is(err, coderuntime.ErrCPUBudget):
		return &coderuntime.Failure{Kind: coderuntime.KindTimeout, Cause: coderuntime.ErrCPUBudget, Logs: r.logs,
			Message: fmt.Sprintf("the program used its %s busy-CPU budget", r.cfg.CPUBudget)}
	case safeerr.Is(err, context.DeadlineExceeded), safeerr.Is(err, context.Canceled):
		return jsengine.ContextFailure(err, r.logs)
	case safeerr.Is(err, coderuntime.ErrOutputLimit):
		return &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Cause: coderuntime.ErrOutputLimit, Logs: r.logs,
			Message: fmt.Sprintf("console output exceeded %d bytes", r.cfg.MaxLogBytes)}
	}
	var qe *quickjs.Error
	if safeerr.AsAny(err, &qe) {
		if compiling && qe.Name == "SyntaxError" {
			f := &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: "SyntaxError: " + qe.Message, Logs: r.logs, Cause: err}
			f.Line, f.Column = r.prg.sm.position(qe.LineNumber, qe.ColumnNumber)
			return f
		}
		if qe.Name == "" && qe.Message == "" {
			// The engine could not even build the error: it is out of memory.
			return r.outOfMemory("no error could be built")
		}
		return r.exception(qe.Name+": "+qe.Message, qe.Stack)
	}
	return &coderuntime.Failure{Kind: coderuntime.KindException, Message: err.Error(), Cause: err, Logs: r.logs}
}

// A VM that built a big heap takes seconds to free: closing it is not the program's time, so Run
// returns first and the VM is closed on a goroutine of its own (nothing else uses it by then). At
// most qjsMaxClosing VMs are being closed at once, which bounds the memory not yet freed; beyond
// that, a run closes its VM before it returns.
const qjsMaxClosing = 2

var (
	qjsClosers = make(chan struct{}, qjsMaxClosing)
	// qjsClosing counts the VMs being closed after their runs returned (tests wait for them).
	qjsClosing sync.WaitGroup
	// qjsCloseHook, when set (by tests), runs before a VM is closed, wherever it is closed.
	qjsCloseHook func()
)

// closeAfterRun runs teardown (which frees and closes a run's VM) after Run returns, or now when
// qjsMaxClosing teardowns are in progress.
func closeAfterRun(teardown func()) {
	if hook := qjsCloseHook; hook != nil {
		t := teardown
		teardown = func() { hook(); t() }
	}
	select {
	case qjsClosers <- struct{}{}:
	default:
		teardown()
		return
	}
	qjsClosing.Add(1)
	go func() {
		defer qjsClosing.Done()
		defer func() { <-qjsClosers }()
		teardown()
	}()
}
