package toolstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipeline boots a registry with d registered and the given policy, and
// runs call through it: what toolstest's runners must agree with.
func pipeline(t *testing.T, d tools.Definition, policy func(c *host.Context, reg *tools.Registry), c tools.Call) tools.Result {
	t.Helper()
	p := host.Define("probe", []host.ServiceKey{tools.Service}, func(ctx *host.Context) error {
		reg, err := tools.Service.Get(ctx)
		if err != nil {
			return err
		}
		if _, err := reg.Register(ctx, d); err != nil {
			return err
		}
		policy(ctx, reg)
		return nil
	})
	reg := toolstest.Boot(t, []toolstest.Plugin{{P: p}})
	return reg.Execute(context.Background(), c)
}

type kindArgs struct {
	Path string `json:"path"`
	N    int8   `json:"n,omitempty"`
}

func kindTool(runs *atomic.Int32) tools.Definition {
	return tools.MustDefine(tools.TypedTool[kindArgs, tools.Output]{
		Name: "kind", Description: "Probe.",
		Execute: func(_ context.Context, a kindArgs, _ *tools.Execution) (tools.Output, error) {
			runs.Add(1)
			if a.Path == "fail" {
				return tools.Output{}, tools.NewError("E_FAIL", "Fail", "asked to fail")
			}
			return tools.Output{Content: []tools.Content{tools.Text("read " + a.Path)}}, nil
		},
	})
}

// NewExecution accepts exactly what the pipeline lets reach policy, with
// the same canonical arguments, and rejects the rest with the pipeline's
// code and text.
func TestNewExecutionAgreesWithThePipeline(t *testing.T) {
	for _, c := range []tools.Call{
		{ID: "ok", Arguments: json.RawMessage(`{"n": 1.0, "path": "a"}`)},
		{ID: "missing", Arguments: json.RawMessage(`{}`)},
		{ID: "overflow", Arguments: json.RawMessage(`{"path":"a","n":300}`)},
		{ID: "case", Arguments: json.RawMessage(`{"path":"a","PATH":"b"}`)},
		{ID: "dup", Arguments: json.RawMessage(`{"path":"a","path":"b"}`)},
		{ID: "bad\x01id", Arguments: json.RawMessage(`{"path":"a"}`)},
	} {
		t.Run(c.ID, func(t *testing.T) {
			var runs atomic.Int32
			var saw string
			c.Name = "kind"
			res := pipeline(t, kindTool(&runs), func(ctx *host.Context, reg *tools.Registry) {
				_, _ = reg.Guard(ctx, func(e *tools.Execution) error { saw = e.ArgsString(); return errors.New("stop") })
			}, c)
			exec, err := tools.NewExecution(c, kindTool(&runs))
			if res.Error.Code == tools.CodeDenied {
				if err != nil || exec.ArgsString() != saw || exec.CallID() != c.ID || exec.Name() != "kind" {
					t.Fatalf("pipeline reached policy with %s; NewExecution = %v, %v", saw, exec, err)
				}
				return
			}
			var te *tools.Error
			if !errors.As(err, &te) || te.Info != *res.Error || te.Message != res.Content[0].Text || !strings.HasPrefix(err.Error(), "tools: ") {
				t.Fatalf("pipeline rejected with %+v %q; NewExecution err = %v", res.Error, res.Content[0].Text, err)
			}
		})
	}
	if _, err := tools.NewExecution(tools.Call{Name: "other"}, kindTool(new(atomic.Int32))); err == nil || !strings.Contains(err.Error(), `"other"`) {
		t.Errorf("a call of another tool: %v", err)
	}
	if _, err := tools.NewExecution(tools.Call{}, tools.Definition{Name: "x"}); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("an invalid definition: %v", err)
	}
}

// RunGuard gives the result the pipeline gives when the guard is the
// only policy: allowed, a plain denial, a coded denial, a panic.
func TestRunGuardAgreesWithThePipeline(t *testing.T) {
	for name, g := range map[string]tools.Guard{
		"allows":  func(*tools.Execution) error { return nil },
		"plain":   func(*tools.Execution) error { return errors.New("no") },
		"coded":   func(*tools.Execution) error { return tools.NewError("QUOTA", "Quota", "over quota") },
		"panics":  func(*tools.Execution) error { panic("boom") },
		"by args": func(e *tools.Execution) error { return errors.New("path " + e.Arg("path").String()) },
	} {
		t.Run(name, func(t *testing.T) {
			var runs atomic.Int32
			c := tools.Call{ID: "c", Name: "kind", Arguments: json.RawMessage(`{"path":"p"}`)}
			want := pipeline(t, kindTool(&runs), func(ctx *host.Context, reg *tools.Registry) { _, _ = reg.Guard(ctx, g) }, c)
			got, denied := toolstest.RunGuard(g, toolstest.NewExecution(t, c, kindTool(&runs)))
			if denied != want.IsError {
				t.Fatalf("denied = %v, pipeline %+v", denied, want)
			}
			if denied && (*got.Error != *want.Error || got.Content[0].Text != want.Content[0].Text || got.CallID != "c") {
				t.Fatalf("RunGuard = %+v %+v, pipeline %+v %+v", got, got.Error, want, want.Error)
			}
		})
	}
}

