package isolated

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// The environment of a worker process: workerEnv holds the protocol version, workerConfigEnv the
// JSON of the parent's Config.
const (
	workerEnv       = "DSH_CODERUNTIME_WORKER"
	workerConfigEnv = "DSH_CODERUNTIME_WORKER_CONFIG"
)

// entered is set once the program opted into being a worker (ServeIfWorker): New refuses to start
// workers from a binary that would not serve them.
var entered atomic.Bool

// ServeIfWorker is the entry of a worker process, in the style of Docker's reexec.Init: a program
// that uses isolated runtimes calls it first thing in main (and a test package that does, in
// TestMain), before anything else runs:
//
//	func main() {
//		isolated.ServeIfWorker()
//		...
//	}
//
// In a process the parent started as a worker (the environment variable DSH_CODERUNTIME_WORKER
// holds the protocol version) it serves that one run on file descriptors 3 and 4 and exits the
// process; otherwise it returns at once, having only recorded that this binary can serve workers.
// Nothing happens in a package init: a binary that does not call it never turns into a worker,
// whatever its environment says, and [New] refuses to start workers in it ([ErrNoWorkerEntry]).
func ServeIfWorker() { serveIfWorker(nil) }

// serveIfWorker is ServeIfWorker; hook, when not nil (only this package's tests), replaces the
// worker with a misbehaving one for the mode it returns true for.
func serveIfWorker(hook func(in, out *os.File) bool) {
	entered.Store(true)
	v, ok := os.LookupEnv(workerEnv)
	if !ok {
		return
	}
	// The worker serves on an ordinary goroutine: the caller's may be locked to the main thread
	// (when called from an init), which makes every hand-off to it a thread switch.
	code := make(chan int)
	go func() { code <- serveWorker(v, hook) }()
	os.Exit(<-code)
}

