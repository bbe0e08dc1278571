package tools

import (
	"context"
	"errors"
	"sync"
)

// This file is the batch scheduler: the calls of one model turn
// (ExecuteBatch) or the sub-calls of one Code Mode run go through the
// pipeline's three parts (pipeline.go: the policy prefix admit + policy,
// the dispatch execute, the suffix post + finalize + observe) with turns
// that keep policy in model order and let only dispatches overlap.

// DefaultMaxParallel is the default cap on the calls of one batch (or the
// sub-calls of one Code Mode run) in their tools/execute stage at once.
const DefaultMaxParallel = 10

// BatchOptions configures [Registry.ExecuteBatch]. The zero value is the
// default: a cap of [DefaultMaxParallel], and no call ever cancels another.
type BatchOptions struct {
	// MaxParallel caps the calls in their tools/execute stage (wrappers
	// and body) at once. Zero or negative means [DefaultMaxParallel]; 1
	// runs the bodies one at a time (policy still overlaps them as
	// described at ExecuteBatch).
	MaxParallel int
	// CancelWhen, when set, is the batch's stop policy: it is called with
	// (a copy of) each final result, in model order, right after that
	// call's tools/result. Returning true cancels every later call of the
	// batch, with cause [ErrBatchStopped]: those not yet dispatched end
	// ABORTED_BEFORE_DISPATCH, those running are cancelled (ABORTED, or
	// the more specific result they reach). The calls up to this one are
	// complete by then and keep their results. A panic counts as true. It
	// runs on one of the batch's goroutines, never two at once. Nil: a
	// failure of one call never affects another (the usual choice; for
	// example func(r tools.Result) bool { return r.IsError } stops a batch
	// at its first failure).
	CancelWhen func(res Result) bool
}

// ErrBatchStopped is the cancellation cause of the calls after a result
// for which [BatchOptions].CancelWhen returned true.
var ErrBatchStopped = errors.New("tools: the batch was stopped by its CancelWhen policy")

// ExecuteBatch runs the tool calls of one model turn, given in model order,
// and returns their results in the same order: results[i] is calls[i]'s.
// Each call runs the complete pipeline with every guarantee of
// [Registry.Execute]: exactly one result and one tools/result per call,
// whatever a tool, listener, guard or approver does; no body starts unless
// policy allowed it and ctx was not done; no body runs after its call's
// result was given.
//
// Which calls overlap: a call is parallel only when its tool declares that
// call safe (see [Registry.Concurrency] and [Definition].Concurrency);
// every other call (unknown, hidden, refused by the mode, rejected input,
// no declaration, a declaration that errs or panics) is exclusive. An
// exclusive call is a barrier: it starts its policy stages only after
// every earlier call finished (its tools/result emitted), and no later
// call starts before its own tools/result was emitted, so it runs as if
// alone. Between barriers, parallel calls overlap in their tools/execute
// stage and body only, at most MaxParallel at once (a rolling pool: a call
// starts as soon as a slot frees).
//
// Policy stays in model order. For each i, call i enters (stages 1–2,
// then pre-execute, approval, guards) only after call i-1 left those
// stages: it was dispatched, was refused before dispatch, or finished.
// Post-execute, finalize and tools/result of call i run only after call
// i-1's tools/result. So each policy event and each approval ask sees the
// calls in model order, one at a time (an ask for call 3 is never shown
// before call 2's is answered); a pre-execute of a later call may run
// while an earlier call's body or post-execute runs. A parallel call that
// waits for a slot holds the entry: no later call enters meanwhile.
//
// Cancellation: when ctx is done, every call not yet dispatched (waiting
// for its turn, in its policy stages, or for a slot) ends
// ABORTED_BEFORE_DISPATCH without its body running, and every running body
// is cancelled and ends ABORTED once it returned (a body that ignores ctx
// is waited for); each still passes post-execute and gets exactly one
// tools/result, in model order. A failure of one call never cancels
// another unless [BatchOptions].CancelWhen asks for it.
//
// Additional context and turn control: each result carries its own
// AdditionalContext; [BatchContext] joins them in model order, for the
// agent loop to append after all of the batch's tool results, and
// [ConcludesTurn] reports whether any successful call asked to end the
// turn. Neither affects the other calls of the batch.
//
// The calls run on goroutines of the batch's own (the calling goroutine
// only waits), so runtime.Goexit anywhere in a call ends only that call's
// goroutine: the call gets its one isError result (error.name "Goexit",
// as for Execute, without post-execute), and the batch goes on.
// ExecuteBatch returns once every call's tools/result was emitted and every
// goroutine it started has ended. It is safe for concurrent use; a tool
// body may call it (or Execute) recursively.
func (r *Registry) ExecuteBatch(ctx context.Context, calls []Call, opts BatchOptions) []Result {
	results := make([]Result, len(calls))
	if len(calls) == 0 {
		return results
	}
	b := &batchRun{ctx: ctx, calls: calls, results: results, entries: make([]entry, len(calls))}
	if opts.CancelWhen != nil {
		var cancel context.CancelCauseFunc
		b.ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		b.stop, b.cancelWhen = cancel, opts.CancelWhen
	}
	for i := range b.entries {
		e := &b.entries[i]
		e.index = i
		e.released, e.finished = make(chan struct{}), make(chan struct{})
		if i > 0 {
			e.prev = &b.entries[i-1]
		}
	}
	b.s = newSched(r, opts.MaxParallel)
	b.s.handOff = b.handOff
	b.s.done = b.done
	b.wg.Add(1)
	go b.worker(0)
	b.wg.Wait()
	return results
}

