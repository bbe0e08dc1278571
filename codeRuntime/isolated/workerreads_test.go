package isolated

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// newPipeSession is a worker session reading answers from a pipe the test writes to.
func newPipeSession(t *testing.T) (*workerSession, *os.File) {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pw.Close(); pr.Close() })
	_, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &workerSession{out: io.Discard, waiting: map[uint64]chan jsengine.Answer{}, held: map[uint64][]byte{}, next: 1,
		bgWake: make(chan struct{}, 1), rd: bufio.NewReader(pr), cancel: cancel,
		exit: func(int) { runtime.Goexit() }} // at the pipe's end (the test's cleanup)
	s.idle = time.AfterFunc(time.Hour, s.idleFired) // fired by hand below
	t.Cleanup(func() { s.idle.Stop() })
	go s.background()
	return s, pw
}

// TestWorkerAnswerReadBeforeAwait: an answer the background goroutine read before its call got to
// await it (the role went to the background goroutine between the call's registration and its
// await) is taken from the call's channel: the call does not take the reading role and wait in a
// read for an answer already read.
func TestWorkerAnswerReadBeforeAwait(t *testing.T) {
	s, pw := newPipeSession(t)
	ch := make(chan jsengine.Answer, 1)
	s.mu.Lock()
	s.waiting[7] = ch
	s.mu.Unlock()
	s.idleFired() // the role stayed free for idleRead: the background goroutine takes it
	if err := writeFrame(pw, frameAnswer, encodeAnswer(jsengine.Answer{Seq: 7, Result: []byte(`"seven"`)})); err != nil {
		t.Fatal(err)
	}
	// The background goroutine reads the answer, hands it over and gives the role up.
	for {
		s.mu.Lock()
		done := len(s.waiting) == 0 && !s.reading
		s.mu.Unlock()
		if done {
			break
		}
		runtime.Gosched()
	}
	s.mu.Lock()
	lead := s.leadLocked(context.Background(), 7)
	s.mu.Unlock()
	if lead {
		t.Fatal("the call took the reading role for an answer already read")
	}
	a, err := s.await(context.Background(), 7, ch)
	if err != nil || string(a.Result) != `"seven"` {
		t.Fatalf("await: %+v, %v", a, err)
	}
}

