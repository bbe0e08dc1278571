package tools

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/host"
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
// then pre-execute, guards, approval) only after call i-1 left those
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
// Goroutines: the calling goroutine runs every call's policy prefix, in
// order, and an exclusive call entirely; a parallel call's tools/execute
// stage, body and suffix run on a goroutine of the batch's own (a
// wrapper may run next elsewhere still). The batch starts as few of them
// as keep its calls moving: calls whose bodies return at once share one,
// and a call queued behind a busy one gets its own (up to the cap) once
// the goroutine running the prefixes has nothing else to do and sees no
// progress, or, when that goroutine is itself held (in a listener or an
// approval, say), after a millisecond in which the workers took less work
// than waits for them.
//
// Except while nothing listens to the policy stages: when a parallel call
// with at least 31 calls after it is entered while no tools/pre-execute
// listener, guard or tracer is registered, that call and the calls after
// it run whole, prefix
// included, one after the other on a goroutine of the batch's own (its
// runner), as Execute runs a call, still in model order and with every
// guarantee above, until an exclusive call (whose prefix the runner runs,
// and whose rest runs on the calling goroutine, as always). The prefix
// then runs no policy code, only the tool's ValidateArgs and concurrency
// rule, which run on "the goroutine running the call"; a listener, guard
// or tracer registered while the runner runs sees the prefixes of the
// calls it enters afterwards, in order, on the runner. When the runner
// makes no progress in a body or suffix, the calling goroutine starts
// another from the next call (so at most the cap are in bodies at once).
// ExecuteBatch returns once every call's tools/result was emitted and
// every goroutine it started has ended. It holds no lock while user code
// runs, is safe for concurrent use, and a tool body may call it (or
// Execute) recursively.
//
// runtime.Goexit ends the goroutine it is called on, as Go requires, and
// the call gets its one isError result (error.name "Goexit", without
// post-execute, as with Execute), in model order. On one of the batch's
// goroutines (a runner's included, whatever stage it runs) that is all:
// the batch goes on and ExecuteBatch returns. On the calling goroutine
// ExecuteBatch does not return: the rest of the batch goes on (on a
// goroutine of its own) and completes, every call with its one result,
// before the calling goroutine exits.
func (r *Registry) ExecuteBatch(ctx context.Context, calls []Call, opts BatchOptions) []Result {
	results := make([]Result, len(calls))
	if len(calls) == 0 {
		return results
	}
	b := newBatchRun(r, ctx, calls, results, opts.MaxParallel)
	if opts.CancelWhen != nil {
		var cancel context.CancelCauseFunc
		b.ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		b.stop, b.cancelWhen = cancel, opts.CancelWhen
	}
	returned := false
	defer func() {
		if !returned {
			// runtime.Goexit on this goroutine: the chain went on
			// elsewhere; the batch completes before the goroutine exits.
			b.wg.Wait()
		}
	}()
	b.wg.Add(1)
	b.chain(0)
	b.wg.Wait()
	returned = true
	b.recycle()
	return results
}

// batchRuns holds the state of finished batches for the next ones: a
// batch's entries, parking marks and queue are reused, not allocated
// again. Its guard timer is not: a timer belongs to the synctest bubble
// (if any) that created it, and the next batch may run in another.
var batchRuns sync.Pool // *batchRun

// maxPooledCalls is the largest batch whose state is kept for reuse
// (about 180 bytes a call: its entry, parking mark and queue slot; a
// call's result is written in place in the results the batch returns): a
// larger one allocates its own, and the pool never holds on to more than
// about 180 KB a state (sync.Pool drops what two collections see unused).
const maxPooledCalls = 1024

// newBatchRun returns the state of a batch of calls, from batchRuns when
// it has some: every field as for a new batch, the entries numbered.
func newBatchRun(r *Registry, ctx context.Context, calls []Call, results []Result, max int) *batchRun {
	n := len(calls)
	b, _ := batchRuns.Get().(*batchRun)
	if b == nil || cap(b.entries) < n {
		if b == nil {
			b = new(batchRun)
			b.work, b.fire, b.runFn = b.worker, b.guardFire, b.runner
		}
		b.entries, b.sched.parked = make([]entry, n), make([]bool, n)
	}
	b.ctx, b.calls, b.results = ctx, calls, results
	b.entries, b.sched.parked = b.entries[:n], b.sched.parked[:n]
	for i := range b.entries {
		b.entries[i].index, b.entries[i].res = i, &results[i]
	}
	// The scheduler lives in the batch and calls its hooks through
	// s.batch: no allocation for either.
	b.sched.r, b.sched.cap, b.sched.batch, b.sched.entries = r, maxParallel(max), b, b.entries
	b.s = &b.sched
	b.cond.L, b.callerCond.L = &b.mu, &b.mu
	return b
}

