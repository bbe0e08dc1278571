package isolated

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// killReason says why the parent killed a worker; the first reason sticks.
type killReason int

const (
	killNone     killReason = iota
	killDone                // the run ended: the worker's one run is over
	killClosed              // the runtime was closed
	killMemory              // resident memory over MaxMemoryBytes
	killCPU                 // CPU time over the budget and its margin
	killWall                // wall clock over the timeout and its margin
	killCancel              // the run's context was done and the worker did not report in time
	killOversize            // a message over its limit
	killProtocol            // a malformed or unexpected message
)

// frame is one message read from a worker, or the error that ended reading.
type frame struct {
	t    byte
	body []byte
	err  error
}

// worker is the parent's handle on one worker process.
type worker struct {
	cmd    *exec.Cmd
	pid    int
	in     *os.File // parent to worker
	out    *os.File // worker to parent
	stderr *capBuffer

	frames     chan frame    // from the reader goroutine
	quit       chan struct{} // closed by kill: the reader and writer stop
	exited     chan struct{} // closed once the process exited (not necessarily reaped)
	reaped     chan struct{} // closed once the process was reaped; waitErr is then set
	readerDone chan struct{}
	writerDone chan struct{}
	waitErr    error

	// run, once set (before the program is sent), takes the calls and settlement the reader
	// reads; before, such a frame is a protocol break.
	run atomic.Pointer[isoRun]

	// The reader's state, used by the goroutine holding the reader's role (see runInline).
	rd    *bufio.Reader
	limit func(byte) int
	wg    *sync.WaitGroup // the Runtime's: counts the reader goroutines

	hmu       sync.Mutex // guards the fields below
	handoff   int        // handNone, handInline, handHanded
	handTimer *time.Timer
	handArmed bool          // handTimer will fire (see runInline)
	handArms  int           // how often runInline armed it (for tests)
	inlineAt  time.Time     // when the call running inline, or the last one, started
	handAfter time.Duration // handoffAfter (tests lengthen it)

	mu     sync.Mutex
	dead   bool // the process exited: its pid must not be signalled
	reason killReason
	queue  [][]byte // frames waiting for the writer
	wake   chan struct{}

	// wmu serializes writes to in: the writer's frames and the answers binding goroutines write
	// themselves. wbuf is the answers' reused buffer; broken is set by a failed write, after
	// which nothing is written.
	wmu    sync.Mutex
	wbuf   []byte
	broken bool

	releaseOnce sync.Once
}

// start starts a worker process and waits for its hello.
func (iso *Runtime) start() (*worker, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	respR, respW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, err
	}
	stderr := &capBuffer{max: stderrCap}
	cmd := exec.Command(iso.exe)
	cmd.Args = []string{os.Args[0]}
	cmd.Env = iso.env
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	cmd.ExtraFiles = []*os.File{reqR, respW} // fd 3 and 4 in the worker
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	err = cmd.Start()
	reqR.Close()
	respW.Close()
	if err != nil {
		reqW.Close()
		respR.Close()
		return nil, err
	}
	w := &worker{cmd: cmd, pid: cmd.Process.Pid, in: reqW, out: respR, stderr: stderr,
		frames: make(chan frame), quit: make(chan struct{}), exited: make(chan struct{}), reaped: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{}), wake: make(chan struct{}, 1), wg: &iso.wg, handAfter: iso.handAfter}
	iso.wg.Add(3)
	go func() { defer iso.wg.Done(); w.wait() }()
	go func() { defer iso.wg.Done(); w.read(iso.frameLimit) }()
	go func() { defer iso.wg.Done(); w.write() }()

	timer := time.NewTimer(iso.startWait)
	defer timer.Stop()
	select {
	case f := <-w.frames:
		if f.err == nil && f.t == frameHello {
			d := dec{b: f.body}
			v, pid := d.uint(), d.uint()
			if d.end() == nil && v == protocolVersion && pid == uint64(w.pid) {
				return w, nil
			}
			f.err = fmt.Errorf("%w: bad hello (version %d, pid %d)", errProtocol, v, pid)
		} else if f.err == nil {
			f.err = fmt.Errorf("%w: expected hello, got frame type %q", errProtocol, f.t)
		}
		w.kill(killProtocol)
		w.release()
		return nil, fmt.Errorf("%w%s", f.err, w.stderrNote())
	case <-timer.C:
		w.kill(killProtocol)
		w.release()
		return nil, fmt.Errorf("no hello within %v%s", iso.startWait, w.stderrNote())
	}
}

// frameLimit is the largest body the parent accepts for each frame type from a worker.
func (iso *Runtime) frameLimit(t byte) int {
	switch t {
	case frameHello:
		return 32
	case frameSettled:
		return 16
	case frameCall:
		return iso.cfg.MaxMessageBytes + 64<<10 // the arguments, plus the name and the number
	case frameDone:
		return iso.doneLimit()
	}
	return -1
}

