package approval_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
)

// raceRounds is how many times each constructed race is run. Under
// synctest every round is the same race (the answer and the withdrawal in
// the same instant); the order in which the runtime runs the goroutines of
// one instant is what varies.
const raceRounds = 200

// An answer given in the very instant the deadline is reached is late:
// whichever goroutine the runtime runs first, nothing is granted, and a
// Queue's Respond says so.
func TestG2_AnswerAtTheDeadlineInstantGrantsNothing(t *testing.T) {
	const timeout = time.Second
	t.Run("answer func", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := mustNew(t, approval.Config{Timeout: timeout, Answerer: approval.AnswerFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				time.Sleep(timeout) // wakes in the deadline's instant
				return tools.AllowedOnce, nil
			})}, nil)
			defer s.Close()
			for i := range raceRounds {
				start := time.Now()
				o, err := s.Approve(context.Background(), req(fmt.Sprint("c", i), nil))
				if o != tools.Unavailable || err != nil || time.Since(start) != timeout {
					t.Fatalf("round %d: %q, %v after %v; want unavailable after %v", i, o, err, time.Since(start), timeout)
				}
			}
		})
	})
	t.Run("queue", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := approval.NewQueue()
			s := mustNew(t, approval.Config{Timeout: timeout, Answerer: q}, nil)
			defer s.Close()
			for i := range raceRounds {
				late := make(chan error, 1)
				go func() {
					p := <-q.Requests()
					time.Sleep(timeout)
					late <- p.Respond(tools.AllowedOnce)
				}()
				o, err := s.Approve(context.Background(), req(fmt.Sprint("c", i), nil))
				if o != tools.Unavailable || err != nil {
					t.Fatalf("round %d: %q, %v; want unavailable", i, o, err)
				}
				if err := <-late; !errors.Is(err, approval.ErrWithdrawn) || !errors.Is(err, approval.ErrTimeout) {
					t.Fatalf("round %d: late Respond = %v; want ErrWithdrawn (ErrTimeout)", i, err)
				}
			}
		})
	})
	t.Run("pipeline", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			q := approval.NewQueue()
			e.approval(t, approval.Config{Answerer: q, Timeout: timeout})
			for i := range raceRounds / 4 {
				late := make(chan error, 1)
				go func() {
					p := <-q.Requests()
					time.Sleep(timeout)
					late <- p.Respond(tools.AllowedOnce)
				}()
				if r := e.exec(context.Background(), fmt.Sprint("c", i), "a1"); code(r) != tools.CodeApprovalUnavailable {
					t.Fatalf("round %d: %+v", i, r)
				}
				if err := <-late; !errors.Is(err, approval.ErrWithdrawn) {
					t.Fatalf("round %d: late Respond = %v", i, err)
				}
			}
			if n := e.ran.Load(); n != 0 {
				t.Fatalf("the body ran %d times on late answers", n)
			}
		})
	})
}

// An answer one instant before the deadline wins.
func TestX2_AnswerJustBeforeTheDeadlineWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Second
		q := approval.NewQueue()
		s := mustNew(t, approval.Config{Timeout: timeout, Answerer: q}, nil)
		defer s.Close()
		answered := make(chan error, 1)
		go func() {
			p := <-q.Requests()
			time.Sleep(timeout - time.Nanosecond)
			answered <- p.Respond(tools.AllowedOnce)
		}()
		if o, err := s.Approve(context.Background(), req("c1", nil)); o != tools.AllowedOnce || err != nil {
			t.Fatalf("%q, %v", o, err)
		}
		if err := <-answered; err != nil {
			t.Fatalf("Respond: %v", err)
		}
	})
}