// RunWrapper gives the result the pipeline gives when the wrapper is the
// only policy, the body running as dispatch runs it.
func TestRunWrapperAgreesWithThePipeline(t *testing.T) {
	type wrapper = func(context.Context, *tools.Execution, tools.ExecuteNext) (tools.Result, error)
	for _, tc := range []struct {
		name, args string
		w          wrapper
	}{
		{"passes", `{"path":"a"}`, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			return next(ctx)
		}},
		{"body error", `{"path":"fail"}`, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			return next(ctx)
		}},
		{"runs twice", `{"path":"a"}`, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			if _, err := next(ctx); err != nil {
				return tools.Result{}, err
			}
			return next(ctx)
		}},
		{"short-circuits", `{"path":"a"}`, func(context.Context, *tools.Execution, tools.ExecuteNext) (tools.Result, error) {
			return tools.Result{Content: []tools.Content{tools.Text("cached")}}, nil
		}},
		{"fails with a code", `{"path":"a"}`, func(context.Context, *tools.Execution, tools.ExecuteNext) (tools.Result, error) {
			return tools.Result{}, tools.NewError("RATE", "Rate", "slow down")
		}},
		{"cancels the body's context", `{"path":"a"}`, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			ctx, cancel := context.WithCancel(ctx)
			cancel()
			return next(ctx)
		}},
		{"runs the body on its own goroutine", `{"path":"a"}`, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
			done := make(chan struct{})
			go func() { defer close(done); _, _ = next(ctx) }()
			<-done
			return tools.Result{Content: []tools.Content{tools.Text("mine")}}, nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pipeRuns, unitRuns atomic.Int32
			c := tools.Call{ID: "c", Name: "kind", Arguments: json.RawMessage(tc.args)}
			want := pipeline(t, kindTool(&pipeRuns), func(ctx *host.Context, _ *tools.Registry) {
				_, _ = host.OnWaterfall(ctx, tools.ExecuteEvent, tc.w)
			}, c)
			got := toolstest.RunWrapper(context.Background(), toolstest.NewExecution(t, c, kindTool(&unitRuns)), tc.w)
			if got.IsError != want.IsError || (want.IsError && got.Error.Code != want.Error.Code) || pipeRuns.Load() != unitRuns.Load() {
				t.Fatalf("RunWrapper = %+v (runs %d), pipeline %+v (runs %d)", got, unitRuns.Load(), want, pipeRuns.Load())
			}
			if !want.IsError && got.Content[0].Text != want.Content[0].Text {
				t.Fatalf("RunWrapper text %q, pipeline %q", got.Content[0].Text, want.Content[0].Text)
			}
		})
	}
}

// RunWrapper with a caller already cancelled starts no body; a typed body
// gets the value decoded when the execution was made, and a second run
// on the same execution decodes afresh.
func TestRunWrapperCancelledAndTyped(t *testing.T) {
	var runs atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := tools.Call{Arguments: json.RawMessage(`{"path":"a"}`)}
	if res := toolstest.RunWrapper(ctx, toolstest.NewExecution(t, c, kindTool(&runs)), nil); res.Error == nil || res.Error.Code != tools.CodeAbortedBeforeDispatch || runs.Load() != 0 {
		t.Fatalf("cancelled: %+v, runs %d", res, runs.Load())
	}
	if res := toolstest.RunWrapper(context.Background(), toolstest.NewExecution(t, c, kindTool(&runs)), nil); res.IsError || res.Content[0].Text != "read a" {
		t.Fatalf("no wrapper: %+v", res)
	}
}

// RunPreExecute returns the listener's decision, its error, or an error
// for a malformed decision or a panic.
func TestRunPreExecute(t *testing.T) {
	exec := toolstest.NewExecution(t, tools.Call{Arguments: json.RawMessage(`{"path":"a"}`)}, kindTool(new(atomic.Int32)))
	type listener = func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error)
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		l       listener
		want    tools.PreDecision
		wantErr string
	}{
		{"next allows", func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
			return next(ctx)
		}, tools.Allowed(), ""},
		{"denies", func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
			return tools.Denied("no"), nil
		}, tools.Denied("no"), ""},
		{"fails", func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
			return tools.PreDecision{}, boom
		}, tools.PreDecision{}, "boom"},
		{"malformed", func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
			return tools.PreDecision{Kind: tools.Deny}, nil
		}, tools.PreDecision{}, "malformed"},
		{"panics", func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) { panic("oops") }, tools.PreDecision{}, "panicked: oops"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dec, err := toolstest.RunPreExecute(context.Background(), exec, tc.l)
			if dec != tc.want || (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("= %+v, %v; want %+v, %q", dec, err, tc.want, tc.wantErr)
			}
		})
	}
}
