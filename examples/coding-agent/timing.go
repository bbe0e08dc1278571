package main

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// timing records when each top-level call's tools/execute stage (its
// wrappers and body) started and ended, to show how a batch overlapped
// them. Safe for concurrent use: parallel calls report from several
// goroutines.
type timing struct {
	mu    sync.Mutex
	start time.Time
	spans map[string]span
}

type span struct{ from, to time.Duration }

// watch registers the recording tools/execute wrapper on c.
func (tm *timing) watch(c *host.Context) error {
	_, err := host.OnWaterfall(c, tools.ExecuteEvent, func(ctx context.Context, e *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		if !e.Parent().IsZero() {
			return next(ctx) // a Code Mode sub-call
		}
		from := tm.since()
		defer func() {
			to := tm.since()
			tm.mu.Lock()
			tm.spans[e.CallID()] = span{from, to}
			tm.mu.Unlock()
		}()
		return next(ctx)
	})
	return err
}

// reset starts a new batch's clock.
func (tm *timing) reset() {
	tm.mu.Lock()
	tm.start, tm.spans = time.Now(), map[string]span{}
	tm.mu.Unlock()
}

func (tm *timing) since() time.Duration {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	return time.Since(tm.start)
}

// print shows each call's span on the batch's clock, in model order, with
// how the batch scheduled it (calls refused before dispatch have none).
func (tm *timing) print(w io.Writer, calls []tools.Call, class []tools.Concurrency, wall time.Duration) {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	var busy time.Duration
	for _, sp := range tm.spans {
		busy += sp.to - sp.from
	}
	fmt.Fprintf(w, "\n⏱ batch of %d calls: %s wall clock, %s of tool time\n", len(calls), ms(wall), ms(busy))
	for i, c := range calls {
		sp, ok := tm.spans[c.ID]
		if !ok {
			fmt.Fprintf(w, "   %-4s %-6s %-9s not dispatched\n", c.ID, c.Name, class[i])
			continue
		}
		fmt.Fprintf(w, "   %-4s %-6s %-9s %8s → %s\n", c.ID, c.Name, class[i], "+"+ms(sp.from), "+"+ms(sp.to))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond)) }
