package approval

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// DefaultAttempts is how many times [Terminal] asks before it takes an
// unparseable answer as a rejection.
const DefaultAttempts = 3

// maxLineBytes bounds what is kept of one input line.
const maxLineBytes = 4096

// Terminal is an interactive [Answerer]: it writes the request's call card
// and reason (see [Render]) to out, asks whether to allow it once (y/N) and reads the
// answer from in, one line at a time:
//
//   - "y" or "yes" (any case, surrounding blanks ignored): allowed-once;
//   - "n", "no" or an empty line: rejected;
//   - end of input (or a read error): unavailable, now and for every later
//     request;
//   - anything else: it asks again, up to Attempts times in all, then
//     rejects (fail closed).
//
// One question at a time: concurrent requests wait in a first-come,
// first-served queue, and one that is withdrawn (its call cancelled, its
// deadline passed) while waiting leaves the queue without ever being shown.
//
// Attribution: each question takes the next line read after it was shown.
// A request withdrawn while shown gets a withdrawal line on screen, and the
// line being read for it still belongs to it: that line is discarded, and
// the next question is shown only once it has arrived (the withdrawal line
// asks the person to press Enter). So an answer typed for one call can
// never approve another one, and scripted input (a pipe, a file) stays
// deterministic: one line per question shown, plus one per question
// withdrawn while shown. A line that arrives once the question was
// withdrawn (its call cancelled, the deadline reached, even in the same
// instant) is not taken: it grants nothing, is not read by the next
// question either, and a withdrawal line says the answer was not applied.
// Lines typed before a question appears are, as with any plain io.Reader,
// read by the next question.
//
// The terminal reads in on a goroutine only while a line is awaited (an
// io.Reader cannot be interrupted); that goroutine ends when the line, end
// of input or a read error arrives. After a withdrawal it may outlive the
// request until the person presses Enter; close in to end it.
//
// A Terminal is safe for concurrent use. It writes to out only while a
// request holds the turn, so its output is never interleaved.
type Terminal struct {
	// Attempts is how many times one request is asked before an
	// unparseable answer counts as a rejection; zero means
	// DefaultAttempts. Set it before the first request.
	Attempts int

	in   io.Reader
	out  io.Writer
	turn turnstile

	// Owned by the holder of the turn (the turnstile orders the holders).
	br      *bufio.Reader
	lines   chan lineResult // the in-flight read delivers here
	reading bool            // a read is in flight
	stale   bool            // ... and its line belongs to a withdrawn question
	ended   bool            // in reported end of input or an error
}

type lineResult struct {
	line string
	cut  bool // the line was longer than maxLineBytes
	err  error
}

var _ Answerer = (*Terminal)(nil)

// NewTerminal returns a terminal prompt reading answers from in and
// writing questions to out.
func NewTerminal(in io.Reader, out io.Writer) *Terminal {
	return &Terminal{in: in, out: out, br: bufio.NewReader(in), lines: make(chan lineResult, 1)}
}

// Answer implements [Answerer]. The request is withdrawn once ctx is done;
// a line that arrives from then on (even in the same instant) is not taken
// (see [Terminal]).
func (t *Terminal) Answer(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	return t.answerSlot(ctx, req, contextSlot(ctx))
}

func (t *Terminal) answerSlot(ctx context.Context, req tools.ApprovalRequest, sl *slot) (tools.ApprovalOutcome, error) {
	if err := t.turn.acquire(ctx); err != nil {
		return sl.result(ctx) // withdrawn while queued: never shown
	}
	defer t.turn.release()
	if t.stale {
		// The line awaited for a withdrawn question is not ours: wait for
		// it (the person was asked to press Enter) and drop it.
		select {
		case lr := <-t.lines:
			t.reading, t.stale = false, false
			t.ended = t.ended || lr.err != nil
		case <-ctx.Done():
			return sl.result(ctx) // never shown
		}
	}
	if st, _, cause := sl.decision(); st == slotWithdrawn {
		return "", cause // withdrawn before its turn came: never shown
	}
	if t.ended {
		return take(sl, tools.Unavailable)
	}
	w := &errWriter{w: t.out}
	w.print(Render(req))
	attempts := t.Attempts
	if attempts <= 0 {
		attempts = DefaultAttempts
	}
	for attempt := 1; ; attempt++ {
		w.print("Allow once? [y/N] ")
		if w.err != nil {
			// What cannot be shown cannot be answered.
			return take(sl, tools.Unavailable)
		}
		if !t.reading {
			t.reading = true
			go t.read()
		}
		var lr lineResult
		select {
		case lr = <-t.lines:
			t.reading = false
		case <-ctx.Done():
			// Withdrawn while shown: the line being read is its.
			t.stale = true
			o, err := sl.result(ctx)
			if err != nil {
				w.print(withdrawal(req, err, "Press Enter to continue."))
			}
			return o, err
		}
		if lr.err != nil {
			t.ended = true
			if lr.line == "" {
				w.print("\n(no more input: approval unavailable)\n")
				return take(sl, tools.Unavailable)
			}
			// A last line without a line ending still counts.
		}
		answer := strings.ToLower(strings.TrimSpace(lr.line))
		if lr.cut {
			// Only part of the line was kept: it cannot be read as an
			// answer, whatever it starts with (fail closed).
			answer = "\x00"
		}
		switch answer {
		case "y", "yes":
			return t.answered(w, req, sl, tools.AllowedOnce)
		case "n", "no", "":
			return t.answered(w, req, sl, tools.Rejected)
		}
		if attempt >= attempts {
			w.print("No valid answer: rejected.\n")
			return t.answered(w, req, sl, tools.Rejected)
		}
		if t.ended {
			w.print("\n(no more input: approval unavailable)\n")
			return take(sl, tools.Unavailable)
		}
		w.print("Please answer y (yes) or n (no).\n")
	}
}

