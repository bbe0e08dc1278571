package isolated

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// isoRun is the parent's side of one run in a worker.
//
// A binding call takes no detour through Run's goroutine: the worker's reader goroutine accepts
// it (and reads the settlement) under mu and hands it to a binding goroutine, which calls the
// binding and writes the answer to the worker itself. Run's goroutine only waits for the outcome,
// the budgets, the caller's context and Close.
type isoRun struct {
	iso     *Runtime
	w       *worker
	p       coderuntime.Program
	maxConc int

	bindCtx    context.Context
	cancelBind context.CancelCauseFunc
	work       chan *isoCall // started calls, for idle binding goroutines; closed by finish
	wg         sync.WaitGroup

	mu         sync.Mutex // guards everything below
	settled    bool
	finished   bool   // finish ran: calls are no longer accepted, nor goroutines started
	settleSeen bool   // the worker sent frameSettled
	lastWSeq   uint64 // the worker's number of the last call received
	seq        uint64 // calls received (their CallSeq)
	workers    int
	active     int
	pending    int
	queue      []*isoCall
}

// isoCall is one binding call a worker asked for.
type isoCall struct {
	name string
	fn   coderuntime.Binding
	args json.RawMessage
	seq  uint64 // CallSeq: the host's numbering
	wseq uint64 // the worker's numbering, for the answer
}

func newIsoRun(iso *Runtime, w *worker, p coderuntime.Program) *isoRun {
	maxConc := iso.cfg.MaxConcurrentCalls
	if p.MaxConcurrentCalls > 0 {
		maxConc = p.MaxConcurrentCalls
	}
	return &isoRun{iso: iso, w: w, p: p, maxConc: maxConc, work: make(chan *isoCall, maxConc)}
}

// run sends the program to the worker and serves it until its outcome, a kill or ctx's end.
func (r *isoRun) run(ctx context.Context) (*coderuntime.Result, error) {
	cfg := r.iso.cfg
	runCtx, cancelRun := context.WithTimeout(ctx, cfg.Timeout)
	defer cancelRun()
	r.bindCtx, r.cancelBind = context.WithCancelCause(runCtx)
	defer r.cancelBind(coderuntime.ErrRunSettled)

	timeout := cfg.Timeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, jsengine.ContextFailure(context.DeadlineExceeded, nil)
	}
	names := slices.Sorted(maps.Keys(r.p.Bindings))
	req := runRequest{Source: r.p.Source, Namespace: r.p.Namespace, Names: names, Timeout: timeout}
	if r.iso.transformAhead() {
		// Transformed here once per program (cached): the worker, which runs one program, would
		// transform it every time.
		req.JS, _ = r.iso.wraps.Wrap(r.p.Source)
	}
	// The reader hands this run the worker's calls and settlement from now on; the worker sends
	// none before it has the program.
	r.w.run.Store(r)
	r.w.send(frameRun, req.encode())

	var cpu0 time.Duration
	if procSampling {
		_, cpu0, _ = procUsage(r.w.pid)
	}
	grace := r.iso.killGrace
	wall := time.NewTimer(timeout + grace)
	defer wall.Stop()
	tick := time.NewTicker(cfg.HeapCheckInterval)
	defer tick.Stop()
	var graceC <-chan time.Time
	ctxDone := ctx.Done()

	for {
		var res *coderuntime.Result
		var err error
		var end bool
		select {
		case f := <-r.w.frames:
			res, err, end = r.handle(f)
		case <-r.w.quit:
			// Killed by Close (the run loop's own kills end the loop where they happen).
			r.mu.Lock()
			r.settleLocked(ErrClosed)
			r.mu.Unlock()
			err, end = r.readFailure(io.EOF), true
		case <-tick.C:
			if procSampling {
				err = r.sample(cpu0)
				end = err != nil
			}
		case <-wall.C:
			r.w.kill(killWall)
			err, end = jsengine.ContextFailure(context.DeadlineExceeded, nil), true
		case <-ctxDone:
			// The worker has the same deadline and stops itself; a cancellation is passed on.
			// Either way it reports within the grace period or is killed.
			ctxDone = nil
			if !safeerr.Is(ctx.Err(), context.DeadlineExceeded) {
				r.w.send(frameCancel, nil)
			}
			t := time.NewTimer(grace)
			defer t.Stop()
			graceC = t.C
		case <-graceC:
			r.w.kill(killCancel)
			err, end = jsengine.ContextFailure(ctx.Err(), nil), true
		}
		if end {
			r.finish()
			return res, err
		}
	}
}

