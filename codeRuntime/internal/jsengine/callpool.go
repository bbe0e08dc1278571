package jsengine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Call is one binding call.
type Call struct {
	Name string
	Fn   coderuntime.Binding
	Args json.RawMessage
	Seq  uint64 // submission number (see coderuntime.CallSeq), set by Submit
	// Slot is the runtime's own name for the call's promise (goja: an index into its run's table of
	// resolve and reject functions). The record holds nothing of the VM: a binding that keeps its
	// arguments or its context (both share the record's memory) keeps the record alive after the
	// run, and must not keep the run's VM with it.
	Slot int
	// claimed is set by the goroutine that runs the call: a worker of the pool, or the run
	// goroutine (see ClaimAlone), whichever claims it first.
	claimed atomic.Bool
	// ctx is the context the binding gets: the run's binding context numbered Seq, kept here so
	// that a call allocates no context of its own.
	ctx coderuntime.CallSeqContext
}

// NewCall is the call of binding fn (named name) with a copy of args, which the call and its
// binding own. Arguments of up to 32 bytes share the call's allocation (callInline), so such a
// call costs one allocation instead of two, and no more memory; the copy's capacity is its
// length, so that a binding appending to it writes a new array.
func NewCall[S ~string | ~[]byte](name string, fn coderuntime.Binding, args S) *Call {
	if len(args) <= callInlineArgs {
		c := &callInline{Call: Call{Name: name, Fn: fn}}
		n := copy(c.args[:], args)
		c.Args = c.args[:n:n]
		return &c.Call
	}
	a := make(json.RawMessage, len(args))
	copy(a, args)
	return &Call{Name: name, Fn: fn, Args: a}
}

// callInlineArgs is the longest arguments NewCall keeps in the call's own allocation: with them, a
// Call (96 bytes) fills a 128-byte size class, no more than a Call and short arguments (16 or more)
// in two allocations.
const callInlineArgs = 32

// callInline is a Call with room for short arguments (see NewCall).
type callInline struct {
	Call
	args [callInlineArgs]byte
}

// Completion is a binding call's outcome, sent from its goroutine to the run goroutine.
type Completion struct {
	C      *Call
	Result json.RawMessage
	Err    error
}

// HandOffDelay is how long a started call may wait for the run goroutine before it is handed to a
// goroutine of the pool while the program runs on (see CallPool).
const HandOffDelay = 100 * time.Microsecond

// CallPool runs a run's binding calls, for both engines: calls queue in submission order and start
// while fewer than max run, each on a goroutine of the pool (reused from call to call) that sends its
// completion back to the run goroutine. Only the run goroutine calls its methods; the pool's
// goroutines only receive on work and send on done.
//
// A started call is handed to a goroutine of the pool lazily: when the run goroutine waits for
// completions (ClaimAlone), or at the latest HandOffDelay after it started, by the pool's one
// timer, while the program runs on. The timer is not set per call: the first call sets it, and it
// stays set while calls keep starting (setting and stopping a timer on every call of a program
// awaiting its calls one by one cost more than the timer firing now and then); see timerHandOff.
// So a program that awaits its calls one by one wakes no goroutine for them (ClaimAlone runs each
// on the run goroutine), and a call the program does not await still runs while the program runs
// on.
type CallPool struct {
	max        int             // the run's MaxConcurrentCalls
	bindCtx    context.Context // the context every binding call gets; cancelled at settlement
	done       chan Completion // completions, room for max
	work       chan *Call      // started calls, for idle goroutines; closed at settlement
	goroutines int             // goroutines started or due to start with a handed-off call; those not running a call wait on work
	queue      []*Call
	active     int
	last       *Call  // the call started last
	seq        uint64 // binding calls accepted so far (the last CallSeq)
	wg         sync.WaitGroup

	// mu guards the started calls not handed to a goroutine yet, which the timer hands off.
	mu      sync.Mutex
	handoff []handOff
	armed   bool // timer is set to hand off (its callback has not begun)
	arms    int  // how often the timer was set (for tests)
	closed  bool // settlement: nothing more is handed off
	timer   *time.Timer
	timerWG sync.WaitGroup // the timer's settings whose callback has not ended (nor was stopped)
}

// handOff is a started call not handed to a goroutine yet; spawn says whether a new goroutine is to
// run it (else an idle one receives it on work); at is when it started.
type handOff struct {
	c     *Call
	spawn bool
	at    time.Time
}