// BatchContext returns the additional context of a batch's results, in
// model order: results[0]'s AdditionalContext, then results[1]'s, and so
// on. An agent loop appends it after every tool result of the step, so
// that each tool call stays adjacent to its result.
func BatchContext(results []Result) []string {
	var out []string
	for _, r := range results {
		out = append(out, r.AdditionalContext...)
	}
	return out
}

// ConcludesTurn reports whether a result of the batch asked to end the
// turn (Result.ConcludeTurn, which only a successful result carries): the
// agent loop then records every result and context of the step and stops
// instead of calling the model again.
func ConcludesTurn(results []Result) bool {
	for _, r := range results {
		if r.ConcludeTurn && !r.IsError {
			return true
		}
	}
	return false
}

// batchRun is one ExecuteBatch.
type batchRun struct {
	s          *sched
	ctx        context.Context
	calls      []Call
	results    []Result
	entries    []entry
	cancelWhen func(Result) bool
	stop       context.CancelCauseFunc
	wg         sync.WaitGroup
}

// worker runs calls from i on, in order, on this goroutine, until a call
// hands the entry of the next one to a new goroutine (it was dispatched
// in parallel) or the batch ends.
func (b *batchRun) worker(i int) {
	defer b.wg.Done()
	for ; i < len(b.calls); i++ {
		e := &b.entries[i]
		b.s.run(b.ctx, e, b.calls[i])
		if e.handedOff {
			return
		}
	}
}

// handOff starts the call after e on a goroutine of its own (e released
// the entry before finishing).
func (b *batchRun) handOff(e *entry) {
	e.handedOff = true
	if next := e.index + 1; next < len(b.calls) {
		b.wg.Add(1)
		go b.worker(next)
	}
}

// done records a call's result and asks the stop policy.
func (b *batchRun) done(_ context.Context, e *entry, _ *Execution, res Result) {
	b.results[e.index] = res
	if b.cancelWhen != nil && stopAsked(b.cancelWhen, res.Clone()) {
		b.stop(ErrBatchStopped)
	}
}

func stopAsked(f func(Result) bool, res Result) (stop bool) {
	defer func() {
		if recover() != nil {
			stop = true
		}
	}()
	return f(res)
}

// sched schedules the calls of one batch. Calls are entries in a chain
// (each knows the one before it); every wait is on the previous entry or
// on a free slot, so a call never waits for a later one.
type sched struct {
	r   *Registry
	cap int
	// handOff, when set, is called when an entry releases the entry turn
	// before finishing, on its goroutine (ExecuteBatch starts the next
	// call's goroutine); nil when each call brings its own goroutine (Code
	// Mode).
	handOff func(e *entry)
	// done is called once per call, after its tools/result and before the
	// next call may run its suffix, on the call's goroutine.
	done func(ctx context.Context, e *entry, exec *Execution, res Result)

	mu       sync.Mutex
	active   int           // calls holding a dispatch slot
	slotFree chan struct{} // closed (and cleared) when a slot frees; nil when nobody waits
}

func newSched(r *Registry, maxParallel int) *sched {
	if maxParallel <= 0 {
		maxParallel = DefaultMaxParallel
	}
	return &sched{r: r, cap: maxParallel}
}

// entry is one call's place in its batch. The channels are the only
// fields other goroutines read; the rest belongs to the goroutine running
// the call.
type entry struct {
	index int
	prev  *entry // nil for the first call (dropped once the call finished)
	// released is closed when the call leaves the entry stages (dispatched
	// in parallel, refused before dispatch, or finished): the next call
	// may enter.
	released chan struct{}
	// finished is closed after the call's tools/result (and the done hook):
	// the next call may run its suffix, and a barrier after it may start.
	finished chan struct{}
	// call is the call as submitted (Code Mode logs it).
	call Call

	class       Concurrency
	didRelease  bool
	handedOff   bool
	slot        bool // holds a dispatch slot
	suffixReady bool // waited for the previous call's tools/result
	doneRan     bool
	over        bool // finished is closed
}

// run runs one call through the pipeline on the calling goroutine, taking
// its turns, and returns its result. Like Execute it survives
// runtime.Goexit in anything it calls: the call then still gets its one
// result (in model order), its turns are released, and the goroutine
// exits.
func (s *sched) run(ctx context.Context, e *entry, call Call) Result {
	exec := &Execution{}
	var res Result
	finished := false
	defer func() {
		if !finished {
			// Reached only by runtime.Goexit: stages contains every panic.
			s.goexit(ctx, e, exec, res)
		}
	}()
	res = s.stages(ctx, e, exec, call)
	// A panic of the pipeline itself (contained by stages) may have left
	// a slot or the suffix turn untaken.
	if e.slot {
		s.releaseSlot(e)
	}
	s.suffixTurn(e)

	// Stage 10 of the call, in model order.
	exec.stage = stageResult
	s.r.observe(ctx, exec, res)
	s.finish(ctx, e, exec, res, false)
	finished = true
	return res
}

