package tools

import (
	"context"
	"fmt"
	"sync/atomic"
)

// This file is the policy-only path: the pipeline's policy stages for a
// call that something else runs (a coding agent asking through a hook),
// without approval prompting, without the tools/execute stage and without
// the tool body.

// Verdict is what the pipeline's policy stages decided for one call that
// was not run: see [Registry.Check].
type Verdict struct {
	// Kind is Allow, Deny or Ask.
	Kind PreKind
	// Reason is, for Deny, the text of the isError result Execute would
	// have returned (for example "Tool call denied: <the policy's
	// reason>"); for Ask, the ask's reason (possibly ""); for Allow, "".
	Reason string
	// Error is, for Deny, the error info of that result (DENIED,
	// INVALID_ARGS, INVALID_CALL, LISTENER_ERROR, INVALID_DECISION,
	// UNKNOWN_TOOL, GUARD_FAILED, ABORTED_BEFORE_DISPATCH, INTERNAL_ERROR
	// or a policy's own code); nil otherwise.
	Error *ErrorInfo
	// Default reports, for Allow, that no policy decided: the allow is the
	// tools/pre-execute waterfall's base (every listener that ran passed
	// next's allow on, or there was none) and no guard denied. An allow a
	// listener returned without calling next is not a default.
	Default bool
	// Known reports whether the call's name resolved to a tool for its
	// agent (a tool the registry would dispatch). Policy runs either way,
	// as it does in Execute. A name the registry does not know at all is
	// not a denial here (the call is something else's to run); one that
	// the agent may not reach is (see Check).
	Known bool
}

// Check runs call through the policy stages of [Registry.Execute] and
// returns their decision, without running the call: snapshot and
// validate-args (a rejection is a Deny with INVALID_CALL / INVALID_ARGS),
// tools/pre-execute (deny, ask, a failing listener or a malformed decision
// as in Execute), and, after an allow or an ask, the guards (global, then
// the agent's; the first error denies). An ask is not put to the approval
// service: it is returned as Ask, with its reason, when no guard denies.
// Then a tool the call's agent may not reach is a Deny with UNKNOWN_TOOL
// and the text Execute would give: a global tool its agent's restrictions
// ([Registry.Restrict]) hide, or under Code a direct call of an end
// capability. A name no layer registers is not (Known is false).
// Check dispatches no tools/execute, runs no body, emits no
// tools/post-execute and no tools/result.
//
// ctx done before or during the policy stages is a Deny with
// ABORTED_BEFORE_DISPATCH, as in Execute. Every listener and guard failure
// is contained as in Execute; a panic of the stages themselves is a Deny
// with INTERNAL_ERROR. runtime.Goexit in a listener or guard ends the calling
// goroutine (there is no result to record). Check is safe for concurrent
// use.
func (r *Registry) Check(ctx context.Context, call Call) (v Verdict) {
	exec := &Execution{}
	defer func() {
		if p := recover(); p != nil {
			var res Result
			r.containValue(exec, call.Name, p, &res)
			v = denyVerdict(res)
		}
	}()
	res, ok := r.admit(exec, call)
	v.Known = exec.tool != nil
	if !ok {
		return known(denyVerdict(res), v.Known)
	}
	// Stages 3–4, the same code as Execute's, with a base that records
	// that it was reached. Stage 5 is not run: an ask is the answer.
	var reached atomic.Bool
	dec, res, ok := r.gate(ctx, r.h.Emitter(exec.agent), exec, func(context.Context) (PreDecision, error) {
		reached.Store(true)
		return PreDecision{Kind: Allow}, nil
	})
	if !ok {
		return known(denyVerdict(res), v.Known)
	}
	if ctx.Err() != nil {
		return known(denyVerdict(aborted(ctx, CodeAbortedBeforeDispatch)), v.Known)
	}
	// Restrictions (and Code's direct calls): what dispatch would refuse
	// for a tool that exists but that this call may not reach.
	if !v.Known {
		if _, global := r.Get(exec.name, ""); exec.hint != "" || global && exec.agent != "" {
			return known(denyVerdict(failure(CodeUnknownTool, "UnknownTool", fmt.Sprintf("Unknown tool %q", exec.name)+exec.hint)), false)
		}
	}
	if dec.Kind == Ask {
		v.Kind, v.Reason = Ask, dec.Reason
		return v
	}
	v.Kind, v.Default = Allow, reached.Load()
	return v
}

// CheckPost runs the tools/post-execute stage over res, the result of call
// as something else ran it, and returns the result as post-execute left
// it: unchanged, with its content replaced (accept with content), or a
// BLOCKED isError whose text is the block's feedback; with the
// listeners' additional context appended; a failing listener or malformed
// decision as in Execute (LISTENER_ERROR or its code, INVALID_DECISION).
// call is admitted first as in Execute (snapshot, validate-args); a
// rejection is returned as that isError result (INVALID_CALL,
// INVALID_ARGS) without running post-execute. res is not finalized or
// validated, and no tools/result is emitted. Safe for concurrent use.
func (r *Registry) CheckPost(ctx context.Context, call Call, res Result) (out Result) {
	exec := &Execution{}
	defer func() {
		if p := recover(); p != nil {
			r.containValue(exec, call.Name, p, &out)
		}
	}()
	if rej, ok := r.admit(exec, call); !ok {
		rej.CallID = exec.callID
		return rej
	}
	out = r.post(ctx, r.h.Emitter(exec.agent), exec, res.Clone())
	out.CallID = exec.callID
	return out
}

// denyVerdict is the Deny verdict for the isError result res.
func denyVerdict(res Result) Verdict {
	v := Verdict{Kind: Deny, Error: res.Error}
	if len(res.Content) > 0 {
		v.Reason = res.Content[0].Text
	}
	if v.Error == nil {
		v.Error = &ErrorInfo{Name: "ToolError", Code: CodeToolError}
	}
	if v.Reason == "" {
		v.Reason = "Tool call denied (" + string(v.Error.Code) + ")"
	}
	return v
}

func known(v Verdict, k bool) Verdict {
	v.Known = k
	return v
}
