package tools

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
)

type testCause struct{ s string }

func (e *testCause) Error() string { return e.s }

// TestBodyCtxFirstCancellationWins: whichever of wctx's cancellation and
// one recorded on the body context (settle, the caller, the body's end)
// happened first is the cause, made or not, as with an eager
// context.WithCancelCause(wctx).
func TestBodyCtxFirstCancellationWins(t *testing.T) {
	mine, theirs := &testCause{"recorded"}, &testCause{"wctx"}
	for _, made := range []bool{false, true} {
		// Recorded first, then wctx cancelled.
		w, cancelW := context.WithCancelCause(context.Background())
		c := &bodyCtx{wctx: w}
		if made {
			c.Done()
		}
		c.cancelBody(mine)
		cancelW(theirs)
		if got := context.Cause(c); got != mine || !errors.Is(c.Err(), context.Canceled) {
			t.Errorf("made=%v, recorded first: cause %v, err %v; want the recorded cause", made, got, c.Err())
		}
		<-c.Done()

		// wctx cancelled first, then recorded.
		w, cancelW = context.WithCancelCause(context.Background())
		c = &bodyCtx{wctx: w}
		if made {
			c.Done()
		}
		cancelW(theirs)
		c.cancelBody(mine)
		if got := context.Cause(c); got != theirs {
			t.Errorf("made=%v, wctx first: cause %v; want wctx's", made, got)
		}
	}
}

// TestBodyCtxNotMadeUntilNeeded: reading Err, Value and Deadline of a
// live body context does not make it; Done does, and a derived context
// is cancelled with it.
func TestBodyCtxNotMadeUntilNeeded(t *testing.T) {
	type key struct{}
	c := &bodyCtx{wctx: context.WithValue(context.Background(), key{}, "v")}
	if c.Err() != nil || c.Value(key{}) != "v" || c.made.Load() {
		t.Fatalf("err %v, value %v, made %v", c.Err(), c.Value(key{}), c.made.Load())
	}
	if _, ok := c.Deadline(); ok || c.made.Load() {
		t.Fatal("Deadline made the context or invented a deadline")
	}
	child, stop := context.WithCancel(c)
	defer stop()
	if !c.made.Load() {
		t.Fatal("deriving a context did not make it")
	}
	cause := &testCause{"settled"}
	c.cancelBody(cause)
	<-child.Done()
	if context.Cause(child) != cause || c.Value(key{}) != "v" {
		t.Errorf("child cause %v, value %v", context.Cause(child), c.Value(key{}))
	}
}

// TestBodyCtxConcurrentReadersAgree: readers racing with a cancellation
// (run with -race) all end up seeing the one cause.
func TestBodyCtxConcurrentReadersAgree(t *testing.T) {
	for range 50 {
		c := &bodyCtx{wctx: context.Background()}
		cause := &testCause{"once"}
		var wg sync.WaitGroup
		causes := make([]error, 8)
		for i := range causes {
			wg.Go(func() {
				if i%2 == 0 {
					<-c.Done()
				} else {
					for c.Err() == nil {
						runtime.Gosched()
					}
				}
				causes[i] = context.Cause(c)
			})
		}
		wg.Go(func() { c.cancelBody(cause) })
		wg.Go(func() { c.cancelBody(errors.New("later")) })
		wg.Wait()
		for i, got := range causes {
			if got != causes[0] {
				t.Fatalf("reader %d saw cause %v, reader 0 %v", i, got, causes[0])
			}
		}
	}
}