// answered takes the person's answer o, unless the request was withdrawn
// first: the person is then told that the answer was not applied, and the
// line it came from is used up (it is not read by the next question).
func (t *Terminal) answered(w *errWriter, req tools.ApprovalRequest, sl *slot, o tools.ApprovalOutcome) (tools.ApprovalOutcome, error) {
	o, err := take(sl, o)
	if err != nil {
		w.print(withdrawal(req, err, "The answer came too late and was not applied."))
	}
	return o, err
}

// take settles sl with o; if the request was withdrawn first, it returns
// the withdrawal's cause instead.
func take(sl *slot, o tools.ApprovalOutcome) (tools.ApprovalOutcome, error) {
	if err := sl.settle(o, nil); err != nil {
		if st, _, cause := sl.decision(); st == slotWithdrawn {
			return "", cause
		}
		return "", err
	}
	return o, nil
}

// read reads one line for the turn holder. Only one read is in flight at
// a time, so the bufio.Reader is used sequentially.
func (t *Terminal) read() {
	ln, cut, err := readLine(t.br)
	t.lines <- lineResult{ln, cut, err}
}

// withdrawal is the line shown when a question is withdrawn: what, why, and
// then what happens. The cause may be the caller's (context.Cause of the
// call's context): it is read only through safeerr, bounded, so a cyclic
// cause cannot keep the answerer (and so Close) from returning.
func withdrawal(req tools.ApprovalRequest, cause error, then string) string {
	why := "the call was cancelled"
	switch {
	case safeerr.Is(cause, ErrTimeout):
		why = "no answer before the deadline (unavailable)"
	case safeerr.Is(cause, ErrClosed):
		why = "the approval service closed"
	case safeerr.Is(cause, context.DeadlineExceeded):
		why = "the call's deadline passed"
	}
	return fmt.Sprintf("\n[withdrawn] tool %s, call %s: %s. %s\n", cardtext.Line(req.Tool), cardtext.Line(req.CallID), why, then)
}

// readLine reads one line without its line ending, keeping at most
// maxLineBytes of it; cut reports that more was discarded.
func readLine(br *bufio.Reader) (line string, cut bool, err error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		room := maxLineBytes - len(buf)
		if len(bytes.TrimRight(chunk, "\r\n")) > room {
			cut = true
		}
		if room > 0 {
			buf = append(buf, chunk[:min(len(chunk), room)]...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		s := strings.TrimSuffix(strings.TrimSuffix(string(buf), "\n"), "\r")
		return s, cut, err
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) print(s string) {
	if e.err == nil {
		_, e.err = io.WriteString(e.w, s)
	}
}

// turnstile is a first-come, first-served lock whose waiters can leave the
// queue when their context is done.
type turnstile struct {
	mu      sync.Mutex
	busy    bool
	waiters []chan struct{}
}

func (t *turnstile) acquire(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	t.mu.Lock()
	if !t.busy {
		t.busy = true
		t.mu.Unlock()
		return nil
	}
	w := make(chan struct{})
	t.waiters = append(t.waiters, w)
	t.mu.Unlock()
	select {
	case <-w:
		return nil
	case <-ctx.Done():
		t.mu.Lock()
		for i, x := range t.waiters {
			if x == w {
				t.waiters = append(t.waiters[:i:i], t.waiters[i+1:]...)
				t.mu.Unlock()
				return context.Cause(ctx)
			}
		}
		t.mu.Unlock()
		// The turn was handed to us as ctx ended: pass it on.
		t.release()
		return context.Cause(ctx)
	}
}

func (t *turnstile) release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.waiters) == 0 {
		t.busy = false
		return
	}
	w := t.waiters[0]
	t.waiters = t.waiters[1:]
	close(w)
}
