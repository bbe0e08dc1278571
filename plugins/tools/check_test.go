package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// checkEnv is an env with a tool whose body and an approver that fail the
// test when reached, and a tools/result recorder.
func checkEnv(t *testing.T) (*env, *recorder) {
	t.Helper()
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, tools.Definition{
		Name: "rm", Description: "Remove.",
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			t.Error("Check ran the tool body")
			return tools.Output{}, nil
		},
	})
	must2(t)(tools.ApprovalService.Provide(e.root, tools.ApproverFunc(func(context.Context, tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
		t.Error("Check asked the approval service")
		return tools.AllowedOnce, nil
	})))
	must2(t)(host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, x *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		t.Error("Check dispatched tools/execute")
		return next(ctx)
	}))
	rc := &recorder{}
	rc.listen(t, e.root)
	return e, rc
}

func pre(t *testing.T, e *env, fn func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error)) {
	t.Helper()
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, fn))
}

func TestCheck_DecisionsWithoutRunning(t *testing.T) {
	cases := []struct {
		name    string
		setup   func(t *testing.T, e *env)
		args    string
		kind    tools.PreKind
		def     bool
		code    tools.ErrorCode
		reason  string
		unknown bool
	}{
		{name: "no policy is a default allow", kind: tools.Allow, def: true},
		{name: "a listener passing next's allow on is a default allow", kind: tools.Allow, def: true,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
					return next(ctx)
				})
			}},
		{name: "a listener's own allow is not a default", kind: tools.Allow,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.Allowed(), nil
				})
			}},
		{name: "deny carries the reason and DENIED", kind: tools.Deny, code: tools.CodeDenied, reason: "Tool call denied: no rm",
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.Denied("no rm"), nil
				})
			}},
		{name: "ask is returned, not put to the approver", kind: tools.Ask, reason: "rm needs a human",
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.Asked("rm needs a human"), nil
				})
			}},
		{name: "a guard denies an ask", kind: tools.Deny, code: "NO_PATH", reason: "Tool call denied: path / is off limits",
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.Asked(""), nil
				})
				must2(t)(e.reg.Guard(e.root, func(x *tools.Execution) error {
					if x.Arg("path").String() == "/" {
						return &tools.Error{Info: tools.ErrorInfo{Name: "NoPath", Code: "NO_PATH"}, Message: "path / is off limits"}
					}
					return nil
				}))
			}},
		{name: "a guard denies a default allow", kind: tools.Deny, code: tools.CodeDenied, reason: "Tool call denied: guarded",
			setup: func(t *testing.T, e *env) {
				must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { return errors.New("guarded") }))
			}},
		{name: "a panicking guard fails closed", kind: tools.Deny, code: tools.CodeGuardFailed,
			setup: func(t *testing.T, e *env) {
				must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { panic("boom") }))
			}},
		{name: "a failing listener denies", kind: tools.Deny, code: tools.CodeListenerError,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.PreDecision{}, errors.New("policy store unreachable")
				})
			}},
		{name: "a malformed decision denies", kind: tools.Deny, code: tools.CodeInvalidDecision,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					return tools.PreDecision{Kind: tools.Deny}, nil
				})
			}},
		{name: "arguments that are not lossless JSON deny before policy", kind: tools.Deny, code: tools.CodeInvalidArgs,
			args: `{"path":"/","path":"/tmp"}`,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
					t.Error("policy ran on rejected arguments")
					return tools.Allowed(), nil
				})
			}},
		{name: "an unknown tool still runs policy", kind: tools.Deny, code: tools.CodeDenied, unknown: true,
			setup: func(t *testing.T, e *env) {
				pre(t, e, func(_ context.Context, x *tools.Execution, _ tools.PreNext) (tools.PreDecision, error) {
					if x.Tool() != nil {
						t.Error("an unknown tool resolved")
					}
					return tools.Denied(x.Name() + " is not allowed"), nil
				})
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, rc := checkEnv(t)
			if tc.setup != nil {
				tc.setup(t, e)
			}
			args := tc.args
			if args == "" {
				args = `{"path":"/"}`
			}
			name := "rm"
			if tc.unknown {
				name = "Bash"
			}
			v := e.reg.Check(context.Background(), tools.Call{ID: "c1", Name: name, Arguments: json.RawMessage(args)})
			if v.Kind != tc.kind || v.Default != tc.def {
				t.Fatalf("verdict %+v, want kind %s default %v", v, tc.kind, tc.def)
			}
			if v.Known == tc.unknown && tc.code != tools.CodeInvalidArgs {
				t.Errorf("Known = %v for %q", v.Known, name)
			}
			if tc.kind == tools.Deny {
				if v.Error == nil || v.Error.Code != tc.code || v.Reason == "" {
					t.Fatalf("deny verdict %+v, want code %s and a reason", v, tc.code)
				}
			} else if v.Error != nil {
				t.Fatalf("non-deny verdict with error info %+v", v)
			}
			if tc.reason != "" && v.Reason != tc.reason {
				t.Errorf("reason %q, want %q", v.Reason, tc.reason)
			}
			if rc.count() != 0 {
				t.Errorf("Check emitted %d tools/result", rc.count())
			}
		})
	}
}

