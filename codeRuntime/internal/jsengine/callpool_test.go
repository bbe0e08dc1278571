package jsengine

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// TestClaimAloneRunsEachCallOnce pins the claim between the run goroutine and the pool's workers:
// whichever claims a call first runs it, the other skips it, so each call reaches its binding
// exactly once and has exactly one completion, returned by RunClaimed or sent by the worker, never
// both. Each round races the two on purpose (a worker is handed the call at Submit).
func TestClaimAloneRunsEachCallOnce(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		runs.Add(1)
		return json.RawMessage(`1`), nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := NewCallPool(ctx, 3)
	const n = 2000
	inline := 0
	for i := range n {
		c := &Call{Name: "f", Fn: fn}
		p.Submit(c)
		var got Completion
		if alone := p.ClaimAlone(); alone != nil {
			if alone != c {
				t.Fatalf("round %d: ClaimAlone returned another call", i)
			}
			got = p.RunClaimed(alone)
			inline++
		} else {
			got = <-p.Completions()
		}
		if got.C != c || string(got.Result) != "1" || got.Err != nil {
			t.Fatalf("round %d: completion %+v", i, got)
		}
		p.Handled()
		if p.ClaimAlone() != nil {
			t.Fatalf("round %d: a handled call was claimed again", i)
		}
	}
	cancel()
	p.Settle()
	if r := runs.Load(); r != n {
		t.Fatalf("bindings ran %d times for %d calls", r, n)
	}
	select {
	case c := <-p.Completions():
		t.Fatalf("a stray completion for a call the run goroutine ran: %+v", c)
	default:
	}
	t.Logf("%d of %d calls ran on the calling goroutine", inline, n)
}

// TestClaimAloneOnlyAlone: ClaimAlone claims nothing while another call is in flight or queued,
// nor a call a worker has begun; such calls complete through Completions.
func TestClaimAloneOnlyAlone(t *testing.T) {
	defer goleak.VerifyNone(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	began := make(chan struct{}, 2)
	release := make(chan struct{})
	block := func(context.Context, json.RawMessage) (json.RawMessage, error) {
		began <- struct{}{}
		<-release
		return nil, nil
	}
	p := NewCallPool(ctx, 1)
	a := &Call{Name: "a", Fn: block}
	p.Submit(a)
	<-began // a worker claimed a
	if c := p.ClaimAlone(); c != nil {
		t.Fatal("claimed a call a worker had begun")
	}
	b := &Call{Name: "b", Fn: block}
	p.Submit(b) // queued behind a (max 1)
	if c := p.ClaimAlone(); c != nil {
		t.Fatal("claimed while a call is queued")
	}
	close(release)
	if c := <-p.Completions(); c.C != a {
		t.Fatalf("first completion is %q's", c.C.Name)
	}
	p.Handled() // starts b on the worker
	if c := <-p.Completions(); c.C != b {
		t.Fatalf("second completion is %q's", c.C.Name)
	}
	p.Handled()
	if c := p.ClaimAlone(); c != nil {
		t.Fatal("claimed a completed call")
	}
	cancel()
	p.Settle()

	// Two calls in flight: neither is claimed.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	hold := make(chan struct{})
	wait := func(context.Context, json.RawMessage) (json.RawMessage, error) { <-hold; return nil, nil }
	q := NewCallPool(ctx2, 2)
	q.Submit(&Call{Name: "x", Fn: wait})
	q.Submit(&Call{Name: "y", Fn: wait})
	if c := q.ClaimAlone(); c != nil {
		t.Fatal("claimed one of two calls in flight")
	}
	close(hold)
	<-q.Completions()
	<-q.Completions()
	q.Handled()
	q.Handled()
	cancel2()
	q.Settle()
}

// TestCallContextNumbersWithoutAllocating pins how a call's binding context is made: it carries the
// call's submission number for coderuntime.CallSeq (also through a context derived from it) and the
// run's binding context's values and cancellation, and running a call allocates nothing for it
// (before, coderuntime.WithCallSeq allocated a context and, from 256 on, the boxed number).
func TestCallContextNumbersWithoutAllocating(t *testing.T) {
	type key struct{}
	bindCtx, cancel := context.WithCancel(context.WithValue(context.Background(), key{}, "v"))
	var seen context.Context
	fn := func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		seen = ctx
		return nil, nil
	}
	p := NewCallPool(bindCtx, 1)
	c := &Call{Name: "f", Fn: fn, Seq: 300}
	if got := p.RunClaimed(c); got.C != c || got.Err != nil {
		t.Fatalf("completion %+v", got)
	}
	derived, stop := context.WithCancel(seen)
	defer stop()
	for _, ctx := range []context.Context{seen, derived} {
		if n, ok := coderuntime.CallSeq(ctx); !ok || n != 300 {
			t.Fatalf("CallSeq = %d, %v, want 300", n, ok)
		}
		if v := ctx.Value(key{}); v != "v" {
			t.Fatalf("the binding context's value = %v", v)
		}
	}
	if n, ok := coderuntime.CallSeq(coderuntime.WithCallSeq(bindCtx, 7)); !ok || n != 7 {
		t.Fatalf("CallSeq(WithCallSeq(7)) = %d, %v", n, ok)
	}
	if _, ok := coderuntime.CallSeq(bindCtx); ok {
		t.Fatal("CallSeq found a number in a context without one")
	}
	if allocs := testing.AllocsPerRun(100, func() { c.Seq++; p.RunClaimed(c) }); allocs != 0 {
		t.Fatalf("running a call allocates %.1f objects, want 0", allocs)
	}
	cancel()
	if seen.Err() == nil || derived.Err() == nil {
		t.Fatal("cancelling the run's binding context did not reach the call's")
	}
	p.Settle()
}