// An answer given after the withdrawal (by the deadline, the call's
// cancellation or Close) is refused, and whoever answered is told.
func TestG2_AnswerAfterWithdrawalIsRefused(t *testing.T) {
	t.Run("answer func that waits for its context", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			s := mustNew(t, approval.Config{Timeout: time.Second, Answerer: approval.AnswerFunc(func(ctx context.Context, _ tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				<-ctx.Done()
				return tools.AllowedOnce, nil
			})}, nil)
			defer s.Close()
			for i := range raceRounds {
				if o, err := s.Approve(context.Background(), req(fmt.Sprint("c", i), nil)); o != tools.Unavailable || err != nil {
					t.Fatalf("round %d: %q, %v", i, o, err)
				}
			}
		})
	})
	t.Run("answer func that cancels the call first", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		s := mustNew(t, approval.Config{Answerer: approval.AnswerFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
			cancel() // the call is cancelled before the answer is given
			return tools.AllowedOnce, nil
		})}, nil)
		defer s.Close()
		if o, err := s.Approve(ctx, req("c1", nil)); !errors.Is(err, context.Canceled) {
			t.Fatalf("%q, %v; want context.Canceled", o, err)
		}
	})
	t.Run("queue respond right after cancel", func(t *testing.T) {
		q := approval.NewQueue()
		s := mustNew(t, approval.Config{Answerer: q}, nil)
		defer s.Close()
		for i := range raceRounds {
			ctx, cancel := context.WithCancel(context.Background())
			type res struct {
				o   tools.ApprovalOutcome
				err error
			}
			done := make(chan res, 1)
			go func() { o, err := s.Approve(ctx, req(fmt.Sprint("c", i), nil)); done <- res{o, err} }()
			p := <-q.Requests()
			cancel()
			if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) || !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: Respond after cancel = %v; want ErrWithdrawn (context.Canceled)", i, err)
			}
			if r := <-done; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("round %d: Approve = %q, %v", i, r.o, r.err)
			}
			if w, why := p.Withdrawn(); !w || !errors.Is(why, context.Canceled) {
				t.Fatalf("round %d: Withdrawn() = %v, %v", i, w, why)
			}
		}
	})
	t.Run("queue respond after close", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			q := approval.NewQueue()
			s := mustNew(t, approval.Config{Answerer: q}, nil)
			done := make(chan tools.ApprovalOutcome, 1)
			go func() { o, _ := s.Approve(context.Background(), req("c1", nil)); done <- o }()
			p := <-q.Requests()
			closed := make(chan struct{})
			go func() { s.Close(); close(closed) }()
			<-p.Done()
			if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) || !errors.Is(err, approval.ErrClosed) {
				t.Fatalf("Respond after Close = %v", err)
			}
			if o := <-done; o != tools.Unavailable {
				t.Fatalf("Approve = %q", o)
			}
			<-closed
		})
	})
	t.Run("queue used directly", func(t *testing.T) {
		q := approval.NewQueue()
		for i := range raceRounds {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { _, err := q.Answer(ctx, req(fmt.Sprint("c", i), nil)); done <- err }()
			p := <-q.Requests()
			cancel()
			if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) {
				t.Fatalf("round %d: Respond after cancel = %v", i, err)
			}
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: Answer = %v", i, err)
			}
		}
	})
	t.Run("pipeline", func(t *testing.T) {
		e := newEnv(t)
		q := approval.NewQueue()
		e.approval(t, approval.Config{Answerer: q})
		for i := range raceRounds / 4 {
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan tools.Result, 1)
			go func() { done <- e.exec(ctx, fmt.Sprint("c", i), "a1") }()
			p := <-q.Requests()
			cancel()
			if err := p.Respond(tools.AllowedOnce); !errors.Is(err, approval.ErrWithdrawn) {
				t.Fatalf("round %d: Respond after cancel = %v", i, err)
			}
			if r := <-done; code(r) != tools.CodeAbortedBeforeDispatch {
				t.Fatalf("round %d: %+v", i, r)
			}
		}
		if n := e.ran.Load(); n != 0 {
			t.Fatalf("the body ran %d times after cancellation", n)
		}
	})
}

// answererKind is how the property test's answerer answers.
type answererKind int

const (
	viaQueue          answererKind = iota // a UI responds through a Queue
	ignoringContext                       // an AnswerFunc that answers when it likes
	answeringWhenLate                     // an AnswerFunc that answers as soon as its context is done
	answererKinds
)

func (k answererKind) String() string {
	return [...]string{"queue", "func ignoring ctx", "func answering when withdrawn"}[k]
}

// plan is one request of a round of the property test: when (fake time
// after the start) it is answered and cancelled; never < 0.
type plan struct {
	answerAt, cancelAt time.Duration
	outcome            tools.ApprovalOutcome
}

// record is what happened to one request; each field is written by one
// goroutine and read after the round.
type record struct {
	answered             bool
	answerSeq, cancelSeq int64 // the order of the answer's start and cancel's end
	answerTime           time.Duration
	respondErr           error
	got                  tools.ApprovalOutcome
	gotErr               error
	cancelled            bool
}

