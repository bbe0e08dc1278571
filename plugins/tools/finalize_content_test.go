package tools_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestF1_FinalizeContentRunsOnceForEveryResult: FinalizeContent runs
// exactly once for every normalized result of its tool: a success, a tool
// error, invalid arguments (which never reach post-execute), a denial and a
// block; it replaces only the content (the code, the value and the
// additional context stay), nil keeps the content, and it sees the content
// post-execute left.
func TestF1_FinalizeContentRunsOnceForEveryResult(t *testing.T) {
	e := newEnv(t)
	var mu sync.Mutex
	seen := map[string]int{}
	type args struct {
		Mode string `json:"mode"`
	}
	d := tools.MustDefine(tools.TypedTool[args, listing]{
		Name: "secret", Description: "Leaks a secret.",
		Execute: func(_ context.Context, a args, _ *tools.Execution) (listing, error) {
			if a.Mode == "fail" {
				return listing{}, &tools.Error{Info: tools.ErrorInfo{Name: "Leak", Code: "LEAKY"}, Message: "error with s3cr3t"}
			}
			return listing{Entries: []entry{{"s3cr3t", 1}}, Total: 1}, nil
		},
		FinalizeContent: func(exec *tools.Execution, r tools.Result) []tools.Content {
			mu.Lock()
			seen[exec.CallID()]++
			mu.Unlock()
			if exec.CallID() == "keep" {
				return nil
			}
			out := make([]tools.Content, len(r.Content))
			for i, c := range r.Content {
				c.Text = strings.ReplaceAll(c.Text, "s3cr3t", "[redacted]")
				out[i] = c
			}
			return out
		},
	})
	mustRegister(t, e.reg, e.root, d)
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, exec *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if exec.CallID() == "deny" {
			return tools.PreDecision{Kind: tools.Deny, Reason: "s3cr3t is off limits"}, nil
		}
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, p tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		switch p.Execution().CallID() {
		case "block":
			return tools.Blocked("blocked: s3cr3t"), nil
		case "ctx":
			return tools.PostDecision{Kind: tools.Accept, AdditionalContext: "s3cr3t context"}, nil
		}
		return next(ctx)
	}))
	run := func(id, a string) tools.Result {
		return e.reg.Execute(context.Background(), tools.Call{ID: id, Name: "secret", Arguments: json.RawMessage(a)})
	}
	ok := run("ok", `{"mode":""}`)
	if ok.IsError || strings.Contains(text(ok), "s3cr3t") || !strings.Contains(text(ok), "[redacted]") || !strings.Contains(string(ok.Value), "s3cr3t") {
		t.Fatalf("success: content %q value %s", text(ok), ok.Value)
	}
	if r := run("keep", `{"mode":""}`); !strings.Contains(text(r), "s3cr3t") {
		t.Fatalf("nil keeps the content: %q", text(r))
	}
	for id, want := range map[string]tools.ErrorCode{"fail": "LEAKY", "bad-args": tools.CodeInvalidArgs, "deny": tools.CodeDenied, "block": tools.CodeBlocked} {
		a := `{"mode":"fail"}`
		if id == "bad-args" {
			a = `{"mode":"s3cr3t","MODE":1}`
		}
		r := run(id, a)
		if code(r) != want || r.Value != nil {
			t.Errorf("%s: code %s, want %s (value %s)", id, code(r), want, r.Value)
		}
		if id != "bad-args" && (strings.Contains(text(r), "s3cr3t") || !strings.Contains(text(r), "[redacted]")) {
			t.Errorf("%s: content %q", id, text(r))
		}
	}
	if r := run("ctx", `{"mode":""}`); len(r.AdditionalContext) != 1 || r.AdditionalContext[0] != "s3cr3t context" {
		t.Errorf("additional context changed: %v", r.AdditionalContext)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range []string{"ok", "keep", "fail", "bad-args", "deny", "block", "ctx"} {
		if seen[id] != 1 {
			t.Errorf("%s: FinalizeContent ran %d times, want 1", id, seen[id])
		}
	}
}

// TestF1_FinalizeContentPanicWithholdsContent: a panic in FinalizeContent
// is contained: the call still gets its one result, with its code and value
// unchanged, and the content it was to finalize is withheld (fail closed);
// a runtime.Goexit in it still emits the call's result.
func TestF1_FinalizeContentPanicWithholdsContent(t *testing.T) {
	e := newEnv(t)
	var rc recorder
	rc.listen(t, e.root)
	d := listTool(listing{Entries: []entry{{"s3cr3t", 1}}, Total: 1})
	d.FinalizeContent = func(exec *tools.Execution, _ tools.Result) []tools.Content {
		if exec.CallID() == "goexit" {
			runtime.Goexit()
		}
		panic("redactor broke")
	}
	mustRegister(t, e.reg, e.root, d)
	res := e.reg.Execute(context.Background(), tools.Call{ID: "p", Name: "list", Arguments: json.RawMessage(`{"dir":""}`)})
	if res.IsError || strings.Contains(text(res), "s3cr3t") || !strings.Contains(text(res), "withheld") || !strings.Contains(string(res.Value), "s3cr3t") {
		t.Fatalf("panic: %+v (%q)", res, text(res))
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.reg.Execute(context.Background(), tools.Call{ID: "goexit", Name: "list", Arguments: json.RawMessage(`{"dir":""}`)})
	}()
	<-done
	if rc.count() != 2 {
		t.Fatalf("tools/result emitted %d times, want 2", rc.count())
	}
	g := rc.notices[1].Result()
	if g.IsError || !strings.Contains(text(g), "withheld") || strings.Contains(text(g), "s3cr3t") {
		t.Fatalf("goexit: %+v", g)
	}
}