// recycle puts b, whose batch returned, in batchRuns for the next batch,
// cleared (nothing of this batch's calls stays reachable from it), unless
// it is too large to keep. Every goroutine the batch started has ended,
// and its guard timer is stopped or has fired (guardFire ran to its end:
// the batch waited for it), so nothing else uses b; the timer is dropped
// (see batchRuns).
func (b *batchRun) recycle() {
	if cap(b.entries) > maxPooledCalls {
		return
	}
	entries, parked, queue, work, fire, runFn := b.entries[:0], b.sched.parked[:0], b.queue[:0], b.work, b.fire, b.runFn
	clear(b.entries)
	clear(b.sched.parked)
	clear(b.queue) // already cleared as taken, unless a worker exited
	*b = batchRun{entries: entries, queue: queue, work: work, fire: fire, runFn: runFn}
	b.sched.parked = parked
	batchRuns.Put(b)
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
	s          *sched // &sched
	sched      sched
	ctx        context.Context
	calls      []Call
	results    []Result
	entries    []entry
	cancelWhen func(Result) bool
	stop       context.CancelCauseFunc
	wg         sync.WaitGroup

	// The workers that run parallel calls' rest, at most cap+1 at once
	// (cap dispatches, one suffix: suffixes run one at a time, in model
	// order), started as work comes and reused until the chain ended.
	// A worker never waits for a suffix turn: a call whose dispatch ended
	// before the previous call's tools/result is parked (sched.parked),
	// and the worker that finishes the previous call runs its suffix next
	// (suffixes). Under mu; cond wakes idle workers.
	mu       sync.Mutex
	cond     sync.Cond
	queue    []*entry // entered parallel calls waiting for a worker (FIFO from head)
	head     int
	suffixes []*entry // unparked calls whose suffix turn came
	workers  int      // running worker goroutines
	free     int      // workers not running a call: starting, looking for work, or idle
	idle     int      // workers waiting in cond
	chainEnd bool     // every call entered: no more dispatch work comes

	// guard starts the workers that queued calls wait for once they
	// waited guardDelay (see armLocked). armed: it is set and counted in
	// wg. Under mu.
	guard *time.Timer
	armed bool
	taken int // work items taken by workers so far, for lend and guardFire
	// armTaken is taken when the guard was last set: what the workers
	// took since tells guardFire whether they keep up.
	armTaken int
	// starting counts the workers that took nothing yet: while one is
	// starting, push leaves the guard unset, for the worker sets it when
	// it takes its first call if work still waits (a worker stuck in that
	// call's body is what the guard is for). lending: the chain is in
	// lend, watching the workers itself, and nobody sets the guard
	// (lend sets it on its way out if work still waits).
	starting int
	lending  bool

	// work, fire and runFn are b.worker, b.guardFire and b.runner, made
	// once for every batch that reuses b (see batchRuns).
	work, fire, runFn func()

	// execs is the rest of the chunk of Executions allocated last (see
	// execChunk), used by the goroutine entering calls.
	execs []Execution

	// The runners (see runFast). run is the state of the one holding
	// the chain; the other fields pass with the chain between it and the
	// calling goroutine, which sleeps in callerCond (under mu) while
	// callerWaits. running: runFast is running (handOff leaves the chain
	// to the runner). runFrom is the call a new runner starts with,
	// entered already when runEntered; backEntered: the runner gave the
	// chain back with an exclusive call it entered.
	run         atomic.Int64
	callerWaits atomic.Bool
	callerCond  sync.Cond
	running     bool
	runEntered  bool
	backEntered bool
	runFrom     int
}

// guardDelay is how long queued parallel calls wait for a busy worker
// before the batch starts more workers for them (see armLocked).
const guardDelay = time.Millisecond

// chain runs the calls from i on, in order: each call's policy prefix
// here, an exclusive call's rest here too, a parallel call's rest (its
// dispatch and suffix) on a worker; or, from a parallel call on, the
// calls themselves on a runner while nothing listens to the policy stages
// (see runFast). A runtime.Goexit here hands the chain to a new goroutine
// (see handOff).
func (b *batchRun) chain(i int) {
	defer b.wg.Done()
	classic := false      // a call was queued for a worker: no runner from here on
	var execs []Execution // allocated a chunk at a time (see execChunk)
	for ; i < len(b.calls); i++ {
		e, c := &b.entries[i], b.calls[i]
		if len(execs) == 0 {
			execs = make([]Execution, min(execChunk, len(b.calls)-i))
		}
		exec := &execs[0]
		execs = execs[1:]
		res, st := b.s.enter(b.ctx, e, exec, c)
		if e.class == Parallel {
			e.exec, e.st, e.tool = exec, st, c.Name
			if st != stepDispatch { // else res is empty, as *e.res is
				*e.res = res
			}
			if !classic && len(b.calls)-i >= runnerMinCalls && b.s.r.policyUnheard() {
				b.execs = execs // the runner's, then back
				next, entered := b.runFast(e)
				execs, b.execs = b.execs, nil
				if entered {
					// An exclusive call the runner entered: its rest
					// runs here.
					e = &b.entries[next]
					b.s.complete(b.ctx, e, e.exec, e.tool, *e.res, e.st)
					i = next
				} else {
					i = next - 1
				}
				continue
			}
			classic = true
			b.push(&b.queue, e)
			continue
		}
		b.s.complete(b.ctx, e, exec, c.Name, res, st)
	}
	b.endChain()
}

// runnerMinCalls is the fewest calls left (a parallel call and those
// after it) that the chain hands to a runner: a shorter run costs less
// with the prefixes here overlapping the workers' dispatches (on two
// CPUs, ten trivial calls: 1.52–1.54× ten Execute calls against
// 1.61–1.68× on a runner; a hundred: 1.36–1.59× against 1.29–1.30×).
const runnerMinCalls = 32

// nextExec returns call i's Execution for a runner, from the chunk the
// chain (or a runner) allocated last, which only the goroutine holding
// the chain uses.
func (b *batchRun) nextExec(i int) *Execution {
	if len(b.execs) == 0 {
		b.execs = make([]Execution, min(execChunk, len(b.calls)-i))
	}
	exec := &b.execs[0]
	b.execs = b.execs[1:]
	return exec
}

// execChunk is how many calls' Executions the chain allocates at once:
// one allocation of 4 KB (eight of 488 bytes) instead of eight. Each
// call still has an Execution of its own, never reused; a body that
// keeps its Execution after its call keeps the chunk's other seven alive
// with it (4 KB at most).
const execChunk = 8