// NewCallPool is the pool of a run whose binding calls get bindCtx, at most max at once.
func NewCallPool(bindCtx context.Context, max int) CallPool {
	return CallPool{max: max, bindCtx: bindCtx, done: make(chan Completion, max), work: make(chan *Call, max)}
}

// Submit numbers c (c.Seq, from 1 in submission order) and starts it, or queues it while max calls
// run.
func (r *CallPool) Submit(c *Call) {
	r.seq++
	c.Seq = r.seq
	if r.active < r.max {
		r.start(c)
	} else {
		r.queue = append(r.queue, c)
	}
}

// ClaimAlone returns the call in flight when it is the only one (Active is 1, none queued), it was
// started last and no worker has begun it yet, claimed for the run goroutine, which then runs it
// with RunClaimed instead of waiting for a worker to run it and send its completion: a program that
// awaits its calls one by one then costs no goroutine hand-off per call (the call was usually not
// even handed to a worker yet; one it was handed to skips it). Otherwise it returns nil and the
// call's completion arrives as usual. A call not claimed is handed to a worker at the latest
// HandOffDelay after it was submitted, so it runs while the program runs on; only a call the
// program awaits before a worker took it runs on the run goroutine, and by then the program can
// make no other call until this one completes, so none waits behind it.
//
// The run goroutine calls ClaimAlone whenever it is about to wait for completions: every call it
// does not claim that was not handed to a worker yet is handed to one now.
func (r *CallPool) ClaimAlone() *Call {
	c := r.last
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.active != 1 || len(r.queue) > 0 || c == nil || !c.claimed.CompareAndSwap(false, true) {
		r.handOffLocked()
		return nil
	}
	if len(r.handoff) == 1 && r.handoff[0].c == c {
		// Claimed before it was handed off: the goroutine it was due to start is not needed.
		if r.handoff[0].spawn {
			r.goroutines--
		}
		r.handoff[0] = handOff{}
		r.handoff = r.handoff[:0]
	}
	// The timer stays set: it stops when it finds no call to hand off (see timerHandOff).
	return c
}

// RunClaimed runs c, claimed by ClaimAlone, on the calling goroutine and returns its completion.
func (r *CallPool) RunClaimed(c *Call) Completion {
	res, err := invoke(r.bindCtx, c)
	return Completion{C: c, Result: res, Err: ReadBindingError(err)}
}

// Active is the number of calls started and not yet handled (see Handled).
func (r *CallPool) Active() int { return r.active }

// Completions delivers the outcome of each started call.
func (r *CallPool) Completions() <-chan Completion { return r.done }

// Handled records that the run goroutine handled one completion, and starts queued calls, in
// submission order, while fewer than max run.
func (r *CallPool) Handled() {
	r.active--
	for len(r.queue) > 0 && r.active < r.max {
		c := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.start(c)
	}
}

// start hands a call to an idle goroutine, or starts one when every goroutine is busy, so there are
// never more goroutines than max and a sequence of awaited calls reuses one goroutine (and its grown
// stack). done and work each have room for every active call, so neither send blocks, even after
// the loop stopped reading.
//
// The call is handed to that goroutine lazily (see CallPool): start sets the timer unless it is
// set (it then fires before this call is due, see timerHandOff).
func (r *CallPool) start(c *Call) {
	r.active++
	r.last = c
	h := handOff{c: c, spawn: r.goroutines < r.active}
	if h.spawn {
		r.goroutines++
	}
	h.at = time.Now()
	r.mu.Lock()
	r.handoff = append(r.handoff, h)
	if !r.armed {
		r.armed = true
		r.arms++
		r.timerWG.Add(1)
		if r.timer == nil {
			r.timer = time.AfterFunc(HandOffDelay, r.timerHandOff)
		} else {
			r.timer.Reset(HandOffDelay)
		}
	}
	r.mu.Unlock()
}

// timerHandOff is the timer's callback: it hands off the calls not handed off yet that started
// HandOffDelay ago or more, and sets the timer again for when the oldest one left is due; with
// none left, the timer stays unset until the next call starts. The timer is always due no later
// than every call waiting for it: start sets it only when it is not set, and then at the call's
// start or before.
func (r *CallPool) timerHandOff() {
	defer r.timerWG.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed = false
	if r.closed || len(r.handoff) == 0 {
		return
	}
	now := time.Now()
	n := 0
	for n < len(r.handoff) && now.Sub(r.handoff[n].at) >= HandOffDelay {
		n++
	}
	r.handOffFirstLocked(n)
	if len(r.handoff) > 0 {
		r.armed = true
		r.arms++
		r.timerWG.Add(1)
		r.timer.Reset(HandOffDelay - now.Sub(r.handoff[0].at))
	}
}