// finish settles the run: no call is accepted or started any more, the worker is killed (its
// run is over; a binding goroutine writing to it returns), bindings in flight are cancelled and
// awaited, then the calls still queued are delivered.
func (r *isoRun) finish() {
	r.mu.Lock()
	r.settleLocked(coderuntime.ErrRunSettled)
	r.finished = true
	r.mu.Unlock()
	r.w.kill(killDone)
	// Sends on work happen under mu while not finished: none follows.
	close(r.work)
	r.wg.Wait()
	r.deliverQueued()
}

// settleLocked cancels the bindings' context with cause (unless it ended before); queued calls
// are no longer started.
func (r *isoRun) settleLocked(cause error) {
	if !r.settled {
		r.settled = true
		r.cancelBind(cause)
	}
}

// onFrame handles a call or settlement frame on the worker's reader goroutine, in the order the
// worker sent them; an error is a protocol break, which ends the run.
// A call returned is the only call in flight, for the reader to run itself (see
// worker.runInline); it counts as started.
func (r *isoRun) onFrame(t byte, body []byte) (*isoCall, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.finished {
		return nil, nil // the run is over; the worker is being killed
	}
	if t == frameSettled {
		d := dec{b: body}
		code := d.int(causeOther)
		if err := d.end(); err != nil || r.settleSeen {
			return nil, fmt.Errorf("%w: a second or malformed settled message", errProtocol)
		}
		r.settleSeen = true
		r.settleLocked(settleCause(code))
		// A worker goroutine may be reading for the answer of a call the settlement cancelled:
		// this wakes it (no answer follows the settlement).
		r.w.send(frameWake, nil)
		return nil, nil
	}
	m, err := decodeCall(body)
	if err != nil {
		return nil, err
	}
	return r.acceptLocked(m)
}

// handle processes one frame from the worker; end reports that the run is over.
func (r *isoRun) handle(f frame) (res *coderuntime.Result, err error, end bool) {
	if f.err != nil {
		return nil, r.readFailure(f.err), true
	}
	switch f.t {
	case frameDone:
		o, err := decodeOutcome(f.body)
		if err == nil {
			err = r.checkOutcome(o)
		}
		if err != nil {
			return nil, r.protocolFailure(err), true
		}
		res, err := o.result()
		return res, err, true
	}
	return nil, r.protocolFailure(fmt.Errorf("%w: unexpected message type %q", errProtocol, f.t)), true
}

// acceptLocked validates a call from the worker and starts or queues it, or returns it to run
// on the reader's goroutine when no other call is in flight.
func (r *isoRun) acceptLocked(m callFrame) (*isoCall, error) {
	if m.Seq <= r.lastWSeq {
		return nil, fmt.Errorf("%w: call number %d after %d", errProtocol, m.Seq, r.lastWSeq)
	}
	fn, ok := r.p.Bindings[m.Name]
	if !ok {
		return nil, fmt.Errorf("%w: a call to %q, which is not a binding", errProtocol, truncate(m.Name, 100))
	}
	if len(m.Args) > r.iso.cfg.MaxMessageBytes || !json.Valid(m.Args) {
		return nil, fmt.Errorf("%w: the arguments of a call to %q are not JSON within the limit", errProtocol, m.Name)
	}
	if r.pending >= r.iso.cfg.MaxPendingCalls {
		return nil, fmt.Errorf("%w: more than %d pending calls", errProtocol, r.iso.cfg.MaxPendingCalls)
	}
	r.lastWSeq = m.Seq
	r.seq++
	c := &isoCall{name: m.Name, fn: fn, args: json.RawMessage(m.Args), seq: r.seq, wseq: m.Seq}
	r.pending++
	switch {
	case r.settled || r.active >= r.maxConc:
		r.queue = append(r.queue, c)
	case r.active == 0:
		r.active++
		r.wg.Add(1)
		return c, nil
	default:
		r.startLocked(c)
	}
	return nil, nil
}