// handOff continues the chain after e on a new goroutine: e's goroutine,
// which ran the chain, is exiting (runtime.Goexit).
func (b *batchRun) handOff(e *entry) {
	if b.running {
		// A runner entered e (only the runner holding the chain enters
		// calls): it gives the chain back as it exits (runnerExit).
		return
	}
	if next := e.index + 1; next < len(b.calls) {
		b.wg.Add(1)
		go b.chain(next)
		return
	}
	b.endChain()
}

// push queues e on q (b.queue or b.suffixes) for a worker: an idle one,
// or the batch's first; a suffix gets a new worker when none is free,
// whatever the count (it is handed over by a goroutine that cannot run
// it: see nextSuffix). Calls queued while every worker is busy are taken
// by those workers as they finish, and get workers of their own only when
// they waited guardDelay (armLocked; set by the worker itself when it
// is still starting: see starting): so trivial calls run on one worker,
// and slow or blocked ones get one each, up to the cap, a moment later.
func (b *batchRun) push(q *[]*entry, e *entry) {
	b.mu.Lock()
	if cap(*q) == 0 && q == &b.queue {
		b.queue = make([]*entry, 0, len(b.calls)-e.index)
	}
	*q = append(*q, e)
	switch {
	case b.idle > 0:
		b.cond.Signal()
	case b.free == 0 && (b.workers == 0 || q == &b.suffixes):
		b.spawnLocked()
	case b.starting == 0:
		b.armLocked()
	} // else a worker that took nothing yet sets the guard when it takes
	// its first call, if work still waits then (see worker)
	b.mu.Unlock()
}

// waitingLocked is how many queued calls and suffixes no free worker is
// there to take; b.mu held.
func (b *batchRun) waitingLocked() int {
	return len(b.queue) - b.head + len(b.suffixes) - b.free
}

// armLocked sets the guard when queued work waits that no free worker
// can take and the cap allows another worker, unless it is set: when it
// fires (guardFire) whatever work then waits gets workers, unless the
// workers keep up, so a batch whose worker is stuck in a body (blocked,
// say, until a later call runs) while the chain is held in user code gets
// the workers it needs, up to the cap. It stays set until it fires (and
// is not set again) or the chain ended (endChain stops it): resetting it
// whenever work is taken would cost more than a quick call, and a guard
// that fires while the workers keep up finds no waiting work, or less
// than they took meanwhile. b.mu held.
func (b *batchRun) armLocked() {
	if b.armed || b.lending || b.waitingLocked() <= 0 || b.workers >= b.s.cap+1 {
		return
	}
	b.armed = true
	b.armTaken = b.taken
	b.wg.Add(1)
	if b.guard == nil {
		b.guard = time.AfterFunc(guardDelay, b.fire)
	} else {
		b.guard.Reset(guardDelay)
	}
}

// disarmLocked stops the guard if it is set; b.mu held.
func (b *batchRun) disarmLocked() {
	if b.armed && b.guard.Stop() {
		b.armed = false
		b.wg.Done()
	} // else guardFire is about to run: it clears armed
}

// lend is called by the goroutine that runs the chain when it is about to
// wait (for a slot, a turn, or the batch's end) and so can watch the
// workers meanwhile: while queued work waits that no free worker can take,
// it yields, and when the workers take nothing in guardSpins yields in a
// row (they are stuck in bodies, or there are none) it starts a worker
// for each waiting item, up to the cap. So the queued calls of a quick
// batch run on the worker that has them, and calls waiting behind a
// blocked body start as soon as this goroutine has nothing else to do,
// without the guard's delay.
func (b *batchRun) lend() {
	b.mu.Lock()
	b.lending = true // it watches the workers: no guard needed meanwhile
	for spins := 0; b.waitingLocked() > 0 && b.workers < b.s.cap+1; {
		if spins == guardSpins || b.workers == 0 {
			for b.waitingLocked() > 0 && b.workers < b.s.cap+1 {
				b.spawnLocked()
			}
			break
		}
		taken := b.taken
		b.mu.Unlock()
		runtime.Gosched()
		b.mu.Lock()
		if b.taken == taken {
			spins++
		} else {
			spins = 0
		}
	}
	b.lending = false
	b.armLocked()
	b.mu.Unlock()
}

// guardSpins is how many yields in a row lend waits for a worker to take
// queued work before it starts more workers.
const guardSpins = 8

// guardFire starts a worker for each call or suffix that waited
// guardDelay with no free worker, up to the cap; but while the chain goes
// on, when the workers took more work since the guard was set than now
// waits (they keep up with a stream of quick calls: the work waiting now
// will be taken within another guardDelay), it only sets the guard again.
// Workers stuck in bodies, or slow ones, take less than that, and the
// work waiting behind them gets workers of its own.
func (b *batchRun) guardFire() {
	b.mu.Lock()
	if w := b.waitingLocked(); w > 0 && !b.chainEnd && b.taken-b.armTaken > w {
		b.armTaken = b.taken
		b.guard.Reset(guardDelay) // still armed, still counted in wg
		b.mu.Unlock()
		return
	}
	b.armed = false
	for b.waitingLocked() > 0 && b.workers < b.s.cap+1 {
		b.spawnLocked()
	}
	b.mu.Unlock()
	b.wg.Done()
}

// spawnLocked starts a worker; b.mu held.
func (b *batchRun) spawnLocked() {
	b.workers++
	b.free++
	b.starting++
	b.wg.Add(1)
	go b.work()
}

// worker runs queued work, suffixes first, until the chain ended and
// nothing is left.
func (b *batchRun) worker() {
	defer b.wg.Done()
	growStack(len(b.calls))
	b.mu.Lock()
	b.workLoop(true)
}