// serveWorker is the worker's life; it returns the exit code.
func serveWorker(version string, hook func(in, out *os.File) bool) int {
	_ = os.Unsetenv(workerEnv)
	raw := os.Getenv(workerConfigEnv)
	_ = os.Unsetenv(workerConfigEnv)
	fail := func(format string, args ...any) int {
		fmt.Fprintf(os.Stderr, "coderuntime worker: "+format+"\n", args...)
		return 2
	}
	if version != strconv.Itoa(protocolVersion) {
		return fail("protocol version %q, want %d", version, protocolVersion)
	}
	// Non-blocking before os.NewFile, which then uses the runtime's poller for them: a read
	// waiting for the parent parks its goroutine instead of blocking a thread in a system call.
	if !legacyWorkerIO() {
		setNonblock(3)
		setNonblock(4)
	}
	in, out := os.NewFile(3, "coderuntime-from-parent"), os.NewFile(4, "coderuntime-to-parent")
	if in == nil || out == nil {
		return fail("no pipes from the parent on file descriptors 3 and 4")
	}
	if hook != nil && hook(in, out) {
		return 0
	}
	var cfg coderuntime.Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return fail("config: %v", err)
	}
	workerSetup()
	// One P: the run is one goroutine at a time (the engine's, a binding's, the reader's), and a
	// second P only adds threads woken to look for work on every hand-off, which compete for the
	// CPU with the parent waiting for the next message. Asynchronous preemption still gives the
	// budgets' timers and the watchdog their turn during a busy program.
	procs := 1
	if legacyWorkerIO() {
		procs = min(runtime.NumCPU(), 2) // the behaviour before, for the benchmarks' comparison
	}
	runtime.GOMAXPROCS(procs)
	debug.SetMemoryLimit(cfg.MaxMemoryBytes / 4 * 3)
	// An operator's GOGC (inherited from the host's environment) is theirs: the worker keeps it.
	tunedGC := !legacyWorkerIO() && !defaultWorkerGC() && os.Getenv("GOGC") == ""
	if tunedGC {
		tuneWorkerGC(gcTuner{set: debug.SetGCPercent, live: liveHeap})
	}
	cfg.Isolation = coderuntime.IsolationNone
	// Calls are queued by the parent, which knows every call as soon as it is made.
	cfg.MaxConcurrentCalls = cfg.MaxPendingCalls
	cfg.MaxHeapBytes = workerHeapBytes(cfg)
	rt, err := newEngine(cfg)
	if err != nil {
		return fail("engine: %v", err)
	}
	// Warm the engine up (first-use initialization, page faults) before reporting ready.
	_, _ = rt.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	settleWorkerHeap(tunedGC, runtime.GC)

	// Raw system calls first (see rawFile): the round trip of a call then takes no turn through
	// the scheduler when the parent answers within the worker's write, as it mostly does.
	var toParent io.Writer = out
	var fromParentFile io.Reader = in
	var rawIn *rawFile
	if !legacyWorkerIO() && !backgroundReads() {
		rawIn = &rawFile{f: in, fd: 3}
		toParent, fromParentFile = &rawFile{f: out, fd: 4}, rawIn
	}
	s := &workerSession{cfg: cfg, out: toParent, raw: rawIn, waiting: map[uint64]chan jsengine.Answer{}, held: map[uint64][]byte{}, next: 1,
		bgWake: make(chan struct{}, 1), exit: os.Exit}
	var hello enc
	hello.uint(protocolVersion)
	hello.uint(uint64(os.Getpid()))
	if err := s.writeFrame(frameHello, hello.b); err != nil {
		return fail("hello: %v", err)
	}
	// Buffered: a frame's header and body usually arrive in one read.
	var fromParent io.Reader = bufio.NewReaderSize(fromParentFile, 64<<10)
	if legacyWorkerIO() {
		fromParent = in
	}
	t, body, err := readFrame(fromParent, workerFrameLimit)
	if err != nil || t != frameRun {
		return 3 // the parent went away, or was closed before handing a program over
	}
	req, err := decodeRunRequest(body)
	if err != nil {
		return fail("run request: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s.rd, s.cancel = fromParent, cancel
	go s.background()
	s.mu.Lock()
	if legacyWorkerIO() || backgroundReads() {
		// The background goroutine reads everything (the behaviour before, for the benchmarks'
		// comparison).
		s.pinned, s.reading = true, true
		s.bgWake <- struct{}{}
	} else {
		s.idle = time.AfterFunc(idleRead, s.idleFired)
	}
	s.mu.Unlock()
	if req.Timeout > 0 {
		var cancelT context.CancelFunc
		ctx, cancelT = context.WithTimeout(ctx, req.Timeout)
		defer cancelT()
	}
	bindings := make(map[string]coderuntime.Binding, len(req.Names))
	for _, n := range req.Names {
		bindings[n] = s.proxy(n)
	}
	prog := coderuntime.Program{Source: req.Source, Namespace: req.Namespace, Bindings: bindings}
	var res *coderuntime.Result
	if g, ok := rt.(*goja.Runtime); ok && req.JS != "" {
		res, err = g.RunTransformed(ctx, prog, jsengine.Transformed{JS: req.JS})
	} else {
		res, err = rt.Run(ctx, prog)
	}
	if err := s.writeFrame(frameDone, s.outcome(res, err).encode()); err != nil {
		return 3
	}
	return 0
}

// workerFrameLimit bounds the frames a worker reads: the program and binding results come from
// the host, which the worker trusts, but a bound keeps a broken pipe from allocating at random.
func workerFrameLimit(t byte) int {
	switch t {
	case frameRun, frameAnswer:
		return 1 << 30
	case frameCancel, frameWake:
		return 0
	}
	return -1
}

// workerSession is the worker's side of the run.
//
// Reading the parent's pipe is a role held by one goroutine at a time (reading). A binding call
// awaited while no goroutine reads (a program awaiting its calls one by one) reads its answer
// itself, on its own goroutine (the engine's): no goroutine is woken to hand it over, and as the
// parent mostly answers while the worker's write of the call hands it the CPU, the raw read finds
// the answer there (see rawFile). Calls
// awaited while another goroutine reads get their answers from it. The role goes to the background
// goroutine when its holder returns while other calls still wait, or when no goroutine read for
// idleRead (so that a cancellation reaches a program that computes without calls); the background
// goroutine gives it up once no call waits. A goroutine reading for its answer whose context ends
// meanwhile is woken by the parent, which answers the settlement frame (sent when the bindings'
// context ends) with frameWake.
type workerSession struct {
	cfg    coderuntime.Config
	out    io.Writer
	rd     io.Reader          // from the parent: read only by the goroutine holding the role
	raw    *rawFile           // under rd, or nil (legacy I/O): its wait is set while a call reads its own answer
	cancel context.CancelFunc // the run's context, cancelled by frameCancel
	bgWake chan struct{}      // room for one: the background goroutine holds the role now
	exit   func(code int)     // os.Exit (tests end the goroutine instead): the parent went away or broke the protocol

	mu       sync.Mutex // guards everything below, and writes to out
	waiting  map[uint64]chan jsengine.Answer
	reading  bool              // a goroutine holds the reading role
	pinned   bool              // the background goroutine keeps the role (legacy I/O)
	idle     *time.Timer       // fires idleRead after the role was given up (idleFired)
	held     map[uint64][]byte // call frames by number, waiting for their turn; nil means skipped
	next     uint64            // the next call number to send
	ownSeq   uint64            // numbering for an engine that does not number its calls
	settled  bool              // frameSettled was sent (or the outcome is being sent)
	wbuf     []byte            // call frames' reused buffer
	watching bool              // settlement of the binding context is watched
}

// answerWait is how long a call reading its own answer waits for it in a raw system call, keeping
// the worker's only P, before it parks on the poller (see rawFile): the answers of fast bindings
// come well within it, and the engine's timers, the watchdog and a cancellation's settlement wait
// that long at most.
const answerWait = time.Millisecond

// idleRead is how long the reading role stays free before the background goroutine takes it: at
// most that long, a cancellation waits while the program computes without making calls.
const idleRead = time.Millisecond

func (s *workerSession) writeFrame(t byte, b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeFrame(s.out, t, b)
}

// readOne reads one frame from the parent, on the goroutine holding the reading role: it cancels
// the run (frameCancel), ignores frameWake, and hands an answer to the call waiting for it, or
// returns it when it is call number mine's (got). When the parent goes away the worker exits.
func (s *workerSession) readOne(mine uint64) (a jsengine.Answer, got bool) {
	t, body, err := readFrame(s.rd, workerFrameLimit)
	if err != nil {
		s.exit(3)
	}
	switch t {
	case frameCancel:
		s.cancel()
	case frameWake:
	case frameAnswer:
		a, err := decodeAnswer(body)
		if err != nil {
			fmt.Fprintf(os.Stderr, "coderuntime worker: answer: %v\n", err)
			s.exit(2)
		}
		s.mu.Lock()
		ch := s.waiting[a.Seq]
		delete(s.waiting, a.Seq)
		s.mu.Unlock()
		if ch != nil && a.Seq == mine {
			return a, true
		}
		if ch != nil {
			ch <- a // room for one, and one answer per call
		}
	default:
		fmt.Fprintf(os.Stderr, "coderuntime worker: unexpected frame %q\n", t)
		s.exit(2)
	}
	return a, false
}

// releaseLocked gives the reading role up: to the background goroutine while calls still wait
// (or the role is pinned to it), else to nobody, until the next call or idleRead. mu is held.
func (s *workerSession) releaseLocked() {
	if len(s.waiting) > 0 || s.pinned {
		s.bgWake <- struct{}{} // reading stays set: the role passes on
		return
	}
	s.reading = false
	s.idle.Reset(idleRead)
}

// idleFired gives the reading role to the background goroutine if nobody took it since it was
// given up (see idleRead).
func (s *workerSession) idleFired() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.reading {
		s.reading = true
		s.bgWake <- struct{}{}
	}
}