// TestG2_RandomInterleavingsGrantOnlyWhenTheAnswerWon interleaves answers,
// cancellations and the deadline at random, often in the same instant, with
// several kinds of answerers, and checks that a grant only ever happens when
// the answer came first, that a Queue's Respond reports exactly whether the
// answer was taken, and that an answer that is clearly first always wins.
func TestG2_RandomInterleavingsGrantOnlyWhenTheAnswerWon(t *testing.T) {
	const (
		timeout  = 10 * time.Millisecond
		perRound = 8
		rounds   = 150
	)
	outcomes := []tools.ApprovalOutcome{tools.AllowedOnce, tools.AllowedOnce, tools.Rejected, tools.Cancelled, tools.Unavailable}
	for round := range rounds {
		kind := answererKind(round % int(answererKinds))
		rng := rand.New(rand.NewPCG(uint64(round), 9))
		plans := make(map[string]plan, perRound)
		recs := make(map[string]*record, perRound)
		for i := range perRound {
			id := fmt.Sprint("c", i)
			at := func() time.Duration { // 0..12 ms or never; 10 ms is the deadline
				if rng.IntN(6) == 0 {
					return -1
				}
				return time.Duration(rng.IntN(13)) * time.Millisecond
			}
			plans[id] = plan{answerAt: at(), cancelAt: at(), outcome: outcomes[rng.IntN(len(outcomes))]}
			recs[id] = &record{}
		}
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			var seq atomic.Int64
			answerFunc := func(ctx context.Context, r tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
				p, rec := plans[r.CallID], recs[r.CallID]
				if p.answerAt < 0 {
					<-ctx.Done()
					return "", ctx.Err()
				}
				wait := time.NewTimer(p.answerAt - time.Since(start))
				defer wait.Stop()
				if kind == answeringWhenLate {
					select {
					case <-wait.C:
					case <-ctx.Done():
					}
				} else {
					<-wait.C
				}
				rec.answered, rec.answerSeq, rec.answerTime = true, seq.Add(1), time.Since(start)
				return p.outcome, nil
			}
			var a approval.Answerer = approval.AnswerFunc(answerFunc)
			q := approval.NewQueue()
			if kind == viaQueue {
				a = q
			}
			s := mustNew(t, approval.Config{Timeout: timeout, Answerer: a}, nil)
			uiDone := make(chan struct{})
			var ui sync.WaitGroup
			if kind == viaQueue {
				ui.Go(func() {
					for {
						select {
						case pend := <-q.Requests():
							p, rec := plans[pend.Request.CallID], recs[pend.Request.CallID]
							if p.answerAt < 0 {
								continue
							}
							ui.Go(func() {
								time.Sleep(p.answerAt - time.Since(start))
								rec.answered, rec.answerSeq, rec.answerTime = true, seq.Add(1), time.Since(start)
								rec.respondErr = pend.Respond(p.outcome)
							})
						case <-uiDone:
							return
						}
					}
				})
			}
			var calls sync.WaitGroup
			for id, p := range plans {
				rec := recs[id]
				ctx, cancel := context.WithCancel(context.Background())
				if p.cancelAt >= 0 {
					calls.Go(func() {
						time.Sleep(p.cancelAt)
						cancel()
						rec.cancelled, rec.cancelSeq = true, seq.Add(1)
					})
				}
				calls.Go(func() {
					defer cancel()
					rec.got, rec.gotErr = s.Approve(ctx, req(id, nil))
				})
			}
			calls.Wait()
			close(uiDone)
			ui.Wait()
			s.Close()
		})
		for id, p := range plans {
			r := recs[id]
			where := fmt.Sprintf("round %d (%v), %s %+v: answered %v at %v (seq %d), cancelled %v (seq %d), Respond %v; Approve = %q, %v",
				round, kind, id, p, r.answered, r.answerTime, r.answerSeq, r.cancelled, r.cancelSeq, r.respondErr, r.got, r.gotErr)
			cancelledFirst := r.cancelled && (!r.answered || r.cancelSeq < r.answerSeq)
			late := r.answered && r.answerTime >= timeout
			// A grant only when the answer won.
			if r.got == tools.AllowedOnce && (p.outcome != tools.AllowedOnce || !r.answered || late || cancelledFirst || r.respondErr != nil) {
				t.Fatalf("late or withdrawn answer granted: %s", where)
			}
			// Respond says exactly whether the answer was taken.
			switch {
			case kind != viaQueue || !r.answered: // nobody responded
			case r.respondErr == nil:
				if late || cancelledFirst {
					t.Fatalf("Respond accepted an answer after the withdrawal: %s", where)
				}
				if r.gotErr == nil && r.got != p.outcome || r.gotErr != nil && !errors.Is(r.gotErr, context.Canceled) {
					t.Fatalf("Respond accepted, Approve did not return the answer: %s", where)
				}
			default:
				if !errors.Is(r.respondErr, approval.ErrWithdrawn) {
					t.Fatalf("Respond failed oddly: %s", where)
				}
				if r.gotErr == nil && r.got != tools.Unavailable {
					t.Fatalf("Respond refused, Approve returned an answer: %s", where)
				}
			}
			// An answer clearly first (an earlier instant than the deadline
			// and any cancellation) always wins.
			if r.answered && r.answerTime < timeout && (p.cancelAt < 0 || p.cancelAt > r.answerTime) {
				if r.got != p.outcome || r.gotErr != nil || r.respondErr != nil {
					t.Fatalf("an answer given first was not taken: %s", where)
				}
			}
			// A cancellation clearly first always wins.
			if p.cancelAt >= 0 && p.cancelAt < timeout && (!r.answered || r.answerTime > p.cancelAt) && !errors.Is(r.gotErr, context.Canceled) {
				t.Fatalf("a cancellation given first did not win: %s", where)
			}
		}
	}
}