// workLoop is a worker's loop, entered with b.mu held (and the worker
// counted free); first: it took nothing yet (counted in b.starting). It
// returns, b.mu released, when the chain ended and nothing is left.
func (b *batchRun) workLoop(first bool) {
	exited := true
	defer func() {
		if exited {
			// runtime.Goexit in a call's half: the call completed (see
			// sched.goexit); the work left goes on with the others.
			b.mu.Lock()
			b.workers--
			if len(b.suffixes)+len(b.queue)-b.head > b.free {
				b.spawnLocked()
			}
			b.mu.Unlock()
		}
	}()
	for {
		// Before sleeping, yield a few times: the chain is usually about
		// to hand over the next call, and waking a sleeping worker costs
		// more than a trivial call.
		for spin := 0; spin < workerSpins && len(b.suffixes) == 0 && b.head == len(b.queue) && !b.chainEnd; spin++ {
			b.mu.Unlock()
			runtime.Gosched()
			b.mu.Lock()
		}
		for len(b.suffixes) == 0 && b.head == len(b.queue) && !b.chainEnd {
			b.idle++
			b.cond.Wait()
			b.idle--
		}
		var e *entry
		dispatch := false
		switch {
		case len(b.suffixes) > 0:
			e = b.suffixes[0]
			b.suffixes = b.suffixes[1:]
			if len(b.suffixes) == 0 {
				b.suffixes = nil
			}
		case b.head < len(b.queue):
			e, dispatch = b.queue[b.head], true
			b.queue[b.head] = nil
			b.head++
		default: // the chain ended and nothing is left
			if first {
				b.starting--
			}
			b.workers--
			b.free--
			b.mu.Unlock()
			exited = false
			return
		}
		b.free--
		b.taken++
		if first {
			first = false
			b.starting--
		}
		b.armLocked()
		b.mu.Unlock()
		if dispatch {
			e = b.s.dispatchHalf(b.ctx, e)
		}
		// Then the suffixes whose turn came: this call's, and each parked
		// one after it, one at a time in model order.
		for e != nil {
			e = b.s.suffixHalf(b.ctx, e)
		}
		b.mu.Lock()
		b.free++
	}
}

// policyUnheard reports whether nothing listens to the policy stages of
// a call now: no tools/pre-execute listener (and so no ask, and no
// approval), no guard, no tracer. Three atomic loads.
func (r *Registry) policyUnheard() bool {
	return r.h.Listening(PreExecute.Descriptor()) == 0 && r.guarded.Load() == 0 && r.tracers.list.Load() == nil
}

// The runner's states (batchRun.run), for a batch of n calls: a runner
// holds the chain (the right to enter the next call) at call k, entering
// it (2k); it is past call k-1's prefix, running its body or suffix, and
// the calling goroutine may take the chain from call k on (2k+1); it
// entered and completed every call (2n); it gave the chain back from call
// k (runBack-k; backEntered: it entered call k, an exclusive call whose
// rest runs on the calling goroutine); or one of those, runStarting
// added, until the runner started. A state is never held twice.
// runStarting marks the state of a runner that has not started yet (and
// read b.runFrom): the calling goroutine waits for it to start.
const (
	runBack     = -1
	runStarting = 1 << 62
)

// runFast runs the calls from e on, e a parallel call the chain entered,
// on a runner: a goroutine of the batch's own that runs each call whole
// (prefix, dispatch, suffix), one after the other, as Execute would,
// while the calling goroutine watches it. So a batch of quick calls costs
// one hand-over, not one per call. The chain uses it only while nothing
// listens to the policy stages (policyUnheard), whose prefixes then run
// no listener, guard, approval or tracer: only the stages' own checks,
// the tool's ValidateArgs and its concurrency rule, which run on the
// goroutine running the call, as documented for both.
//
// The calling goroutine yields, looking at the runner's state (b.run)
// only every runnerReadEvery yields: each look takes the state's cache
// line from the runner, whose next store then waits for it. When the
// runner is in a call's body or suffix and makes no progress in
// runnerStuckLooks looks in a row (a body that blocks, say until a later
// call runs), the calling goroutine takes the chain from it and starts a new
// runner from the next call: the old one ends after its call (and runs
// the suffixes parked behind it meanwhile, as a worker does), so at most
// MaxParallel runners are in bodies at once. When the runner is held in
// a prefix, the calling goroutine sleeps until it moves on. A runner
// gives the chain back at an exclusive call, which it has entered (its
// rest runs on the calling goroutine), and when it exits through
// runtime.Goexit. runFast returns the call from which the chain goes on
// (len(b.calls): every call was entered) and whether that call was
// entered (an exclusive call to complete).
func (b *batchRun) runFast(e *entry) (next int, entered bool) {
	n := int64(len(b.calls))
	b.running = true
	defer func() { b.running = false }()
	v := 2*int64(e.index+1) + 1
	b.run.Store(v | runStarting)
	b.runFrom, b.runEntered = e.index, true
	b.wg.Add(1)
	go b.runFn()
	last, spins := v, 0
	for {
		for range runnerReadEvery - 1 {
			runtime.Gosched()
		}
		v = b.run.Load()
		switch {
		case v == 2*n:
			return int(n), false
		case v <= runBack:
			k, entered := int(runBack-v), b.backEntered
			b.backEntered = false
			return k, entered
		}
		if v&runStarting != 0 {
			// Not running yet: nothing to take from it.
			runtime.Gosched()
			continue
		}
		if v != last {
			last, spins = v, 0
		} else if spins++; spins >= runnerStuckLooks {
			spins = 0
			k := v >> 1
			switch {
			case v&1 == 0:
				// Held in a prefix: sleep until the runner moves on.
				b.waitRunner(v)
			case k == n:
				// In its last call: nothing to take; ExecuteBatch
				// waits for the runner.
				return int(n), false
			case b.run.CompareAndSwap(v, 2*k|runStarting):
				// Stuck in a body or suffix: a new runner goes on
				// from call k.
				b.runFrom, b.runEntered = int(k), false
				b.wg.Add(1)
				go b.runFn()
			}
			continue
		}
		runtime.Gosched()
	}
}