// background reads for the calls waiting and for cancellation whenever it is given the role,
// until no call waits.
func (s *workerSession) background() {
	for range s.bgWake {
		for {
			s.readOne(0)
			s.mu.Lock()
			if len(s.waiting) == 0 && !s.pinned {
				s.reading = false
				s.idle.Reset(idleRead)
				s.mu.Unlock()
				break
			}
			s.mu.Unlock()
		}
	}
}

// leadLocked takes the reading role for call number seq if nobody holds it, the call's answer
// was not read yet (the background goroutine may have read it before the call got to await it:
// it is then on the call's channel) and ctx is not done. mu is held.
func (s *workerSession) leadLocked(ctx context.Context, seq uint64) bool {
	_, unanswered := s.waiting[seq]
	if !unanswered || s.reading || ctx.Err() != nil {
		return false
	}
	s.reading = true
	return true
}

// await waits for the answer of call number seq, whose answer comes on ch unless this goroutine
// reads it itself, or for ctx's end.
func (s *workerSession) await(ctx context.Context, seq uint64, ch chan jsengine.Answer) (jsengine.Answer, error) {
	s.mu.Lock()
	lead := s.leadLocked(ctx, seq)
	s.mu.Unlock()
	if lead {
		if s.raw != nil {
			s.raw.wait = answerWait
		}
		for {
			a, got := s.readOne(seq)
			s.mu.Lock()
			if !got && ctx.Err() != nil {
				delete(s.waiting, seq)
			}
			if got || ctx.Err() != nil {
				if s.raw != nil {
					s.raw.wait = 0 // before the role passes on
				}
				s.releaseLocked()
				s.mu.Unlock()
				if got {
					return a, nil
				}
				return a, context.Cause(ctx)
			}
			s.mu.Unlock()
		}
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiting, seq)
		s.mu.Unlock()
		return jsengine.Answer{}, context.Cause(ctx)
	}
}

