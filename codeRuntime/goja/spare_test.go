package goja

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// spareNow waits for a preparation in progress and returns the spare held (nil for none).
func spareNow(g *Runtime) *run {
	g.spare.mu.Lock()
	defer g.spare.mu.Unlock()
	g.spare.waitLocked()
	return g.spare.r
}

// TestSpareVMPreparedAheadAndUsedOnce: after a run a VM is prepared ahead; the next run uses it
// (and a new one is prepared for the run after); a spare serves one run only and carries nothing
// of the run before, whose globals and bindings it never saw.
func TestSpareVMPreparedAheadAndUsedOnce(t *testing.T) {
	g := newTestRuntime(t)
	ctx := context.Background()
	if spareNow(g) != nil {
		t.Fatal("a VM prepared before the first run")
	}
	if _, err := g.Run(ctx, coderuntime.Program{Source: "globalThis.leak = 1; JSON.parse = () => 2; return await tools.one()",
		Bindings: map[string]coderuntime.Binding{"one": func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage("1"), nil }}}); err != nil {
		t.Fatal(err)
	}
	s1 := spareNow(g)
	if s1 == nil {
		t.Fatal("no VM prepared ahead after a run")
	}
	if s1.main != nil || len(s1.logs) > 0 {
		t.Fatal("the spare VM ran a program")
	}
	res, err := g.Run(ctx, coderuntime.Program{Source: "return [typeof leak, typeof tools.one, JSON.parse('3')]"})
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Value) != `["undefined","undefined",3]` {
		t.Fatalf("the next run saw the previous one: %s", res.Value)
	}
	if s1.main == nil {
		t.Fatal("the next run did not use the VM prepared ahead")
	}
	s2 := spareNow(g)
	if s2 == nil || s2 == s1 {
		t.Fatalf("spare after the second run: %p (first %p)", s2, s1)
	}
}

// TestSpareVMClose: Close waits for a preparation and drops the spare; runs after Close still
// work and prepare nothing ahead.
func TestSpareVMClose(t *testing.T) {
	g := newTestRuntime(t)
	ctx := context.Background()
	if _, err := g.Run(ctx, coderuntime.Program{Source: "return 1"}); err != nil {
		t.Fatal(err)
	}
	_ = g.Close()
	if spareNow(g) != nil {
		t.Fatal("a spare VM kept after Close")
	}
	res, err := g.Run(ctx, coderuntime.Program{Source: "return 2"})
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("run after Close: %v, %v", res, err)
	}
	if spareNow(g) != nil {
		t.Fatal("a VM prepared ahead after Close")
	}
	_ = g.Close()
}

// TestRunTransformedSkipsTheTransform: RunTransformed runs pre.JS (the transform computed ahead)
// instead of transforming p.Source again; the bounds scan and goja's refusals still apply to the
// source.
func TestRunTransformedSkipsTheTransform(t *testing.T) {
	g := newTestRuntime(t)
	js, f := jsengine.WrapProgram("return 2")
	if f != nil {
		t.Fatal(f)
	}
	res, err := g.RunTransformed(context.Background(), coderuntime.Program{Source: "return 1"}, jsengine.Transformed{JS: js})
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("%+v, %v: not the transform given", res, err)
	}
	_, err = g.RunTransformed(context.Background(), coderuntime.Program{Source: "return 1n"}, jsengine.Transformed{JS: js})
	var fl *coderuntime.Failure
	if !errors.As(err, &fl) || fl.Kind != coderuntime.KindSyntax {
		t.Fatalf("a BigInt source with a transform given: %v, want the syntax refusal", err)
	}
}