// runnerReadEvery is how many times runFast yields from one look at the
// runner's state to the next, and runnerStuckLooks how many looks in a
// row without progress make it start another runner: 64 yields, as long
// as a runner in a body that blocks waited before (8 looks, one a
// yield), with an eighth of the looks. On two CPUs, 1,000 trivial calls
// cost 1.09–1.14× as many Execute calls against 1.38–1.46× with a look
// per yield (a look every 8 yields, 8 looks: 1.16–1.35×); 40 calls whose
// bodies sleep 1 ms take 2.2 ms against 1.9 ms.
const (
	runnerReadEvery  = 32
	runnerStuckLooks = 2
)

// waitRunner sleeps until the runner's state is no longer v.
func (b *batchRun) waitRunner(v int64) {
	b.mu.Lock()
	b.callerWaits.Store(true)
	for b.run.Load() == v {
		b.callerCond.Wait()
	}
	b.callerWaits.Store(false)
	b.mu.Unlock()
}

// wakeCaller wakes the calling goroutine if it sleeps in waitRunner; a
// runner calls it after each change of state.
func (b *batchRun) wakeCaller() {
	if b.callerWaits.Load() {
		b.mu.Lock()
		b.callerCond.Signal()
		b.mu.Unlock()
	}
}

// runner is the goroutine of runFast: from b.runFrom (entered already
// when b.runEntered), it runs each call's dispatch and suffix, then
// enters the next call, as long as it holds the chain.
func (b *batchRun) runner() {
	n := len(b.calls)
	i, entered := b.runFrom, b.runEntered
	mine := 2 * int64(i) // the state it holds
	if entered {
		mine = 2*int64(i+1) + 1
	}
	b.run.Store(mine) // started: its parameters read
	entering, returned := false, false
	defer func() {
		if !returned {
			b.runnerExit(entering, i, mine)
		}
		b.wg.Done()
	}()
	growStack(n)
	for {
		e := &b.entries[i]
		if !entered {
			c := b.calls[i]
			exec := b.nextExec(i)
			entering = true
			res, st := b.s.enter(b.ctx, e, exec, c)
			entering = false
			e.exec, e.st, e.tool = exec, st, c.Name
			if e.class != Parallel || st != stepDispatch {
				*e.res = res
			}
			if e.class != Parallel {
				// Its rest runs on the calling goroutine.
				returned, b.backEntered = true, true
				b.run.Store(runBack - int64(i))
				b.wakeCaller()
				return
			}
			mine = 2*int64(i+1) + 1
			b.run.Store(mine)
			b.wakeCaller()
		}
		next := b.s.dispatchHalf(b.ctx, e)
		for next != nil {
			next = b.s.suffixHalf(b.ctx, next)
		}
		i, entered = i+1, false
		if !b.run.CompareAndSwap(mine, 2*int64(i)) {
			// The calling goroutine took the chain: another runner
			// goes on.
			returned = true
			return
		}
		mine = 2 * int64(i)
		if i == n {
			returned = true
			b.wakeCaller()
			return
		}
	}
}

// runnerExit gives the chain back as a runner exits through
// runtime.Goexit, from the call after call i: the Goexit happened in its
// prefix (entering; the call completed, see sched.goexit, and handOff
// left the chain to this), or in its dispatch or suffix, unless the
// calling goroutine took the chain meanwhile.
func (b *batchRun) runnerExit(entering bool, i int, mine int64) {
	if entering {
		b.run.Store(runBack - int64(i+1))
	} else if !b.run.CompareAndSwap(mine, runBack-int64(i+1)) {
		return
	}
	b.wakeCaller()
}

// nextSuffix hands a parked call whose suffix turn came to a worker, from
// a goroutine that does not run it (the chain's, finishing an exclusive
// call, or one exiting through runtime.Goexit).
func (b *batchRun) nextSuffix(e *entry) {
	b.push(&b.suffixes, e)
}