// errMessageTooLarge rejects a call whose arguments exceed MaxMessageBytes.
type errMessageTooLarge struct{ n, max int }

func (e errMessageTooLarge) Error() string {
	return fmt.Sprintf("the argument is %d bytes of JSON, over the %d-byte limit for a call", e.n, e.max)
}
func (errMessageTooLarge) Code() string { return "MESSAGE_TOO_LARGE" }
func (errMessageTooLarge) Name() string { return "RangeError" }

// proxy is the binding the engine calls for name: it sends the call to the parent, in submission
// order, and waits for the answer or the run's settlement.
func (s *workerSession) proxy(name string) coderuntime.Binding {
	return func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		seq, ok := coderuntime.CallSeq(ctx)
		s.mu.Lock()
		if !ok {
			s.ownSeq++
			seq = s.ownSeq
		}
		if !s.watching {
			s.watching = true
			context.AfterFunc(ctx, func() { s.settle(ctx) })
		}
		s.mu.Unlock()
		if len(args) > s.cfg.MaxMessageBytes {
			s.submit(ctx, seq, nil, ctx.Err() != nil)
			return nil, errMessageTooLarge{len(args), s.cfg.MaxMessageBytes}
		}
		ch := make(chan jsengine.Answer, 1)
		s.mu.Lock()
		s.waiting[seq] = ch
		s.mu.Unlock()
		s.submit(ctx, seq, callFrame{Seq: seq, Name: name, Args: args}.encode(), ctx.Err() != nil)
		a, err := s.await(ctx, seq, ch)
		switch {
		case err != nil:
			return nil, err
		case a.Err:
			return nil, &jsengine.RemoteError{A: a}
		}
		return a.Result, nil
	}
}