// disarm stops the timer when it is set and its callback has not begun; r.mu is held.
func (r *CallPool) disarm() {
	if r.armed && r.timer.Stop() {
		r.armed = false
		r.timerWG.Done()
	}
}

// handOffLocked hands each started call not handed off yet to a goroutine, in submission order;
// r.mu is held. After settlement began it does nothing: Settle handed them off.
func (r *CallPool) handOffLocked() {
	r.handOffFirstLocked(len(r.handoff))
}

// handOffFirstLocked hands off the first n calls not handed off yet, in submission order; r.mu is
// held. After settlement began it does nothing.
func (r *CallPool) handOffFirstLocked(n int) {
	if r.closed || n == 0 {
		return
	}
	for i, h := range r.handoff[:n] {
		if h.spawn {
			r.wg.Add(1)
			go r.serve(h.c)
		} else {
			r.work <- h.c
		}
		r.handoff[i] = handOff{}
	}
	m := copy(r.handoff, r.handoff[n:])
	clear(r.handoff[m:])
	r.handoff = r.handoff[:m]
}

// Settle runs at settlement, once the binding context is cancelled: it stops the pool's goroutines,
// waits for every started call to return, then delivers the calls the program made that had not
// started yet to their bindings, once each and in submission order, with the run's (cancelled)
// binding context, on a goroutine other than the run's. So a host sees every call the program
// made, exactly once (Code Mode records each as aborted before dispatch). Their results are
// discarded: the program has settled.
func (r *CallPool) Settle() {
	r.mu.Lock()
	r.disarm()
	r.handOffLocked()
	r.closed = true
	r.mu.Unlock()
	r.timerWG.Wait()
	close(r.work)
	r.wg.Wait()
	queued := r.queue
	r.queue = nil
	DeliverLate(queued, func(c *Call) { _, _ = invoke(r.bindCtx, c) })
}

// DeliverLate calls invoke on each of queued, in order, on a goroutine other than the caller's
// (a binding may assume it does not run on the run's goroutine), and returns when every one
// returned: how each runtime delivers the calls still queued when its run settles.
func DeliverLate[C any](queued []C, invoke func(C)) {
	if len(queued) == 0 {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range queued {
			invoke(c)
		}
	}()
	<-done
}

// serve runs c, then every call handed to it, until the run settles; it skips a call the run
// goroutine claimed first (see ClaimAlone).
func (r *CallPool) serve(c *Call) {
	defer r.wg.Done()
	for {
		if c.claimed.CompareAndSwap(false, true) {
			res, err := invoke(r.bindCtx, c)
			r.done <- Completion{C: c, Result: res, Err: ReadBindingError(err)}
		}
		var ok bool
		if c, ok = <-r.work; !ok {
			return
		}
	}
}

// invoke calls c's binding, turning a panic into an error.
func invoke(ctx context.Context, c *Call) (res json.RawMessage, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, BindingPanicked(c.Name, x)
		}
	}()
	c.ctx = coderuntime.CallSeqContext{Context: ctx, Seq: c.Seq}
	return c.Fn(&c.ctx, c.Args)
}

// BindingPanicked is the error of a binding call that panicked with x. x is the binding's value:
// it is formatted under recover (its Error or String method may panic too).
func BindingPanicked(name string, x any) error {
	return fmt.Errorf("binding %q panicked: %s", name, safeerr.Sprint(x))
}

// ReadBindingError reads a binding's error once, on the goroutine that called the binding, into an
// error that carries only what was read (message, code, name, details): the original's methods are
// the binding's code, and may panic, never return or form a cyclic chain. The run goroutine then
// builds the program's Error from plain data, so a hostile error rejects only its own call, in
// process as in a worker process (which reads it the same way, see BindingError).
func ReadBindingError(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*RemoteError); ok {
		return re
	}
	return &RemoteError{A: BindingError(0, err)}
}

// AnswerOf is what the program learns of a binding call's error: err as ReadBindingError left it.
func AnswerOf(err error) Answer {
	if re, ok := err.(*RemoteError); ok {
		return re.A
	}
	return BindingError(0, err)
}