// endChain records that every call entered, and lets the idle workers
// go; the calling goroutine then lends itself to starting workers until
// no queued work waits for one (no more comes), and stops the guard.
func (b *batchRun) endChain() {
	b.mu.Lock()
	b.chainEnd = true
	b.cond.Broadcast()
	if b.waitingLocked() <= 0 {
		// Nothing waits for a worker (and nothing more comes): lend
		// would have nothing to do.
		b.disarmLocked()
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	b.lend()
	b.mu.Lock()
	b.disarmLocked()
	b.mu.Unlock()
}

// done records a call's result and asks the stop policy.
func (b *batchRun) done(_ context.Context, e *entry, _ *Execution, res *Result) {
	if res != e.res { // else the result is in place already
		b.results[e.index] = *res
	}
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

// sched schedules the calls of one batch. Calls are entries numbered in
// model order. Entries leave the policy prefix (release) and finish in
// that order, so two counters say how far the batch is; every wait is for
// an earlier entry or for a free slot, so a call never waits for a later
// one, and a slot is only ever waited for by the call holding the entry.
//
// A call is two halves: enter (the policy prefix, up to a dispatch slot)
// and complete (dispatch, suffix, tools/result). Code Mode runs both on
// the goroutine that made the call; ExecuteBatch runs enter on its chain
// goroutine and complete there too for an exclusive call, on a goroutine
// of its own for a parallel one. Each half survives runtime.Goexit as
// Execute does: the call still gets its one result, in model order.
type sched struct {
	r   *Registry
	cap int
	// batch is the ExecuteBatch this schedules, whose hooks it calls; nil
	// when each call brings its own goroutine (Code Mode). Its handOff is
	// called when the goroutine that entered a call exits
	// (runtime.Goexit) before the next call entered: the chain continues
	// elsewhere. Its done is called once per call, after its
	// tools/result and before the next call may run its suffix, on the
	// call's goroutine. Its lend is called before a call waits for a slot
	// or a turn (the waiting goroutine lends itself to starting workers).
	// Its nextSuffix gets a parked call whose turn came (unparked).
	batch *batchRun
	// done, for Code Mode (batch nil), is called as batch.done is.
	done func(ctx context.Context, e *entry, exec *Execution, res Result)

	mu       sync.Mutex
	active   int           // calls holding a dispatch slot
	slotFree chan struct{} // closed (and cleared) when a slot frees; nil when nobody waits
	released int           // entries [0, released) left the policy prefix
	finished int           // entries [0, finished) finished
	// waiters are the calls waiting for released (0) or finished (1) to
	// reach a mark, by mark: a counter that moves wakes exactly the marks
	// it passed.
	waiters [2]map[int][]chan struct{}
	// parked (ExecuteBatch only; nil for Code Mode) marks the calls whose
	// dispatch ended before their suffix turn: instead of a goroutine
	// waiting, the call that finishes before one runs its suffix
	// (finishEntry), or hands it to unparked.
	parked  []bool
	entries []entry // the batch's entries, for parked
}

func newSched(r *Registry, max int) *sched {
	return &sched{r: r, cap: maxParallel(max)}
}

// maxParallel is the dispatch cap for a MaxParallel option.
func maxParallel(max int) int {
	if max <= 0 {
		return DefaultMaxParallel
	}
	return max
}

// entry is one call's place in its batch. Only the goroutine running the
// call's current half uses it; a half hands it over when it starts the
// next (a go statement or a plain call).
//
// A call releases the entry when it leaves the policy prefix (dispatched
// in parallel, refused before dispatch, or finished): the next call may
// enter. It finishes after its tools/result and the done hook: the next
// call may run its suffix, and a barrier after it may start.
type entry struct {
	index int // in model (submission) order, from 0
	// call is the call as submitted (Code Mode logs it).
	call Call
	em   host.Emitter

	// A parallel call of ExecuteBatch between its halves: what enter
	// left for the worker, then what dispatch left for the suffix.
	exec     *Execution
	res      *Result // its element of the batch's results, written in place
	st       step
	tool     string
	internal bool // the pipeline panicked in dispatch: res is final

	class       Concurrency
	didRelease  bool
	slot        bool // holds a dispatch slot
	suffixReady bool // waited for the previous call's tools/result
	doneRan     bool
	over        bool // finished
}

// step is where a call goes after enter.
type step int

const (
	// stepFinal: the result is final (rejected input, an internal
	// failure): finalize and emit it.
	stepFinal step = iota
	// stepPost: refused before dispatch; the result goes through
	// post-execute.
	stepPost
	// stepDispatch: allowed, holding a slot: dispatch.
	stepDispatch
)

// run runs one call on the calling goroutine (Code Mode), with exec, its
// zero Execution (SubCalls allocates it with e).
func (s *sched) run(ctx context.Context, e *entry, exec *Execution, call Call) Result {
	res, st := s.enter(ctx, e, exec, call)
	return s.complete(ctx, e, exec, call.Name, res, st)
}

// enter is the policy prefix of a call: its turn to enter (after the
// previous call left the prefix), stages 1–2, the barrier of an exclusive
// call (every earlier call finished), stages 3–5, and a dispatch slot. A
// parallel call then lets the next one enter. A pipeline panic is an
// INTERNAL final result. On runtime.Goexit the call is completed (see
// goexit) and the goroutine exits.
func (s *sched) enter(ctx context.Context, e *entry, exec *Execution, call Call) (res Result, st step) {
	r := s.r
	entered := false
	defer func() {
		if !entered {
			if v := recover(); v != nil {
				// The pipeline itself panicked (stepFinal).
				r.containValue(exec, call.Name, v, &res)
			} else {
				// Reached only by runtime.Goexit.
				s.goexit(ctx, e, exec, res)
			}
		}
	}()
	if s.batch == nil {
		// ExecuteBatch's chain enters its calls one after the other, each
		// after the one before released the entry (or on a goroutine
		// handOff started once it had): only Code Mode's calls, each on
		// its own goroutine, wait for their turn.
		s.wait(&s.released, e.index)
	}
	r.startTrace(exec, call)
	res, ok := r.admit(exec, call)
	if !ok {
		entered = true
		return res, stepFinal
	}
	if e.class = r.classify(exec); e.class == Exclusive {
		if !s.finishedBefore(e) {
			s.wait(&s.finished, e.index)
		}
		e.suffixReady = true
	}
	e.em = r.h.Emitter(exec.agent)
	st = stepPost
	if res, ok = r.policy(ctx, e.em, exec); ok {
		switch {
		case e.class == Exclusive:
			// It runs alone: every earlier call finished, no later one
			// entered.
			st = stepDispatch
		case s.acquire(ctx, e):
			e.slot, st = true, stepDispatch
		default:
			res = aborted(ctx, CodeAbortedBeforeDispatch)
		}
	}
	if e.class == Parallel {
		s.release(e, false)
	}
	entered = true
	return res, st
}

// finishedBefore reports, without the lock, whether every call before e
// is known to have finished on the goroutine running ExecuteBatch's chain,
// which is entering e: e is the batch's first call, or the call before it
// is not parallel, so the chain completed it (finishEntry moved s.finished
// past it) before it entered e, or a goroutine that did started this one
// (handOff). Nothing else moves s.finished meanwhile: the calls before
// that one finished before it did, and no later call entered. Code Mode's
// calls, each on its own goroutine, always wait.
func (s *sched) finishedBefore(e *entry) bool {
	return s.batch != nil && (e.index == 0 || s.entries[e.index-1].class != Parallel)
}

// complete is the rest of a call after enter: dispatch (stages 6–7) when
// it holds a slot, then, after the previous call's tools/result,
// post-execute, finalize and tools/result, and the done hook. It returns
// the call's result. On runtime.Goexit the call is completed (see goexit)
// and the goroutine exits.
func (s *sched) complete(ctx context.Context, e *entry, exec *Execution, tool string, res Result, st step) Result {
	finished := false
	defer func() {
		if !finished {
			// Reached only by runtime.Goexit: tail contains every panic.
			s.goexit(ctx, e, exec, res)
		}
	}()
	s.tail(ctx, e, exec, tool, &res, st)
	if e.slot { // a panic of the pipeline left it
		s.releaseSlot(e)
	}
	s.suffixTurn(e)
	s.r.observeRef(ctx, exec, &res)
	if next := s.finish(ctx, e, exec, &res, false); next != nil {
		s.batch.nextSuffix(next)
	}
	finished = true
	return res
}

// dispatchHalf is the first half of complete for a parallel call of
// ExecuteBatch, on a worker: dispatch (stages 6–7) when the call holds a
// slot, the slot given back. Then, if the previous call finished, it
// returns e for suffixHalf; else e is parked, and the worker that
// finishes the previous call runs its suffix (nil). On runtime.Goexit the
// call is completed (see goexit) and the goroutine exits.
func (s *sched) dispatchHalf(ctx context.Context, e *entry) *entry {
	finished := false
	defer func() {
		if !finished {
			// Reached only by runtime.Goexit: the dispatch contains
			// every panic.
			s.goexit(ctx, e, e.exec, *e.res)
		}
	}()
	if e.st == stepDispatch {
		s.dispatchOnly(ctx, e)
	}
	finished = true
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.slot {
		s.releaseSlotLocked(e)
	}
	if s.finished < e.index {
		s.parked[e.index] = true
		return nil
	}
	return e
}

// dispatchOnly runs e's dispatch (dispatchHalf then gives its slot
// back), its result left in *e.res; e.internal reports a panic of the
// pipeline itself, whose INTERNAL result is final.
func (s *sched) dispatchOnly(ctx context.Context, e *entry) {
	e.internal = true
	defer s.r.contain(e.exec, e.tool, e.res)
	*e.res = s.r.execute(ctx, e.em, e.exec)
	e.internal = false
}

// suffixHalf is the second half of complete for a parallel call of
// ExecuteBatch, once its suffix turn came: post-execute, finalize,
// tools/result and the done hook. It returns the next call if it is
// parked (its suffix is to run now). On runtime.Goexit the call is
// completed (see goexit) and the goroutine exits.
func (s *sched) suffixHalf(ctx context.Context, e *entry) (next *entry) {
	exec, res := e.exec, e.res // the result, in place
	finished := false
	defer func() {
		if !finished {
			// Reached only by runtime.Goexit: suffixStages contains
			// every panic.
			s.goexit(ctx, e, exec, *res)
		}
	}()
	if e.slot { // a panic of the pipeline left it
		s.releaseSlot(e)
	}
	e.suffixReady = true
	if !e.internal {
		s.suffixStages(ctx, e, exec, res)
	}
	s.r.observeRef(ctx, exec, res)
	next = s.finish(ctx, e, exec, res, false)
	finished = true
	return next
}

// suffixStages is stages 8–9 of a call, in place on *res (finalize only
// for a final result); it contains any panic of the pipeline itself. As
// run does, it skips post-execute when nothing hears it (postHeard).
func (s *sched) suffixStages(ctx context.Context, e *entry, exec *Execution, res *Result) {
	r := s.r
	defer r.contain(exec, e.tool, res)
	if e.st != stepFinal {
		if r.postHeard(exec) {
			*res = r.post(ctx, e.em, exec, *res)
		}
		exec.stage = stageFinalize
	}
	r.finalizeIn(exec, res)
}

// tail is stages 6–9 of a call after enter, in place on *res (the result
// enter returned); it contains any panic of the pipeline itself.
func (s *sched) tail(ctx context.Context, e *entry, exec *Execution, tool string, res *Result, st step) {
	r := s.r
	defer r.contain(exec, tool, res)
	if st == stepDispatch {
		*res = r.execute(ctx, e.em, exec)
		if e.slot {
			s.releaseSlot(e)
		}
	}
	s.suffixTurn(e)
	if st != stepFinal {
		if r.postHeard(exec) {
			*res = r.post(ctx, e.em, exec, *res)
		}
		exec.stage = stageFinalize
	}
	r.finalizeIn(exec, res)
}

// acquire takes a dispatch slot for e, a parallel call, waiting for one
// while the cap is reached, and releases the entry with it (one lock for
// both); it reports false, without a slot and still holding the entry,
// when ctx is done first.
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
		if s.batch != nil {
			s.batch.lend()
		}
		select {
		case <-free:
		case <-ctx.Done():
			return false
		}
		s.mu.Lock()
	}
	s.active++
	e.didRelease = true
	s.moveLocked(&s.released, e.index+1)
	s.mu.Unlock()
	return true
}