// submit hands call number seq's frame (nil: the call was refused) to the parent in number order:
// frames wait until every lower number was submitted. A call made after settlement is preceded
// by frameSettled, so the parent delivers it with a cancelled context.
func (s *workerSession) submit(ctx context.Context, seq uint64, body []byte, afterSettle bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if afterSettle {
		s.settleLocked(ctx)
	}
	if body == nil {
		body = []byte{}
	}
	if seq == s.next && len(s.held) == 0 {
		// Its turn, and nothing waits (always, for calls awaited one by one): no map.
		s.next++
		s.writeCallLocked(body)
		return
	}
	s.held[seq] = body
	for {
		b, ok := s.held[s.next]
		if !ok {
			return
		}
		delete(s.held, s.next)
		s.next++
		s.writeCallLocked(b)
	}
}

// writeCallLocked writes a call frame (an empty body: the call was refused, nothing is sent)
// through a reused buffer; mu is held.
func (s *workerSession) writeCallLocked(body []byte) {
	if len(body) == 0 {
		return
	}
	b := append(s.wbuf[:0], 0, 0, 0, 0, frameCall)
	b = append(b, body...)
	n := len(body) + 1
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	_, _ = s.out.Write(b)
	if cap(b) <= 64<<10 {
		s.wbuf = b
	}
}

// settle tells the parent that the run settled, with the cause of the bindings' (done) context.
func (s *workerSession) settle(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settleLocked(ctx)
}

func (s *workerSession) settleLocked(ctx context.Context) {
	if !s.settled {
		s.settled = true
		var e enc
		e.uint(uint64(settleCauseCode(context.Cause(ctx))))
		_ = writeFrame(s.out, frameSettled, e.b)
	}
}

// outcome encodes Run's return values, capping texts so the frame stays within the parent's
// limit.
func (s *workerSession) outcome(res *coderuntime.Result, err error) outcome {
	s.mu.Lock()
	s.settled = true // nothing after the outcome
	s.mu.Unlock()
	var f *coderuntime.Failure
	switch {
	case err == nil && res != nil:
		return outcome{Status: outcomeResult, Value: res.Value, Logs: res.Logs}
	case safeerr.AsAny(err, &f):
		o := outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: f.Kind, Message: truncate(f.Message, maxFailureText), Line: f.Line, Column: f.Column},
			Logs: f.Logs, CauseCode: causeCode(f.Cause)}
		if o.CauseCode == causeOther {
			o.CauseText = truncate(f.Cause.Error(), maxFailureText)
		}
		return o
	case safeerr.Is(err, coderuntime.ErrInvalidProgram):
		return outcome{Status: outcomeInvalid, Invalid: truncate(err.Error(), maxFailureText)}
	case err == nil:
		return outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindCrash, Message: "the engine returned neither a result nor an error"}}
	}
	return outcome{Status: outcomeFailure, Failure: coderuntime.Failure{Kind: coderuntime.KindException, Message: truncate(err.Error(), maxFailureText)}}
}

// workerHeapBytes is the heap ceiling a worker process applies to its run (Config.MaxHeapBytes
// there): the configured one, but at most half of MaxMemoryBytes, which leaves the rest of the
// worker's memory cap to the runtime, the collector and the engine's own structures. An isolated
// runtime reports this value as its Config's MaxHeapBytes: the limit that applies.
func workerHeapBytes(cfg coderuntime.Config) int64 {
	if h := cfg.MaxMemoryBytes / 2; cfg.MaxHeapBytes <= 0 || cfg.MaxHeapBytes > h {
		return h
	}
	return cfg.MaxHeapBytes
}

// workerGCPercent is the worker's GOGC while its heap is small: a fresh process's heap grows into
// pages it never touched, and each first touch is a page fault (about 14 µs on a virtual machine).
// At the default 100 the heap's goal is at least 4 MB, and a run awaiting 1,000 calls one by one
// faulted in about 710 new pages (median of 10); at 50 (a goal of at least 2 MB) its collections
// reuse more of the pages already touched, and it faulted in about 370.
const workerGCPercent = 50