// doneLimit bounds the outcome frame: the value, the logs (each log costs at most 16 bytes of
// framing, and there are at most MaxLogBytes+1 logs), a capped message, and framing.
func (iso *Runtime) doneLimit() int {
	return iso.cfg.MaxResultBytes + 17*(iso.cfg.MaxLogBytes+1) + 2*maxFailureText + 1024
}

// maxFailureText caps a failure's message and cause text on the wire.
const maxFailureText = 64 << 10

// wait reaps the process. Where it can, it first learns that the process exited without reaping
// it, so that kill never signals a pid the system may have reused.
func (w *worker) wait() {
	waitExited(w.pid)
	w.mu.Lock()
	w.dead = true
	w.mu.Unlock()
	close(w.exited)
	w.waitErr = w.cmd.Wait()
	close(w.reaped)
}

// read reads frames until an error (EOF included), which it sends last, or the outcome. A call
// or the settlement goes to the run (onFrame), on this goroutine.
func (w *worker) read(limit func(byte) int) {
	// Blocking reads (Fd puts the descriptor in blocking mode; reads then tie up a thread in the
	// system call): the worker's message wakes the reading thread itself, where the runtime's
	// poller would wake a thread parked in epoll_wait and hand the goroutine over, and often
	// wake a second thread to poll meanwhile. A program awaiting its calls one by one pays that
	// on every call (about 10 µs per round trip here). The reader returns at EOF, which the
	// worker's exit (or kill) brings, as before: release waits for that before closing out.
	_ = w.out.Fd()
	// Buffered: a frame's header and body usually arrive in one read.
	w.rd = bufio.NewReaderSize(w.out, 64<<10)
	w.limit = limit
	w.readLoop()
}

// readLoop is the reader's loop, on the goroutine that holds the reader's role: read's, or one
// that took the role over from a goroutine running a call (handOff).
func (w *worker) readLoop() {
	for {
		t, body, err := readFrame(w.rd, w.limit)
		if err == nil && (t == frameCall || t == frameSettled) {
			run := w.run.Load()
			if run == nil {
				err = fmt.Errorf("%w: frame type %q before the run", errProtocol, t)
			} else {
				var c *isoCall
				if c, err = run.onFrame(t, body); err == nil {
					if c != nil && !w.runInline(run, c) {
						return // another goroutine reads now
					}
					continue
				}
			}
		}
		select {
		case w.frames <- frame{t: t, body: body, err: err}:
		case <-w.quit:
			close(w.readerDone)
			return
		}
		if err != nil || t == frameDone {
			close(w.readerDone)
			return // nothing follows the outcome: frames after it are not read
		}
	}
}

// handoffAfter is how long the reader runs a call itself before another goroutine takes over
// reading (a call made meanwhile, or the settlement, waits that long at most).
const handoffAfter = 100 * time.Microsecond

// runInline runs c, the only call in flight, on the reader's goroutine, which saves waking a
// binding goroutine and a thread for it on every call of a program awaiting its calls one by one.
// A call still running handoffAfter after it started hands the reader's role to a new goroutine,
// so that further calls start and the settlement cancels c as soon as they arrive. It reports
// whether this goroutine still holds the role.
//
// The hand-off timer is not set per call: setting a timer wakes a thread of the runtime (to wait
// for it in the poller), and then the timer's removal leaves that thread a wake-up for nothing,
// which on every call of a program awaiting its calls one by one competed with the worker for the
// CPU. Armed by the first call, the timer fires at most every handoffAfter while calls keep
// starting (see handOff), and stops once none started for that long.
func (w *worker) runInline(r *isoRun, c *isoCall) bool {
	now := time.Now()
	w.hmu.Lock()
	w.handoff, w.inlineAt = handInline, now
	if !w.handArmed {
		w.handArmed = true
		w.handArms++
		if w.handTimer == nil {
			w.handTimer = time.AfterFunc(w.handAfter, w.handOff)
		} else {
			w.handTimer.Reset(w.handAfter)
		}
	}
	w.hmu.Unlock()
	res, err := r.invoke(c)
	w.hmu.Lock()
	handed := w.handoff == handHanded
	w.handoff = handNone
	w.hmu.Unlock()
	r.completed(c, res, err)
	r.wg.Done()
	return !handed
}

// handOff, the hand-off timer's function, starts a goroutine that takes the reader's role over if
// the call running inline started handoffAfter ago or more; otherwise it fires again handoffAfter
// after that call's start, or, with no call inline, handoffAfter from now while a call started
// within the last handoffAfter (calls keep coming), and else stops (the next call arms it).
func (w *worker) handOff() {
	w.hmu.Lock()
	defer w.hmu.Unlock()
	since := time.Since(w.inlineAt)
	switch {
	case w.handoff == handInline && since < w.handAfter:
		w.handTimer.Reset(w.handAfter - since)
		return
	case w.handoff != handInline && since < w.handAfter:
		w.handTimer.Reset(w.handAfter)
		return
	case w.handoff != handInline:
		w.handArmed = false
		return
	}
	w.handArmed = false
	w.handoff = handHanded
	// The reader's goroutine, counted in wg, is still running: the Add happens before any Wait
	// could return.
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		w.readLoop()
	}()
}