// startLocked hands c to an idle binding goroutine or starts one (at most maxConc). work has
// room for every active call: the send never blocks.
func (r *isoRun) startLocked(c *isoCall) {
	r.active++
	if r.workers >= r.active {
		r.work <- c
		return
	}
	r.workers++
	r.wg.Add(1)
	go r.serve(c)
}

// serve runs c, answers the worker, then does the same for every call handed to it, until finish.
func (r *isoRun) serve(c *isoCall) {
	defer r.wg.Done()
	for ok := true; ok; c, ok = <-r.work {
		res, err := r.invoke(c)
		r.completed(c, res, err)
	}
}

// invoke calls c's binding with its CallSeq, turning a panic into an error.
func (r *isoRun) invoke(c *isoCall) (res json.RawMessage, err error) {
	defer func() {
		if x := recover(); x != nil {
			res, err = nil, jsengine.BindingPanicked(c.name, x)
		}
	}()
	return c.fn(coderuntime.WithCallSeq(r.bindCtx, c.seq), c.args)
}

// completed accounts for a finished call, starts queued calls and answers the worker, on the
// call's binding goroutine.
func (r *isoRun) completed(c *isoCall, res json.RawMessage, err error) {
	r.mu.Lock()
	r.active--
	r.pending--
	// Settled: the worker's call already returned. The bindings' context done: the run's deadline
	// passed or its caller cancelled, and the worker learns it from its own deadline or the cancel
	// frame (or is killed after the grace period); an answer now could beat that and let the
	// program go on past its budget, as it cannot in process.
	answer := !r.settled && r.bindCtx.Err() == nil
	for answer && len(r.queue) > 0 && r.active < r.maxConc {
		q := r.queue[0]
		r.queue[0] = nil
		r.queue = r.queue[1:]
		r.startLocked(q)
	}
	r.mu.Unlock()
	if !answer {
		return
	}
	a := jsengine.Answer{Seq: c.wseq, Result: res}
	if err != nil {
		a = jsengine.BindingError(c.wseq, err)
	}
	r.w.writeAnswer(a)
}

// deliverQueued delivers the calls still queued, in order, with the cancelled context, on a
// goroutine other than Run's; their results are discarded.
func (r *isoRun) deliverQueued() {
	queued := r.queue
	r.queue = nil
	jsengine.DeliverLate(queued, func(c *isoCall) { _, _ = r.invoke(c) })
}

// sample kills the worker over its memory or CPU limit.
func (r *isoRun) sample(cpu0 time.Duration) error {
	rss, cpu, err := procUsage(r.w.pid)
	if err != nil {
		return nil // gone: its pipe reports how
	}
	cfg := r.iso.cfg
	if rss > cfg.MaxMemoryBytes {
		r.w.kill(killMemory)
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: ErrMemoryLimit,
			Message: fmt.Sprintf("the program's worker process used %d bytes of memory, over the %d-byte limit", rss, cfg.MaxMemoryBytes)}
	}
	if cpu-cpu0 > cpuLimit(cfg.CPUBudget) {
		r.w.kill(killCPU)
		return &coderuntime.Failure{Kind: coderuntime.KindTimeout, Cause: coderuntime.ErrCPUBudget,
			Message: fmt.Sprintf("the program used its %s busy-CPU budget (its worker process used %s of CPU time)", cfg.CPUBudget, (cpu - cpu0).Round(time.Millisecond))}
	}
	return nil
}

// cpuLimit is the worker's CPU time at which the parent kills it: the engine stops a program at
// its busy-CPU budget by itself, so the parent allows a margin for what the engine does not count
// (compilation, garbage collection on other threads).
func cpuLimit(budget time.Duration) time.Duration { return budget + budget/4 + time.Second }