// TestAwaitedCallsWakeNoGoroutine pins the lazy hand-off: a call the run goroutine claims before
// HandOffDelay passed (as when the program awaits it right away) was never handed to a goroutine,
// so a sequence of awaited calls starts none and ClaimAlone claims every one (before, each call
// was handed to a worker at Submit, which woke it and often won the claim), and the hand-off timer
// is set once, not per call (before, each call set it and ClaimAlone stopped it). The bubble's
// clock does not move while the test goroutine runs, so the delay never passes here.
func TestAwaitedCallsWakeNoGoroutine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
		p := NewCallPool(ctx, 3)
		for i := range 2000 {
			c := &Call{Name: "f", Fn: fn}
			p.Submit(c)
			alone := p.ClaimAlone()
			if alone != c {
				t.Fatalf("round %d: ClaimAlone = %v, want the call just submitted", i, alone)
			}
			if got := p.RunClaimed(alone); got.C != c || string(got.Result) != "1" {
				t.Fatalf("round %d: completion %+v", i, got)
			}
			p.Handled()
		}
		if p.goroutines != 0 {
			t.Fatalf("%d goroutines started for calls the run goroutine ran", p.goroutines)
		}
		if p.arms != 1 {
			t.Fatalf("the hand-off timer was set %d times for 2000 calls, want once", p.arms)
		}
		cancel()
		p.Settle()
	})
}