// A tool the agent's restrictions hide is denied as Execute would fail it;
// a name no layer registers is the caller's to run.
func TestCheck_RestrictionsDenyUnregisteredNamesDoNot(t *testing.T) {
	e, _ := checkEnv(t)
	agent := e.scope(t, "agent-1")
	must2(t)(e.reg.Restrict(agent, tools.Restriction{Deny: []string{"rm"}}))
	v := e.reg.Check(context.Background(), tools.Call{ID: "c1", Name: "rm", Agent: "agent-1"})
	if v.Kind != tools.Deny || v.Error.Code != tools.CodeUnknownTool || v.Reason != `Unknown tool "rm"` || v.Known {
		t.Fatalf("restricted: %+v", v)
	}
	if v := e.reg.Check(context.Background(), tools.Call{ID: "c1", Name: "rm"}); v.Kind != tools.Allow || !v.Known {
		t.Fatalf("unrestricted: %+v", v)
	}
	v = e.reg.Check(context.Background(), tools.Call{ID: "c1", Name: "Bash", Agent: "agent-1"})
	if v.Kind != tools.Allow || !v.Default || v.Known {
		t.Fatalf("unregistered: %+v", v)
	}
}

func TestCheck_CancelledContextDenies(t *testing.T) {
	e, _ := checkEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v := e.reg.Check(ctx, call("rm", `{}`))
	if v.Kind != tools.Deny || v.Error.Code != tools.CodeAbortedBeforeDispatch {
		t.Fatalf("verdict %+v, want ABORTED_BEFORE_DISPATCH", v)
	}
}

func TestCheck_ScopedPolicyFollowsTheAgent(t *testing.T) {
	e, _ := checkEnv(t)
	agent := e.scope(t, "agent-1")
	must2(t)(host.OnWaterfall(agent, tools.PreExecute, func(context.Context, *tools.Execution, tools.PreNext) (tools.PreDecision, error) {
		return tools.Denied("agent-1 may not"), nil
	}))
	c := call("rm", `{}`)
	if v := e.reg.Check(context.Background(), c); v.Kind != tools.Allow {
		t.Fatalf("global call: %+v, want allow", v)
	}
	c.Agent = "agent-1"
	if v := e.reg.Check(context.Background(), c); v.Kind != tools.Deny {
		t.Fatalf("agent call: %+v, want deny", v)
	}
}

func TestCheckPost_BlockAcceptAndContext(t *testing.T) {
	e, rc := checkEnv(t)
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		r := in.Result()
		if strings.Contains(text(r), "SECRET") {
			return tools.PostDecision{Kind: tools.Block, Feedback: "the output holds a secret", AdditionalContext: "redacted"}, nil
		}
		if in.Execution().Name() != "rm" {
			return tools.PostDecision{Kind: tools.Accept, AdditionalContext: "checked " + in.Execution().Name()}, nil
		}
		return next(ctx)
	}))
	out := e.reg.CheckPost(context.Background(), call("rm", `{}`), tools.Result{Content: []tools.Content{tools.Text("SECRET=1")}})
	if !out.IsError || code(out) != tools.CodeBlocked || text(out) != "the output holds a secret" || len(out.AdditionalContext) != 1 || out.CallID != "c-rm" {
		t.Fatalf("blocked: %+v", out)
	}
	out = e.reg.CheckPost(context.Background(), call("Bash", `{"command":"ls"}`), tools.Result{Content: []tools.Content{tools.Text("a b")}})
	if out.IsError || text(out) != "a b" || len(out.AdditionalContext) != 1 || out.AdditionalContext[0] != "checked Bash" {
		t.Fatalf("accepted: %+v", out)
	}
	out = e.reg.CheckPost(context.Background(), call("rm", `{"a":1,"a":2}`), tools.Result{})
	if code(out) != tools.CodeInvalidArgs {
		t.Fatalf("rejected arguments: %+v", out)
	}
	if rc.count() != 0 {
		t.Errorf("CheckPost emitted %d tools/result", rc.count())
	}
}

func TestCheckPost_FailingListenerBlocksClosed(t *testing.T) {
	e, _ := checkEnv(t)
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(context.Context, tools.PostInput, tools.PostNext) (tools.PostDecision, error) {
		panic("post boom")
	}))
	out := e.reg.CheckPost(context.Background(), call("rm", `{}`), tools.Result{Content: []tools.Content{tools.Text("x")}})
	if !out.IsError || code(out) != tools.CodeListenerError {
		t.Fatalf("%+v, want LISTENER_ERROR", out)
	}
}

// Under Code, a direct call of an end capability is denied as Execute
// would fail it, with the hint that says to call it from run_code.
func TestCheck_CodeModeDirectCallDenies(t *testing.T) {
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	if _, err := h.Root().Plugin(codemode.Plugin, tools.Config{Mode: tools.Code}); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		t.Fatal(err)
	}
	mustRegister(t, reg, h.Root(), echo("greet", "hi"))
	v := reg.Check(context.Background(), call("greet", `{}`))
	want := reg.Execute(context.Background(), call("greet", `{}`))
	if v.Kind != tools.Deny || v.Error.Code != tools.CodeUnknownTool || v.Reason != text(want) || !strings.Contains(v.Reason, "run_code") {
		t.Fatalf("verdict %+v, Execute says %q", v, text(want))
	}
}