// stages is stages 1–9 of one call, with its turns: entry after the
// previous call released it, a barrier wait for an exclusive call, a
// dispatch slot, the suffix after the previous call's tools/result.
func (s *sched) stages(ctx context.Context, e *entry, exec *Execution, call Call) (res Result) {
	r := s.r
	defer r.contain(exec, call.Name, &res)
	if e.prev != nil {
		<-e.prev.released
	}
	res, ok := r.admit(exec, call)
	if !ok {
		// Rejected input is exclusive: it runs no policy and no body, and
		// its result comes in model order.
		s.suffixTurn(e)
		return r.finalize(exec, res)
	}
	if e.class = r.classify(exec); e.class == Exclusive && e.prev != nil {
		<-e.prev.finished
	}
	em := r.h.Emitter(exec.agent)
	if res, ok = r.policy(ctx, em, exec); ok {
		if s.acquire(ctx, e) {
			res = r.execute(ctx, em, exec)
			s.releaseSlot(e)
		} else {
			res = aborted(ctx, CodeAbortedBeforeDispatch)
		}
	}
	s.suffixTurn(e)
	res = r.post(ctx, em, exec, res)
	exec.stage = stageFinalize
	return r.finalize(exec, res)
}

// acquire takes a dispatch slot for e, waiting for one while the cap is
// reached; it reports false, without a slot, when ctx is done first. A
// parallel call releases the entry once it has its slot.
func (s *sched) acquire(ctx context.Context, e *entry) bool {
	if ctx.Err() != nil {
		return false
	}
	s.mu.Lock()
	for s.active >= s.cap {
		if s.slotFree == nil {
			s.slotFree = make(chan struct{})
		}
		free := s.slotFree
		s.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return false
		}
		s.mu.Lock()
	}
	s.active++
	s.mu.Unlock()
	e.slot = true
	if e.class == Parallel {
		s.release(e, true)
	}
	return true
}

// releaseSlot gives e's slot back and wakes whoever waits for one.
func (s *sched) releaseSlot(e *entry) {
	e.slot = false
	s.mu.Lock()
	s.active--
	if free := s.slotFree; free != nil {
		s.slotFree = nil
		close(free)
	}
	s.mu.Unlock()
}

// release lets the next call enter; handOff says that e's goroutine will
// not go on to the next call itself.
func (s *sched) release(e *entry, handOff bool) {
	if e.didRelease {
		return
	}
	e.didRelease = true
	close(e.released)
	if handOff && s.handOff != nil {
		s.handOff(e)
	}
}

// suffixTurn waits until e may run its suffix: after the previous call's
// tools/result. A parallel call releases the entry first (it was refused
// before dispatch, or dispatched already); an exclusive one keeps it until
// it finished.
func (s *sched) suffixTurn(e *entry) {
	if e.suffixReady {
		return
	}
	e.suffixReady = true
	if e.class == Parallel {
		s.release(e, true)
	}
	if e.prev != nil {
		<-e.prev.finished
	}
}

// finish ends e after its tools/result: the done hook, then the entry
// and suffix turns pass on (even when the hook calls runtime.Goexit).
// exiting says that the goroutine is exiting (runtime.Goexit), so it will
// not go on to the next call itself.
func (s *sched) finish(ctx context.Context, e *entry, exec *Execution, res Result, exiting bool) {
	returned := false
	defer func() {
		if e.over {
			return
		}
		e.over = true
		e.prev = nil
		s.release(e, exiting || !returned)
		close(e.finished)
	}()
	if !e.doneRan {
		e.doneRan = true
		if s.done != nil {
			s.done(ctx, e, exec, res)
		}
	}
	returned = true
}

// goexit completes a call whose goroutine is exiting through
// runtime.Goexit, as Registry.goexit does for Execute, keeping the batch's
// order: bodies still running are waited for, the slot is released, the
// call's one result is emitted after the previous call's (unless the
// Goexit happened while it was being emitted), and then the call
// finishes as any other (an exclusive call keeps the entry until then).
func (s *sched) goexit(ctx context.Context, e *entry, exec *Execution, res Result) {
	exec.bodies.settle(ErrAbandoned)
	if e.slot {
		s.releaseSlot(e)
	}
	if e.class == Parallel {
		s.release(e, true)
	}
	defer func() { s.finish(ctx, e, exec, res, true) }()
	if exec.stage == stageResult {
		return
	}
	res = s.r.goexitResult(exec)
	if e.prev != nil {
		<-e.prev.finished
	}
	exec.stage = stageResult
	s.r.observe(ctx, exec, res)
}