// The terminal prompt: a line typed in the instant the deadline withdraws
// the question is not taken, neither for that question nor for the next.
func TestX2_TerminalLateAnswerIsNotAppliedToTheNextRequest(t *testing.T) {
	for i := range raceRounds / 4 {
		synctest.Test(t, func(t *testing.T) {
			const timeout = time.Second
			inR, inW := io.Pipe()
			defer inW.Close()
			out := newScreen()
			s := mustNew(t, approval.Config{Answerer: approval.NewTerminal(inR, out), Timeout: timeout}, nil)
			defer s.Close()
			typed := make(chan struct{})
			go func() {
				defer close(typed)
				time.Sleep(timeout)
				io.WriteString(inW, "y\n") // in the deadline's instant
			}()
			if o, err := s.Approve(context.Background(), req("c1", nil)); o != tools.Unavailable || err != nil {
				t.Fatalf("round %d: c1 = %q, %v; want unavailable", i, o, err)
			}
			<-typed
			out.waitCount(t, "[withdrawn] tool bash, call c1: no answer before the deadline (unavailable).", 1)
			type res struct {
				o   tools.ApprovalOutcome
				err error
			}
			r2 := make(chan res, 1)
			go func() { o, err := s.Approve(context.Background(), req("c2", nil)); r2 <- res{o, err} }()
			out.waitCount(t, "call c2", 1)
			io.WriteString(inW, "n\n")
			if r := <-r2; r.o != tools.Rejected || r.err != nil {
				t.Fatalf("round %d: c2 = %+v; want rejected (the late \"y\" must not approve it); screen:\n%s", i, r, out)
			}
		})
	}
}

// The terminal prompt: a question whose call is cancelled between the
// answer's arrival and its being taken is not granted.
func TestG2_TerminalAnswerAfterCancelGrantsNothing(t *testing.T) {
	for i := range raceRounds / 4 {
		synctest.Test(t, func(t *testing.T) {
			inR, inW := io.Pipe()
			defer inW.Close()
			out := newScreen()
			s := mustNew(t, approval.Config{Answerer: approval.NewTerminal(inR, out)}, nil)
			defer s.Close()
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				time.Sleep(time.Second)
				cancel()
				io.WriteString(inW, "yes\n")
			}()
			if o, err := s.Approve(ctx, req("c1", nil)); !errors.Is(err, context.Canceled) {
				t.Fatalf("round %d: c1 = %q, %v; want context.Canceled", i, o, err)
			}
			synctest.Wait()
			if !strings.Contains(out.String(), "[withdrawn] tool bash, call c1: the call was cancelled.") {
				t.Fatalf("round %d: no withdrawal shown:\n%s", i, out)
			}
		})
	}
}

// withdrawnUnseen is a context whose withdrawal condition holds (Err is
// non-nil) before anyone waiting on Done has noticed: the instant between a
// deadline being reached and its timer running, made to last.
type withdrawnUnseen struct {
	context.Context
	gone atomic.Bool
}

func (c *withdrawnUnseen) Err() error {
	if c.gone.Load() {
		return context.Canceled
	}
	return nil
}

// cancelOnRead withdraws ctx just before each read returns a line.
type cancelOnRead struct {
	r   io.Reader
	ctx *withdrawnUnseen
}

func (c cancelOnRead) Read(p []byte) (int, error) {
	c.ctx.gone.Store(true)
	return c.r.Read(p)
}

// The terminal prompt: a line that arrives once the question is withdrawn
// is refused even when the terminal has not yet seen the withdrawal; the
// person is told, and the line is used up rather than read by the next
// question.
func TestX2_TerminalAnswerAfterUnseenWithdrawalIsRefused(t *testing.T) {
	ctx := &withdrawnUnseen{Context: context.Background()}
	out := &strings.Builder{}
	term := approval.NewTerminal(cancelOnRead{strings.NewReader("y\nn\n"), ctx}, out)
	if o, err := term.Answer(ctx, req("c1", nil)); !errors.Is(err, context.Canceled) {
		t.Fatalf("c1 = %q, %v; want context.Canceled", o, err)
	}
	if want := "[withdrawn] tool bash, call c1: the call was cancelled. The answer came too late and was not applied.\n"; !strings.Contains(out.String(), want) {
		t.Fatalf("screen lacks %q:\n%s", want, out)
	}
	next := &withdrawnUnseen{Context: context.Background()}
	if o, err := term.Answer(next, req("c2", nil)); o != tools.Rejected || err != nil {
		t.Fatalf("c2 = %q, %v; want rejected (its own line), not the late \"y\"", o, err)
	}
}