// readFailure is the failure of a run whose worker stopped sending: killed by the parent (the
// reason says why), or exited, crashed or killed from outside.
func (r *isoRun) readFailure(err error) *coderuntime.Failure {
	if safeerr.Is(err, errFrameTooLarge) {
		r.w.kill(killOversize)
		return &coderuntime.Failure{Kind: coderuntime.KindOutputLimit, Cause: coderuntime.ErrOutputLimit,
			Message: "the program's worker process sent a message over the limit (" + truncate(err.Error(), 300) + ")"}
	}
	if !safeerr.Is(err, io.EOF) && !safeerr.Is(err, io.ErrUnexpectedEOF) {
		return r.protocolFailure(err)
	}
	switch r.w.killedFor() {
	case killClosed:
		return &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "the code runtime was closed during the run", Cause: ErrClosed}
	case killNone:
	default:
		// Killed for a reason handled where the kill happened; not reached.
		return &coderuntime.Failure{Kind: coderuntime.KindCrash, Message: "the program's worker process was killed", Cause: ErrWorkerCrashed}
	}
	// It closed its end: it exited (or is about to). Give it the grace period, then kill it, and
	// read how it ended.
	t := time.NewTimer(r.iso.killGrace)
	select {
	case <-r.w.exited:
	case <-t.C:
	}
	t.Stop()
	r.w.kill(killProtocol)
	<-r.w.reaped
	stderr := r.w.stderr.String()
	how := r.w.exitDescription()
	switch {
	case strings.Contains(stderr, "out of memory") || strings.Contains(stderr, "cannot allocate memory"):
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: ErrMemoryLimit,
			Message: "the program's worker process ran out of memory (" + how + ")" + r.w.stderrNote()}
	case strings.Contains(stderr, "stack exceeds") || strings.Contains(stderr, "stack overflow"):
		return &coderuntime.Failure{Kind: coderuntime.KindLimit, Cause: coderuntime.ErrStackDepth,
			Message: "the program's worker process overflowed its stack (" + how + ")" + r.w.stderrNote()}
	}
	return &coderuntime.Failure{Kind: coderuntime.KindCrash, Cause: ErrWorkerCrashed,
		Message: "the program's worker process ended without reporting (" + how + ")" + r.w.stderrNote()}
}

// protocolFailure kills a worker that broke the protocol.
func (r *isoRun) protocolFailure(err error) *coderuntime.Failure {
	r.w.kill(killProtocol)
	if r.w.killedFor() == killClosed {
		return &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "the code runtime was closed during the run", Cause: ErrClosed}
	}
	return &coderuntime.Failure{Kind: coderuntime.KindCrash, Cause: errors.Join(ErrWorkerCrashed, err),
		Message: "the program's worker process broke the protocol: " + truncate(err.Error(), 300)}
}

// checkOutcome checks an outcome against the limits the engine enforces.
func (r *isoRun) checkOutcome(o outcome) error {
	cfg := r.iso.cfg
	if len(o.Value) > cfg.MaxResultBytes || (len(o.Value) > 0 && !json.Valid(o.Value)) {
		return fmt.Errorf("%w: a result value that is not JSON within %d bytes", errProtocol, cfg.MaxResultBytes)
	}
	n := 0
	for _, l := range o.Logs {
		n += len(l.Text) + 1
	}
	if n > cfg.MaxLogBytes+1 {
		return fmt.Errorf("%w: %d bytes of logs, over the %d-byte limit", errProtocol, n, cfg.MaxLogBytes)
	}
	return nil
}

// result turns the worker's outcome into Run's return values.
func (o outcome) result() (*coderuntime.Result, error) {
	switch o.Status {
	case outcomeResult:
		res := &coderuntime.Result{Logs: o.Logs}
		if len(o.Value) > 0 {
			res.Value = json.RawMessage(o.Value)
		}
		return res, nil
	case outcomeInvalid:
		return nil, fmt.Errorf("%w: %s", coderuntime.ErrInvalidProgram, strings.TrimPrefix(o.Invalid, coderuntime.ErrInvalidProgram.Error()+": "))
	}
	f := o.Failure
	f.Logs = o.Logs
	f.Cause = causeError(o.CauseCode, o.CauseText)
	return nil, &f
}

// truncate cuts s to at most n bytes (on a character boundary), marking the cut.
func truncate(s string, n int) string { return jsengine.Clip(s, n, "…") }