// TestWorkerCallReadsOwnAnswer: a call awaited while nobody reads takes the reading role, reads
// its own answer (handing another call's answer over on the way) and gives the role up.
func TestWorkerCallReadsOwnAnswer(t *testing.T) {
	s, pw := newPipeSession(t)
	mine, other := make(chan jsengine.Answer, 1), make(chan jsengine.Answer, 1)
	s.mu.Lock()
	s.waiting[1], s.waiting[2] = mine, other
	s.mu.Unlock()
	var frames bytes.Buffer
	_ = writeFrame(&frames, frameAnswer, encodeAnswer(jsengine.Answer{Seq: 2, Result: []byte(`2`)}))
	_ = writeFrame(&frames, frameWake, nil)
	_ = writeFrame(&frames, frameAnswer, encodeAnswer(jsengine.Answer{Seq: 1, Result: []byte(`1`)}))
	if _, err := pw.Write(frames.Bytes()); err != nil {
		t.Fatal(err)
	}
	a, err := s.await(context.Background(), 1, mine)
	if err != nil || string(a.Result) != "1" {
		t.Fatalf("await: %+v, %v", a, err)
	}
	if b := <-other; string(b.Result) != "2" {
		t.Fatalf("the other call got %+v", b)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading || len(s.waiting) != 0 || len(mine) != 0 {
		t.Fatalf("after the answer: reading %v, waiting %v", s.reading, s.waiting)
	}
}

// TestWorkerReaderWokenAfterContextEnd: a call reading for its answer whose context ends meanwhile
// returns at the next frame (the parent's frameWake, its answer to the settlement) with the
// context's cause, and leaves no registration behind.
func TestWorkerReaderWokenAfterContextEnd(t *testing.T) {
	s, pw := newPipeSession(t)
	ch := make(chan jsengine.Answer, 1)
	s.mu.Lock()
	s.waiting[3] = ch
	s.mu.Unlock()
	ctx, cancel := context.WithCancelCause(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.await(ctx, 3, ch)
		done <- err
	}()
	// Wait until it reads, then end its context and wake it.
	for {
		s.mu.Lock()
		reading := s.reading
		s.mu.Unlock()
		if reading {
			break
		}
		runtime.Gosched()
	}
	cancel(context.DeadlineExceeded)
	if err := writeFrame(pw, frameWake, nil); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != context.DeadlineExceeded {
		t.Fatalf("await: %v, want the context's cause", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reading || len(s.waiting) != 0 {
		t.Fatalf("after the wake: reading %v, waiting %v", s.reading, s.waiting)
	}
}

// TestIsolatedParentWakesAfterSettlement: the parent answers a worker's settlement with frameWake,
// which wakes a worker goroutine reading for an answer the settlement cancelled (no answer
// follows a settlement). The stub worker settles and reports the next frame it reads.
func TestIsolatedParentWakesAfterSettlement(t *testing.T) {
	if !isolationSupported {
		t.Skip("no isolation here")
	}
	iso := stubbed(t, "settle-wake", isoConfig())
	res, err := iso.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Quote(string(frameWake)); string(res.Value) != want {
		t.Fatalf("the frame after the settlement: %s, want %s", res.Value, want)
	}
}

// waitRecorder serves frames, recording the raw wait in force at each read.
type waitRecorder struct {
	raw   *rawFile
	mu    chan struct{} // room for one: guards waits
	waits []time.Duration
	r     io.Reader
}

func (w *waitRecorder) Read(b []byte) (int, error) {
	w.mu <- struct{}{}
	w.waits = append(w.waits, w.raw.wait)
	<-w.mu
	return w.r.Read(b)
}

// TestWorkerOwnAnswerWaitsRaw: a call reading its own answer reads with the raw wait (answerWait)
// and clears it before giving the role up; the background goroutine reads without it (it must not
// hold the worker's only P while the program could run).
func TestWorkerOwnAnswerWaitsRaw(t *testing.T) {
	s, pw := newPipeSession(t)
	rec := &waitRecorder{raw: &rawFile{}, mu: make(chan struct{}, 1), r: s.rd}
	s.raw, s.rd = rec.raw, bufio.NewReaderSize(rec, frameHeader) // one read per header and body
	mine := make(chan jsengine.Answer, 1)
	s.mu.Lock()
	s.waiting[1] = mine
	s.mu.Unlock()
	if err := writeFrame(pw, frameAnswer, encodeAnswer(jsengine.Answer{Seq: 1, Result: []byte(`1`)})); err != nil {
		t.Fatal(err)
	}
	if a, err := s.await(context.Background(), 1, mine); err != nil || string(a.Result) != "1" {
		t.Fatalf("await: %+v, %v", a, err)
	}
	rec.mu <- struct{}{}
	own := rec.waits
	rec.waits = nil
	<-rec.mu
	if len(own) == 0 || own[0] != answerWait {
		t.Fatalf("the call's reads waited %v, want %v", own, answerWait)
	}
	if s.raw.wait != 0 {
		t.Fatalf("the wait stayed %v after the call returned", s.raw.wait)
	}
	// The background goroutine reads for a call registered but not awaiting.
	other := make(chan jsengine.Answer, 1)
	s.mu.Lock()
	s.waiting[2] = other
	s.mu.Unlock()
	s.idleFired()
	if err := writeFrame(pw, frameAnswer, encodeAnswer(jsengine.Answer{Seq: 2, Result: []byte(`2`)})); err != nil {
		t.Fatal(err)
	}
	if a := <-other; string(a.Result) != "2" {
		t.Fatalf("the background read %+v", a)
	}
	rec.mu <- struct{}{}
	defer func() { <-rec.mu }()
	for _, w := range rec.waits {
		if w != 0 {
			t.Fatalf("the background goroutine read with a raw wait of %v", w)
		}
	}
}
