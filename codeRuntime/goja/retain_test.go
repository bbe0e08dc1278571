package goja

import (
	"context"
	"encoding/json"
	"runtime"
	"testing"
	"weak"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// TestKeptCallRecordDoesNotKeepTheVM pins that a binding keeping its arguments and its context
// (which share the call's record, see jsengine.NewCall) after the run does not keep the run's VM
// alive: the record holds no function settling the call's promise. Each program ends a different
// way: calls awaited one by one (run on the run goroutine), calls run by the pool's goroutines,
// a call running and one queued when the program returns (delivered at settlement), and the same
// when it throws.
func TestKeptCallRecordDoesNotKeepTheVM(t *testing.T) {
	for name, src := range map[string]string{
		"awaited":        "let n = 0\nfor (let i = 0; i < 3; i++) n += (await tools.keep({ x: i })).x\nreturn n",
		"concurrent":     "const r = await Promise.all([1, 2, 3, 4].map((x) => tools.keep({ x, pad: 'a long argument, not inline' })))\nreturn r.length",
		"returns early":  "tools.keep({ x: 1 }); tools.keep({ x: 2 }); return 7",
		"throws early":   "tools.keep({ x: 1 }); tools.keep({ x: 2 }); throw new Error('no')",
		"rejected calls": "try { await tools.fail({ x: 1 }) } catch { }\nreturn 1",
	} {
		t.Run(name, func(t *testing.T) {
			g := newTestRuntime(t, func(c *coderuntime.Config) { c.MaxConcurrentCalls = 1 })
			g.spare.off = true
			r := g.newRun()
			if err := r.prepare(); err != nil {
				t.Fatal(err)
			}
			vm := weak.Make(r.vm)
			g.spare.r, r = r, nil
			var kept []any
			keep := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				kept = append(kept, ctx, args)
				return args, nil
			}
			fail := func(ctx context.Context, args json.RawMessage) (json.RawMessage, error) {
				kept = append(kept, ctx, args)
				return nil, context.Canceled
			}
			_, _ = g.Run(t.Context(), coderuntime.Program{Source: src, Bindings: map[string]coderuntime.Binding{"keep": keep, "fail": fail}})
			if len(kept) == 0 {
				t.Fatal("no binding call")
			}
			runtime.GC()
			runtime.GC()
			if vm.Value() != nil {
				t.Errorf("the run's VM is still reachable after the run, with %d calls' arguments and contexts kept", len(kept)/2)
			}
			runtime.KeepAlive(kept)
		})
	}
}

// TestCallPromiseSlotsAreReusedAndChecked: the run's table of promise functions reuses a freed
// slot, and a completion for a call its slot does not hold (a second completion, or one for a call
// whose slot went to another call) settles nothing.
func TestCallPromiseSlotsAreReusedAndChecked(t *testing.T) {
	r := &run{}
	fn := func(any) error { return nil }
	a, b := &jsengine.Call{}, &jsengine.Call{}
	a.Slot = r.holdPromise(a, fn, fn)
	if _, ok := r.takePromise(a); !ok {
		t.Fatal("a's promise not found")
	}
	if _, ok := r.takePromise(a); ok {
		t.Fatal("a second completion of a found a promise")
	}
	b.Slot = r.holdPromise(b, fn, fn)
	if b.Slot != a.Slot || len(r.promises) != 1 {
		t.Fatalf("slot %d of %d, want a's slot %d reused", b.Slot, len(r.promises), a.Slot)
	}
	if _, ok := r.takePromise(a); ok {
		t.Fatal("a stale completion of a settled b's promise")
	}
	if p, ok := r.takePromise(b); !ok || p.call != b {
		t.Fatal("b's promise not found")
	}
}