// The states of the reader's role while a call runs on its goroutine.
const (
	handNone   = iota // no call runs on the reader's goroutine
	handInline        // one does, and that goroutine will go on reading
	handHanded        // one does, and another goroutine reads now
)

// send queues a frame for the writer; it never blocks.
func (w *worker) send(t byte, body []byte) {
	buf := make([]byte, 0, frameHeader+len(body))
	buf = append(buf, 0, 0, 0, 0, t)
	buf = append(buf, body...)
	n := len(body) + 1
	buf[0], buf[1], buf[2], buf[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	w.mu.Lock()
	w.queue = append(w.queue, buf)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// write writes queued frames in order until kill; a failed write drops the rest.
func (w *worker) write() {
	defer close(w.writerDone)
	for {
		select {
		case <-w.wake:
		case <-w.quit:
			return
		}
		w.mu.Lock()
		q := w.queue
		w.queue = nil
		w.mu.Unlock()
		w.wmu.Lock()
		for _, b := range q {
			w.writeLocked(b)
		}
		w.wmu.Unlock()
	}
}

// writeAnswer writes a binding call's answer to the worker, on the caller's goroutine: it blocks
// while the pipe is full, until the worker reads or is killed (which closes the pipe).
func (w *worker) writeAnswer(a jsengine.Answer) {
	w.wmu.Lock()
	defer w.wmu.Unlock()
	b := append(w.wbuf[:0], 0, 0, 0, 0, frameAnswer)
	b = appendAnswer(b, a)
	n := len(b) - frameHeader + 1
	b[0], b[1], b[2], b[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
	w.writeLocked(b)
	if cap(b) <= 64<<10 {
		w.wbuf = b // a large answer's buffer is not kept
	}
}

// writeLocked writes one encoded frame unless a write failed before; wmu is held.
func (w *worker) writeLocked(b []byte) {
	if w.broken {
		return
	}
	if _, err := w.in.Write(b); err != nil {
		w.broken = true
	}
}

// kill kills the worker (the first reason is kept) and stops its reader and writer.
func (w *worker) kill(why killReason) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.reason != killNone {
		return
	}
	w.reason = why
	if !w.dead {
		killGroup(w.pid)
		if !procSampling {
			_ = w.cmd.Process.Kill()
		}
	}
	close(w.quit)
	// Its run is over: the hand-off timer has nothing left to do.
	w.hmu.Lock()
	if w.handTimer != nil && w.handTimer.Stop() {
		w.handArmed = false
	}
	w.hmu.Unlock()
	// A writer blocked on a full pipe returns once the process is gone; closing our end also
	// unblocks it on platforms where the kill is late.
	_ = w.in.Close()
}

// killedFor returns the reason of the kill, or killNone.
func (w *worker) killedFor() killReason {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.reason
}

// isDead reports whether the process already exited (an idle worker that died).
func (w *worker) isDead() bool {
	select {
	case <-w.exited:
		return true
	default:
		return false
	}
}

// release waits for the reader and writer to stop and closes the parent's ends of the pipes. The
// worker must have been killed. The reaper goroutine ends on its own (Close waits for it).
func (w *worker) release() {
	w.releaseOnce.Do(func() {
		<-w.writerDone
		// The reader returns at EOF (the process is gone) or on quit.
		<-w.readerDone
		_ = w.out.Close()
	})
}

// stderrNote is ": <the first line of the worker's output>" or "".
func (w *worker) stderrNote() string {
	s := w.stderr.String()
	if s == "" {
		return ""
	}
	return ": " + firstLines(s, 3, 1024)
}

// firstLines returns up to n non-empty lines of s, at most max bytes, joined by " / ".
func firstLines(s string, n, max int) string {
	var out []byte
	lines := 0
	for len(s) > 0 && lines < n {
		line := s
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			line, s = s[:i], s[i+1:]
		} else {
			s = ""
		}
		if len(strings.TrimSpace(line)) == 0 {
			continue
		}
		if lines > 0 {
			out = append(out, " / "...)
		}
		out = append(out, strings.TrimSpace(line)...)
		lines++
	}
	return truncate(string(out), max)
}

// exitDescription describes how the reaped process ended.
func (w *worker) exitDescription() string {
	var ee *exec.ExitError
	if safeerr.AsAny(w.waitErr, &ee) {
		return ee.ProcessState.String()
	}
	if w.waitErr != nil {
		return w.waitErr.Error()
	}
	return "exit status 0"
}
