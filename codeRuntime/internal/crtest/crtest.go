// Package crtest holds the helpers the code-runtime engines' tests share (package goja, quickjs,
// isolated and jsengine tests). Only tests import it.
package crtest

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// Ample is the busy-CPU and wall-clock budget of every test run whose outcome must not depend on
// time: programs that must succeed, and programs that must hit a limit other than a time budget
// (sizes, depths, output, call stack). Such a run needs well under a second even under -race on a
// loaded machine, so Ample never decides a test; it only bounds how long a regression can hang.
const Ample = 2 * time.Minute

// Runaway is the busy-CPU budget of tests that check an infinite program is stopped by that budget.
// The program never ends by itself, so the value does not matter for correctness, only for how
// long the test takes; the wall-clock budget stays Ample so that the busy-CPU budget is what stops
// the run, however busy the machine is.
const Runaway = 100 * time.Millisecond

// HangLimit is how long RunBounded callers usually wait before they declare Run hung. Without their
// guards, the programs they run keep an engine busy in native code for hours (or crash the
// process); with them they end in milliseconds, so the limit decides nothing unless a guard is gone.
const HangLimit = 5 * time.Minute

// Echo is a binding that returns its argument.
func Echo(_ context.Context, args json.RawMessage) (json.RawMessage, error) { return args, nil }

// HangingBinding blocks until its call is cancelled.
func HangingBinding(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// MustRun runs p on rt and fails t unless it succeeds.
func MustRun(t testing.TB, rt coderuntime.Runtime, p coderuntime.Program) *coderuntime.Result {
	t.Helper()
	res, err := rt.Run(context.Background(), p)
	if err != nil {
		t.Fatalf("Run(%q): %v", p.Source, err)
	}
	return res
}

// MustFail runs p on rt and fails t unless it fails with a *coderuntime.Failure of kind.
func MustFail(t testing.TB, rt coderuntime.Runtime, p coderuntime.Program, kind coderuntime.FailureKind) *coderuntime.Failure {
	t.Helper()
	res, err := rt.Run(context.Background(), p)
	f, ok := safeerr.As[*coderuntime.Failure](err)
	if !ok {
		t.Fatalf("Run(%q) = %+v, %v; want a *Failure of kind %s", p.Source, res, err, kind)
	}
	if f.Kind != kind {
		t.Fatalf("Run(%q) failed with %s (%s); want kind %s", p.Source, f.Kind, f.Message, kind)
	}
	return f
}

// RunBounded runs p on rt and fails t when Run does not return within limit.
func RunBounded(t testing.TB, rt coderuntime.Runtime, p coderuntime.Program, limit time.Duration) (*coderuntime.Result, error) {
	t.Helper()
	type out struct {
		res *coderuntime.Result
		err error
	}
	ch := make(chan out, 1)
	go func() {
		res, err := rt.Run(context.Background(), p)
		ch <- out{res, err}
	}()
	select {
	case o := <-ch:
		return o.res, o.err
	case <-time.After(limit):
		t.Fatalf("Run(%.80q) did not return within %s", p.Source, limit)
		return nil, nil
	}
}

// CancelledAfterCheck is a context that is already done but reports no error the first time it is
// asked: the caller cancelled just after Run checked ctx, while the run was being set up.
type CancelledAfterCheck struct {
	context.Context
	asked atomic.Bool
}

var closedDone = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (c *CancelledAfterCheck) Done() <-chan struct{} { return closedDone }

func (c *CancelledAfterCheck) Err() error {
	if c.asked.Swap(true) {
		return context.Canceled
	}
	return nil
}

// SkipQuickJSHostileUnderRace skips a hostile QuickJS case under the race detector (see
// RaceDetector); .ci/run runs these cases without -race.
func SkipQuickJSHostileUnderRace(t testing.TB, engine string) {
	t.Helper()
	if RaceDetector && engine == coderuntime.EngineQuickJS {
		t.Skip("QuickJS hostile cases run without -race (the race detector instruments the translated C engine; .ci/run runs them in a second pass)")
	}
}