// TestHandOffTimerKeptSetIsNeverEarlyNorLate pins the hand-off timer that stays set from call to
// call: a call started while the timer is set for an earlier call's due time is still handed off
// exactly HandOffDelay after it started (the timer, finding it not due, is set again for it), not
// earlier nor later, and once no call waits for it the timer stays unset.
func TestHandOffTimerKeptSetIsNeverEarlyNorLate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		one := func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(`1`), nil }
		p := NewCallPool(ctx, 2)
		a := &Call{Name: "a", Fn: one}
		p.Submit(a) // sets the timer, due HandOffDelay from now
		if alone := p.ClaimAlone(); alone != a {
			t.Fatal("the awaited call was not claimed")
		}
		p.RunClaimed(a)
		p.Handled()
		time.Sleep(HandOffDelay * 6 / 10)
		began := make(chan time.Time, 1)
		start := time.Now()
		p.Submit(&Call{Name: "b", Fn: func(context.Context, json.RawMessage) (json.RawMessage, error) {
			began <- time.Now()
			return nil, nil
		}})
		if d := (<-began).Sub(start); d != HandOffDelay {
			t.Fatalf("the call waiting for the timer began %s after it started, want HandOffDelay %s", d, HandOffDelay)
		}
		<-p.Completions()
		p.Handled()
		time.Sleep(10 * HandOffDelay)
		if p.arms != 2 {
			t.Fatalf("the hand-off timer was set %d times, want 2 (for a, then again for b)", p.arms)
		}
		cancel()
		p.Settle()
	})
}

// TestUnclaimedCallStartsAfterHandOffDelay: a call the run goroutine does not claim (the program
// runs on) starts on a goroutine of the pool HandOffDelay after it was submitted, without the run
// goroutine doing anything; calls in flight together when the run goroutine waits (Promise.all)
// are handed off at once and run at the same time.
func TestUnclaimedCallStartsAfterHandOffDelay(t *testing.T) {
	defer goleak.VerifyNone(t)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		began := make(chan struct{}, 1)
		fn := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			began <- struct{}{}
			return nil, nil
		}
		p := NewCallPool(ctx, 2)
		start := time.Now()
		c := &Call{Name: "f", Fn: fn}
		p.Submit(c)
		<-began // the test goroutine (the run goroutine) waits elsewhere: only the timer hands c off
		if d := time.Since(start); d != HandOffDelay {
			t.Fatalf("the call began %s after it was submitted, want HandOffDelay %s", d, HandOffDelay)
		}
		if got := <-p.Completions(); got.C != c {
			t.Fatalf("completion %+v", got)
		}
		p.Handled()

		// Two calls that each wait for the other: they complete only when both run at once.
		var arrived sync.WaitGroup
		arrived.Add(2)
		meet := func(context.Context, json.RawMessage) (json.RawMessage, error) {
			arrived.Done()
			arrived.Wait()
			return nil, nil
		}
		start = time.Now()
		p.Submit(&Call{Name: "a", Fn: meet})
		p.Submit(&Call{Name: "b", Fn: meet})
		if alone := p.ClaimAlone(); alone != nil {
			t.Fatal("claimed one of two calls in flight")
		}
		<-p.Completions()
		<-p.Completions()
		if d := time.Since(start); d != 0 {
			t.Fatalf("the calls handed off by ClaimAlone completed after %s, want at once", d)
		}
		p.Handled()
		p.Handled()
		cancel()
		p.Settle()
	})
}

// TestSettleDeliversCallsNotHandedOff: a call submitted just before settlement, not handed to a
// goroutine yet, still reaches its binding exactly once (with the cancelled context) before Settle
// returns, and the timer's goroutine is gone by then (goleak); whether the timer hands it off or
// Settle does, rounds race the two on the real clock.
func TestSettleDeliversCallsNotHandedOff(t *testing.T) {
	defer goleak.VerifyNone(t)
	var runs atomic.Int64
	fn := func(context.Context, json.RawMessage) (json.RawMessage, error) { runs.Add(1); return nil, nil }
	const n = 200
	for i := range n {
		ctx, cancel := context.WithCancel(context.Background())
		p := NewCallPool(ctx, 2)
		p.Submit(&Call{Name: "f", Fn: fn})
		if i%2 == 1 {
			time.Sleep(HandOffDelay) // let the timer race Settle
		}
		cancel()
		p.Settle()
		if r := runs.Load(); r != int64(i+1) {
			t.Fatalf("round %d: bindings ran %d times, want %d", i, r, i+1)
		}
	}
}