// workerGCSmallHeap is the live heap, found by a collection, at which the worker goes back to the
// default GOGC of 100: a program that keeps that much does not pay twice the collections for it.
const workerGCSmallHeap = 4 << 20

// settleWorkerHeap collects once (collect is runtime.GC) in a worker whose GOGC is tuned
// (tuned), after the engine's warm-up and before the worker reports ready, while no run waits for
// it: the run then starts with the whole headroom of its heap goal (at least 2 MB at
// workerGCPercent) over about 1 MB live, in pages already touched. Without it, a worker of a
// normal binary (about 1 MB live, so GOGC stays at workerGCPercent) reached its goal during even
// an empty run and collected there: over 100 interleaved rounds (a throwaway binary calling
// ServeIfWorker, pool of 2, 250 ms between runs) the empty run's median was 1.09-1.27 times the
// default GOGC's; with this collection 0.33-0.34 (about 1.1 ms against 3.3 ms, the default's run
// faulting in the pages it allocates), and 1,000 awaited calls 0.91-0.94 (without it 0.83-0.90).
func settleWorkerHeap(tuned bool, collect func()) {
	if tuned {
		collect()
	}
}

// gcTuner sets the worker's GOGC (set is debug.SetGCPercent) from the live heap (live), after
// every collection until it reached workerGCSmallHeap.
type gcTuner struct {
	set  func(percent int) int
	live func() uint64
}

// afterGC goes back to GOGC 100 once the live heap reached workerGCSmallHeap; it reports whether
// later collections must still be watched.
func (t gcTuner) afterGC() bool {
	if t.live() < workerGCSmallHeap {
		return true
	}
	t.set(100)
	return false
}

// tuneWorkerGC sets GOGC to workerGCPercent and watches every collection with t.afterGC (run on
// the finalizer goroutine, after the collection that found its sentinel unreachable), until that
// stops.
func tuneWorkerGC(t gcTuner) {
	t.set(workerGCPercent)
	watchGC(t.afterGC)
}

// gcSentinel is the object whose finalizer runs after each collection (see watchGC); its pointer
// field keeps it out of the tiny allocator, whose blocks free objects together.
type gcSentinel struct{ after func() bool }

// watchGC runs after once the next collection completes, and again after every collection while
// it returns true.
func watchGC(after func() bool) {
	runtime.SetFinalizer(&gcSentinel{after: after}, func(s *gcSentinel) {
		if s.after() {
			watchGC(s.after)
		}
	})
}

// liveHeap is the live heap the last collection found (the runtime's /gc/heap/live:bytes).
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return math.MaxUint64 // not reported: the default GOGC
	}
	return s[0].Value.Uint64()
}

// workerDefaultGCEnv, set in a worker's environment by this package's benchmarks only, leaves the
// worker's GOGC as it was (the behaviour before workerGCPercent), for an interleaved comparison.
const workerDefaultGCEnv = "DSH_CODERUNTIME_WORKER_DEFAULT_GC"

func defaultWorkerGC() bool { return os.Getenv(workerDefaultGCEnv) == "1" }

// workerLegacyIOEnv, set in a worker's environment by this package's benchmarks only, makes the
// worker use blocking, unbuffered pipes (the behaviour before), for an interleaved comparison.
const workerLegacyIOEnv = "DSH_CODERUNTIME_WORKER_LEGACY_IO"

func legacyWorkerIO() bool { return os.Getenv(workerLegacyIOEnv) == "1" }

// workerBackgroundReadsEnv, set in a worker's environment by this package's benchmarks only, makes
// the worker's background goroutine read every frame from the parent over the runtime's poller
// (the behaviour before calls read their own answers), for an interleaved comparison.
const workerBackgroundReadsEnv = "DSH_CODERUNTIME_WORKER_BACKGROUND_READS"

func backgroundReads() bool { return os.Getenv(workerBackgroundReadsEnv) == "1" }
