package goja

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"sync"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// TestCallSeqNumbersBindingCallsInSubmissionOrder: under Promise.all the
// calls reach their bindings on several goroutines, each context carrying
// the call's submission number; refused calls take none, and the numbers
// run 1..n without a gap, also for calls still queued at settlement.
func TestCallSeqNumbersBindingCallsInSubmissionOrder(t *testing.T) {
	g := newTestRuntime(t)
	var mu sync.Mutex
	got := map[string]uint64{}
	rec := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
		n, ok := coderuntime.CallSeq(ctx)
		if !ok {
			t.Errorf("binding call %s without a submission number", args)
		}
		mu.Lock()
		got[string(args)] = n
		mu.Unlock()
		return nil, nil
	}
	src := `await tools.rec({ i: 0 })
const c: any = {}; c.c = c
try { await tools.rec({ i: c }) } catch {}
await Promise.all([1, 2, 3, 4, 5].map((i) => tools.rec({ i })))
tools.rec({ i: 6 }); tools.rec({ i: 7 })`
	if _, err := g.Run(context.Background(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"rec": rec}, MaxConcurrentCalls: 2}); err != nil {
		t.Fatal(err)
	}
	var want, seen []uint64
	for i := 0; i <= 7; i++ {
		want = append(want, uint64(i+1))
		seen = append(seen, got[`{"i":`+strconv.Itoa(i)+`}`])
	}
	if !slices.Equal(seen, want) {
		t.Errorf("submission numbers of calls 0..7 = %v, want %v", seen, want)
	}
	if _, ok := coderuntime.CallSeq(context.Background()); ok {
		t.Error("a plain context has a submission number")
	}
	if n, ok := coderuntime.CallSeq(coderuntime.WithCallSeq(context.Background(), 9)); !ok || n != 9 {
		t.Errorf("WithCallSeq: %d %v", n, ok)
	}
}