// wait waits until counter (s.released or s.finished) reaches n: until
// the entries before entry n released the entry or finished.
func (s *sched) wait(counter *int, n int) {
	s.mu.Lock()
	if *counter >= n {
		s.mu.Unlock()
		return
	}
	k := s.waitIndex(counter)
	if s.waiters[k] == nil {
		s.waiters[k] = make(map[int][]chan struct{})
	}
	ready := make(chan struct{})
	s.waiters[k][n] = append(s.waiters[k][n], ready)
	s.mu.Unlock()
	if s.batch != nil {
		s.batch.lend()
	}
	<-ready
}

func (s *sched) waitIndex(counter *int) int {
	if counter == &s.released {
		return 0
	}
	return 1
}

// advance records that entry i released the entry or finished (entries
// do both in order), and wakes whoever waits for it. A counter never goes
// back (see finishEntry).
func (s *sched) advance(counter *int, i int) {
	s.mu.Lock()
	s.moveLocked(counter, i+1)
	s.mu.Unlock()
}

// moveLocked moves counter up to n (never down) and wakes the waiters of
// the marks it passed: amortized O(1) per entry, however many wait.
// s.mu held.
func (s *sched) moveLocked(counter *int, n int) {
	old := *counter
	if n <= old {
		return
	}
	*counter = n
	ws := s.waiters[s.waitIndex(counter)]
	if len(ws) == 0 {
		return
	}
	for m := old + 1; m <= n; m++ {
		for _, ready := range ws[m] {
			close(ready)
		}
		delete(ws, m)
	}
}

