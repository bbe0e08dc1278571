package coderuntime

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// call is one binding call.
type call struct {
	name    string
	fn      Binding
	args    json.RawMessage
	seq     uint64 // submission number (see CallSeq)
	resolve func(any) error
	reject  func(any) error
}

// completion is a binding call's outcome, sent from its worker to the run goroutine.
type completion struct {
	c      *call
	result json.RawMessage
	err    error
}

// callPool runs a run's binding calls, for both engines: calls queue in submission order and start
// while fewer than max run, each on a worker goroutine (reused from call to call) that sends its
// completion back to the run goroutine. Only the run goroutine touches its fields, except the
// workers' receives on work and sends on done.
type callPool struct {
	max     int             // the run's MaxConcurrentCalls
	bindCtx context.Context // the context every binding call gets; cancelled at settlement
	done    chan completion // completions, room for max
	work    chan *call      // started calls, for idle workers; closed at settlement
	workers int             // worker goroutines started; those not running a call wait on work
	queue   []*call
	active  int
	seq     uint64 // binding calls accepted so far (the last CallSeq)
	wg      sync.WaitGroup
}

// newCallPool is the pool of a run whose binding calls get bindCtx, at most max at once.
func newCallPool(bindCtx context.Context, max int) callPool {
	return callPool{max: max, bindCtx: bindCtx, done: make(chan completion, max), work: make(chan *call, max)}
}

// startQueued starts queued calls, in submission order, while fewer than max run.
func (r *callPool) startQueued() {
	for len(r.queue) > 0 && r.active < r.max {
		c := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.start(c)
	}
}

// start hands a call to an idle worker, or starts a worker when every worker is busy, so there are
// never more workers than max and a sequence of awaited calls reuses one goroutine (and its grown
// stack). done and work each have room for every active call, so neither send blocks, even after
// the loop stopped reading.
func (r *callPool) start(c *call) {
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
func (r *callPool) deliverQueued() {
	queued := r.queue
	r.queue = nil
	deliverLate(queued, func(c *call) { _, _ = invoke(r.bindCtx, c) })
}

// deliverLate calls invoke on each of queued, in order, on a goroutine other than the caller's
// (a binding may assume it does not run on the run's goroutine), and returns when every one
// returned: how each runtime delivers the calls still queued when its run settles.
func deliverLate[C any](queued []C, invoke func(C)) {
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

// worker runs c, then every call handed to it, until the run settles.
func (r *callPool) worker(c *call) {
	defer r.wg.Done()
	for {
		res, err := invoke(r.bindCtx, c)
		r.done <- completion{c: c, result: res, err: readBindingError(err)}
		var ok bool
		if c, ok = <-r.work; !ok {
			return
		}
	}
}

// invoke calls c's binding, turning a panic into an error.
func invoke(ctx context.Context, c *call) (res json.RawMessage, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, bindingPanicked(c.name, x)
		}
	}()
	return c.fn(WithCallSeq(ctx, c.seq), c.args)
}

// bindingPanicked is the error of a binding call that panicked with x. x is the binding's value:
// it is formatted under recover (its Error or String method may panic too).
func bindingPanicked(name string, x any) error {
	return fmt.Errorf("binding %q panicked: %s", name, safeerr.Sprint(x))
}

// readBindingError reads a binding's error once, on the goroutine that called the binding, into an
// error that carries only what was read (message, code, name, details): the original's methods are
// the binding's code, and may panic, never return or form a cyclic chain. The run goroutine then
// builds the program's Error from plain data, so a hostile error rejects only its own call, in
// process as in a worker process (which reads it the same way, see bindingError).
func readBindingError(err error) error {
	if err == nil {
		return nil
	}
	if re, ok := err.(*remoteError); ok {
		return re
	}
	a := bindingError(0, err)
	return &remoteError{a: a}
}

// answerOf is what the program learns of a binding call's error: err as readBindingError left it.
func answerOf(err error) answer {
	if re, ok := err.(*remoteError); ok {
		return re.a
	}
	return bindingError(0, err)
}