// finishEntry records that e finished (and released the entry, if it had
// not), in one step; exiting is as for release. A parallel call finishes
// after it released the entry, possibly after later calls released it
// too: released then stays where they moved it (setting it to e.index+1
// made the next call wait for a later call's result, and a dispatch slot
// go unused meanwhile). It returns the next call when that call is parked
// (its dispatch ended, it waits for its suffix turn, which has come) for
// the caller to run its suffix; an exiting caller hands it to unparked
// instead.
func (s *sched) finishEntry(e *entry, exiting bool) (next *entry) {
	released := e.didRelease
	e.didRelease = true
	s.mu.Lock()
	s.moveLocked(&s.released, e.index+1)
	s.moveLocked(&s.finished, e.index+1)
	if n := s.finished; n < len(s.parked) && s.parked[n] {
		s.parked[n] = false
		next = &s.entries[n]
	}
	s.mu.Unlock()
	if !released && exiting && s.batch != nil {
		s.batch.handOff(e)
	}
	if next != nil && exiting {
		s.batch.nextSuffix(next)
		next = nil
	}
	return next
}

// releaseSlot gives e's slot back and wakes whoever waits for one.
func (s *sched) releaseSlot(e *entry) {
	s.mu.Lock()
	s.releaseSlotLocked(e)
	s.mu.Unlock()
}

// releaseSlotLocked is releaseSlot with s.mu held.
func (s *sched) releaseSlotLocked(e *entry) {
	e.slot = false
	s.active--
	if free := s.slotFree; free != nil {
		s.slotFree = nil
		close(free)
	}
}

// release lets the next call enter; exiting says that the goroutine that
// entered e is exiting before the next call entered (handOff).
func (s *sched) release(e *entry, exiting bool) {
	if e.didRelease {
		return
	}
	e.didRelease = true
	s.advance(&s.released, e.index)
	if exiting && s.batch != nil {
		s.batch.handOff(e)
	}
}

// suffixTurn waits until e may run its suffix: after the previous call's
// tools/result. A parallel call has released the entry already; an
// exclusive one keeps it until it finished.
func (s *sched) suffixTurn(e *entry) {
	if e.suffixReady {
		return
	}
	e.suffixReady = true
	if e.class == Parallel {
		s.release(e, false)
	}
	s.wait(&s.finished, e.index)
}

// finish ends e after its tools/result: the done hook, then the entry
// and suffix turns pass on (even when the hook calls runtime.Goexit).
// exiting says that the goroutine is exiting (runtime.Goexit). It returns
// the parked call whose suffix is now to run (see finishEntry), if any.
func (s *sched) finish(ctx context.Context, e *entry, exec *Execution, res *Result, exiting bool) (next *entry) {
	returned := false
	defer func() {
		if e.over {
			return
		}
		e.over = true
		next = s.finishEntry(e, exiting || !returned)
	}()
	if !e.doneRan {
		e.doneRan = true
		if s.batch != nil {
			s.batch.done(ctx, e, exec, res)
		} else if s.done != nil {
			s.done(ctx, e, exec, *res)
		}
	}
	returned = true
	return nil
}

// goexit completes a call whose goroutine is exiting through
// runtime.Goexit, as Registry.goexit does for Execute, keeping the batch's
// order: bodies still running are waited for, the slot is released, the
// call's one result is emitted after the previous call's (unless the
// Goexit happened while it was being emitted; one in a tracer's End, just
// before, emits the call's own result), and then the call
// finishes as any other (an exclusive call keeps the entry until then).
// res is the call's result so far: its final result once observe began.
func (s *sched) goexit(ctx context.Context, e *entry, exec *Execution, res Result) {
	exec.bodies.settle(ErrAbandoned)
	if e.slot {
		s.releaseSlot(e)
	}
	if e.class == Parallel {
		s.release(e, true)
	}
	defer func() { _ = s.finish(ctx, e, exec, &res, true) }()
	if s.r.resumeResult(ctx, exec, &res) {
		return
	}
	res = s.r.goexitResult(exec)
	s.wait(&s.finished, e.index)
	s.r.observe(ctx, exec, res)
}

// growStack pre-sizes a new worker's stack. The pipeline's frames take
// several KB, and growing a fresh goroutine's stack to that by copying it
// (while deep in the call) costs more than a trivial call itself; one
// frame this large at the start grows it once, while it is empty (the
// argument keeps the compiler from folding the frame away).
//
//go:noinline
func growStack(i int) byte {
	var buf [growBytes]byte
	buf[i%growBytes] = byte(i)
	return buf[(i*7)%growBytes]
}

const growBytes = 4 << 10

// workerSpins is how many times an idle worker yields before it sleeps.
const workerSpins = 20
