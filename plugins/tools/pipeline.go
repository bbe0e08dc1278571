package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"unicode/utf8"
	"unsafe"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// This file is the execution pipeline, in the order its stages run. Each
// stage's rules are in the comment above it; [Stages] is the same list as
// data, from which the pipeline diagram is generated.

// Stage is one step of the execution pipeline, as the generated pipeline
// diagram shows it.
type Stage struct {
	// Name is the stage's short name; the code marks the stage with a
	// "Stage N, <Name or Event>" comment (a test keeps the two in step).
	Name string
	// Event is the tools/* event the stage dispatches, "" for a built-in
	// step.
	Event string
	// Doc says what the stage does and where a failure goes.
	Doc string
	// OnFailure labels where a denial or failure of this stage goes, and
	// FailTo names that stage; both empty when the stage cannot fail the
	// call.
	OnFailure string
	FailTo    string
}

// Stages lists the pipeline's stages in the order [Registry.Execute] runs
// them. A stage that produces a failure skips to post-execute, except the
// two input stages, whose rejections skip every policy stage and go
// straight to finalize.
var Stages = []Stage{
	{Name: "snapshot", Doc: "Assign the token, check the call id (invalid → INVALID_CALL), resolve the tool for the agent, canonicalize the arguments (not lossless → INVALID_ARGS); either goes to finalize.",
		OnFailure: "INVALID_CALL / INVALID_ARGS", FailTo: "finalize"},
	{Name: "validate-args", Doc: "A typed tool checks the arguments against its schema (violations → INVALID_ARGS, to finalize).",
		OnFailure: "INVALID_ARGS", FailTo: "finalize"},
	{Name: "pre-execute", Event: PreExecute.Descriptor().Name, Doc: "Allow, deny (DENIED) or ask; a failing listener → LISTENER_ERROR, a malformed decision → INVALID_DECISION; cancelled before → ABORTED_BEFORE_DISPATCH.",
		OnFailure: "deny / error", FailTo: "post-execute"},
	{Name: "guards", Doc: "For an allow or an ask, before anyone is asked: global guards, then the agent's; an error denies (its code, or DENIED), monotonically; a panic → GUARD_FAILED.",
		OnFailure: "DENIED", FailTo: "post-execute"},
	{Name: "approval", Doc: "An ask the guards let through goes to the approval service: allowed-once proceeds; rejected, cancelled, unavailable, no service or no agent deny (APPROVAL_*, with the policy's reason); the call cancelled when the answer arrives → ABORTED_BEFORE_DISPATCH, whatever the answer (a rejection is kept).",
		OnFailure: "not granted", FailTo: "post-execute"},
	{Name: "execute", Event: ExecuteEvent.Descriptor().Name, Doc: "Wrappers around dispatch may derive the cancellation context, retry or short-circuit; a failing wrapper → LISTENER_ERROR. When the stage returns, bodies still running are cancelled and waited for, and next starts none.",
		OnFailure: "short-circuit / error", FailTo: "post-execute"},
	{Name: "dispatch", Doc: "Run the tool body: unknown (or, under tools mode code, called directly) → UNKNOWN_TOOL; the caller cancelled before, whatever context the wrapper passed → ABORTED_BEFORE_DISPATCH; error, panic or Goexit → its code or TOOL_ERROR; the tool's declared Timeout expired → TOOL_TIMEOUT; cancelled during → ABORTED; a declared output's value validated (mismatch → INVALID_OUTPUT) and rendered."},
	{Name: "post-execute", Event: PostExecute.Descriptor().Name, Doc: "Accept (optionally replacing content, or a declared output's value, validated again) or block with feedback (BLOCKED); attach additional context."},
	{Name: "finalize", Doc: "Check the value against the declared output (else INVALID_OUTPUT), run the tool's FinalizeContent once (content only; a panic withholds it), validate the result as lossless JSON (else INVALID_RESULT) and freeze it."},
	{Name: "result", Event: ResultEvent.Descriptor().Name, Doc: "Observers see the frozen result, exactly once per call; their failures are contained."},
}

// The stage indexes of [Stages], for Execution.stage.
const (
	stageSnapshot = iota
	stageValidateArgs
	stagePreExecute
	stageGuards
	stageApproval
	stageExecute
	stageDispatch
	stagePostExecute
	stageFinalize
	stageResult
)

// ErrAbandoned is the cause a tool body's context is cancelled with when
// the tools/execute stage returns while the body still runs (a wrapper
// returned without waiting for next, for instance a naive
// select-on-timeout). The pipeline then waits for the body before it goes
// on: no body runs after its call's result was given.
var ErrAbandoned = errors.New("tools: the tools/execute stage returned while the tool body was running")

// Execute runs one call through the pipeline and returns its result. It
// always returns exactly one result and emits exactly one tools/result,
// whatever a tool, listener, guard or approver does (return an error or a
// hostile error value, panic, return a malformed decision, block until
// cancelled): failures become isError results with a stable error.code.
//
// ctx is the call's cancellation. Done before the tool
// body starts (including while waiting for approval), the call fails with
// ABORTED_BEFORE_DISPATCH and the body never starts, whatever context a
// tools/execute wrapper passes to next; an approval answered after ctx is
// done grants nothing. Done while the body runs, with ABORTED once the body
// has returned (a body that ignores ctx is waited for). A more specific
// failure that happened first (a denial, a tool error, a wrapper error) is
// kept. Post-execute listeners and result observers still run after
// cancellation.
//
// No tool body runs after Execute returned or tools/result was emitted:
// when the tools/execute stage returns while a body it started still runs
// (a wrapper that ran next on another goroutine and did not wait), that
// body is cancelled (cause [ErrAbandoned]) and waited for, and next starts
// no body after that.
//
// Execute runs everything on the calling goroutine (a wrapper may run next
// elsewhere), holds no lock while user code runs, and is safe for
// concurrent use; listeners and tool bodies may call Execute recursively
// (Code Mode).
//
// runtime.Goexit (what t.FailNow does) in anything Execute calls ends the
// calling goroutine, as Go requires: Execute does not return. The call
// still gets its one result, recorded on the way out: a body still running
// is waited for, and tools/result is emitted with an isError result naming
// the stage (TOOL_ERROR for the body, LISTENER_ERROR for a listener,
// GUARD_FAILED, APPROVAL_FAILED; error.name "Goexit"), without
// tools/post-execute. Then the goroutine exits. A Goexit inside a
// tools/result observer ends the delivery of that one result; one in a
// tracer's CallTrace.End (called just before tools/result) still emits the
// call's own result.
func (r *Registry) Execute(ctx context.Context, call Call) Result {
	exec := &Execution{}
	var res Result
	finished := false
	defer func() {
		if !finished {
			// Reached only by runtime.Goexit: run contains every panic.
			// res is the final result once observe began.
			r.goexit(ctx, exec, &res)
		}
	}()
	res = r.run(ctx, exec, call)

	// Stage 10, tools/result: observe-only, exactly once per call.
	// res is already detached (finalize). Observers get their own copy so
	// that what the caller does with its result can never reach them.
	r.observeRef(ctx, exec, &res)
	finished = true
	return res
}

// run is stages 1–9; it contains any panic of the pipeline itself. The
// pipeline is three parts, which [Registry.ExecuteBatch] schedules
// separately: the policy prefix (admit: stages 1–2, policy: stages 3–5),
// the dispatch (execute: stages 6–7), and the suffix (post, finalize, and
// stage 10, observe).
func (r *Registry) run(ctx context.Context, exec *Execution, call Call) (res Result) {
	defer r.contain(exec, call.Name, &res)
	r.startTrace(exec, call)
	res, ok := r.admit(exec, call)
	if !ok {
		r.finalizeIn(exec, &res)
		return res
	}
	em := r.h.Emitter(exec.agent)
	if res, ok = r.policy(ctx, em, exec); ok {
		res = r.execute(ctx, em, exec)
	}
	if r.postHeard(exec) {
		res = r.post(ctx, em, exec, res)
	}
	exec.stage = stageFinalize
	r.finalizeIn(exec, &res)
	return res
}

// postHeard reports whether post has anything to do for exec: a trace to
// report the stage to, or listeners. Otherwise the base accepts the
// result unchanged, and run skips the stage (and two copies of it).
func (r *Registry) postHeard(exec *Execution) bool {
	return exec.trace != nil || r.h.Listening(PostExecute.Descriptor()) != 0
}

// contain, deferred, turns a panic of the pipeline itself into an
// INTERNAL result in *res.
func (r *Registry) contain(exec *Execution, tool string, res *Result) {
	if v := recover(); v != nil {
		r.containValue(exec, tool, v, res)
	}
}

// containValue is contain for a panic value already recovered.
func (r *Registry) containValue(exec *Execution, tool string, v any, res *Result) {
	r.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Bytes("stack", debug.Stack()).Str("tool", tool).Msg("tool pipeline panicked")
	if exec.token.IsZero() {
		exec.token = newToken()
	}
	*res = failure(CodeInternal, "InternalError", panicMessage("the tool pipeline", v))
	res.CallID = exec.callID
}

// admit is stages 1–2, which run no policy: it fills exec in, or returns
// the call's rejection (INVALID_CALL, INVALID_ARGS), which goes straight
// to finalize, and false.
func (r *Registry) admit(exec *Execution, call Call) (Result, bool) {
	return admitCall(exec, call, r.resolveCall)
}

// admitCall is stages 1–2 with the tool resolved by resolve (the
// registry's resolveCall, or NewExecution's frozen definition).
func admitCall(exec *Execution, call Call, resolve func(Call) (*Tool, string)) (Result, bool) {
	// Stage 1, snapshot: the execution gets a fresh token (the caller may
	// only name a parent), the call id is checked (it must survive JSON and
	// a log line: see Call.ID; an invalid one is INVALID_CALL and the
	// execution carries it repaired), the tool is resolved once for the
	// agent (policy sees, and dispatch runs, that same frozen *Tool), and
	// the arguments are canonicalized once. Input that is not lossless JSON
	// (see canonjson.Canonicalize for exactly which: invalid UTF-8, lone
	// surrogates, duplicate keys, integers beyond 2^53-1, overflow, too
	// deep or too large) or not an object is rejected here, before any
	// policy runs, so policy and tool always see the same value.
	exec.token, exec.callID, exec.name, exec.agent, exec.parent = newToken(), call.ID, call.Name, call.Agent, call.Parent
	maxID := MaxCallIDLen
	if call.subCall {
		maxID += maxSubCallSuffix
	}
	if why := checkCallID(call.ID, maxID); why != "" {
		exec.callID = repairCallID(call.ID)
		return failure(CodeInvalidCall, "InvalidCall", fmt.Sprintf("invalid call to tool %q: the call id %s", call.Name, why)), false
	}
	exec.tool, exec.hint = resolve(call)
	var canon []byte
	if t, a := exec.tool, call.Arguments; t != nil && t.admit != nil && mayBeCanonical(a) {
		// A typed tool's arguments are copied first: when its one pass
		// (admit) finds the copy canonical and valid, having decoded it,
		// the copy is the arguments without a scan of its own; else it is
		// when it is canonical, and otherwise the copy (not the caller's
		// bytes again, nor the buffer the pass read) is canonicalized.
		if len(a) <= len(exec.argBuf) {
			canon = append(exec.argBuf[:0], a...)
		} else {
			canon = bytes.Clone(a)
		}
		exec.args = unsafe.String(unsafe.SliceData(canon), len(canon))
		// The pass is stage 2's work done early: it may run the argument
		// type's own UnmarshalJSON, whose runtime.Goexit is argument
		// validation's (see goexitResult).
		st := exec.stage
		exec.stage = stageValidateArgs
		admitted := t.admit(exec)
		exec.stage = st
		if !admitted && !canonjson.IsCanonical(canon, canonjson.Options{}) {
			var err error
			if canon, err = canonjson.CanonicalizeObject(canon, canonjson.Options{}); err != nil {
				return argsFailure(call.Name, err), false
			}
		}
	} else if a := call.Arguments; len(a) <= len(exec.argBuf) && len(a) > 0 && a[0] == '{' && canonjson.IsCanonical(a, canonjson.Options{}) {
		// Small and canonical already (what CanonicalizeObject would
		// copy): copied into the execution's own allocation.
		canon = append(exec.argBuf[:0], a...)
	} else {
		var err error
		if canon, err = canonjson.CanonicalizeObject(a, canonjson.Options{}); err != nil {
			return argsFailure(call.Name, err), false
		}
	}
	// canon is fresh and never written again (the package's decoders only
	// read it, through argBytes), so args shares its bytes, as
	// strings.Builder does.
	exec.args = unsafe.String(unsafe.SliceData(canon), len(canon))

	// Stage 2, validate-args: a typed tool (Define) checks the arguments
	// against its schema; every violation is listed in the INVALID_ARGS
	// text. Raw (MCP) tools validate their own input.
	if t := exec.tool; t != nil && t.validate != nil {
		exec.stage = stageValidateArgs
		if err := safeValidate(t.validate, exec); err != nil {
			exec.admitted = nil
			return argsFailure(call.Name, err), false
		}
	}
	exec.admitted = nil // for stage 2 only
	return Result{}, true
}

// mayBeCanonical reports whether a, a call's arguments, may be a
// canonical object by a glance at its first member: no whitespace after
// the brace or the first key's colon (pretty-printed JSON, which
// canonicalization rewrites, is left to it without a copy first), and
// within canonjson's size limit.
func mayBeCanonical(a []byte) bool {
	if len(a) < 2 || a[0] != '{' || len(a) > canonjson.DefaultMaxBytes {
		return false
	}
	if a[1] != '"' {
		return string(a) == "{}"
	}
	k := bytes.IndexByte(a, ':')
	return k > 0 && k+1 < len(a) && a[k+1] != ' ' && a[k+1] != '\n' && a[k+1] != '\t' && a[k+1] != '\r'
}

// resolveCall resolves call's tool for its agent, once per call (stage 1),
// with the hint an unknown tool's message ends with. When the call's agent
// is presented in Code ([Registry.ModeOf]: its own PresentAs, else the
// registry's mode), end capabilities are reachable only from a run_code
// program (a call whose Parent is a run_code execution in progress for
// the same agent); a direct call is an unknown tool whose message says how
// to reach it.
func (r *Registry) resolveCall(call Call) (*Tool, string) {
	r.mu.RLock()
	t := r.resolveLocked(call.Name, call.Agent)
	m := r.modeLocked(call.Agent)
	r.mu.RUnlock()
	if t != nil && t != r.transport && m == Code && !r.inCodeRun(call.Parent, call.Agent) {
		return nil, r.codeOnlyHint(call.Name)
	}
	return t, ""
}

// argsFailure is the INVALID_ARGS result for err (a canonicalization or
// validation error), named by the error's Namer or ToolArgsError; a
// canonicalization error's message names the tool.
func argsFailure(tool string, err error) Result {
	name := "ToolArgsError"
	if n, ok := safeerr.As[Namer](err); ok && n != nil {
		if s := safeName(n); s != "" {
			name = s
		}
	}
	msg := safeerr.Text(err)
	if _, ok := safeerr.As[*canonjson.Error](err); ok {
		msg = fmt.Sprintf("invalid arguments for tool %q: %s", tool, msg)
	}
	return Result{Content: []Content{Text(msg)}, IsError: true, Error: &ErrorInfo{Name: name, Code: CodeInvalidArgs}}
}

func safeValidate(f func(*Execution) error, exec *Execution) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New(panicMessage("argument validation", v))
		}
	}()
	return f(exec)
}

// waterfall dispatches one of the tools/* waterfalls. A listener's panic is
// already an error when the host returns; this also contains a panic that
// escapes the dispatcher itself, which reading a hostile error value can
// cause (the host logs and wraps a listener's error).
func waterfall[P, R any](ctx context.Context, em host.Emitter, ev *events.Waterfall[P, R], p P, base events.Next[R]) (res R, err error) {
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				var zero R
				res, err = zero, errors.New(panicMessage(ev.Descriptor().Name+" dispatch", v))
			}
		}
	}()
	res, err = host.Waterfall(ctx, em, ev, p, base)
	returned = true
	return res, err
}

// policy is stages 3–5. It reports whether the call may be dispatched;
// otherwise it returns the call's isError result, which goes on to
// post-execute.
func (r *Registry) policy(ctx context.Context, em host.Emitter, exec *Execution) (Result, bool) {
	dec, res, ok := r.gate(ctx, em, exec, allowBase)
	if !ok || dec.Kind != Ask {
		return res, ok
	}

	// Stage 5, approval: an ask that every guard let through is put to
	// the approval service, looked up per ask (non-reactively) through the
	// registry's context; a person is never asked about a call a guard
	// refuses. No service, or a call without an agent, denies, quoting the
	// ask's reason. Only allowed-once proceeds; a misbehaving approver
	// (error, panic, unknown outcome) fails closed. ctx done when the
	// answer arrives (or while waiting) is ABORTED_BEFORE_DISPATCH whatever
	// the answer: a request withdrawn cannot be granted (a rejection is
	// kept, as the more specific denial).
	exec.stage = stageApproval
	sctx, st := exec.beginStage(ctx, TraceApproval)
	if res, ok := r.approve(sctx, exec, dec.Reason); !ok {
		return st.fail(res), false
	}
	st.done(StageEnd{Outcome: string(AllowedOnce)})
	return Result{}, true
}

// gate is stages 3–4, the policy stages that decide without asking
// anyone, shared by policy and [Registry.Check]: base is the
// tools/pre-execute waterfall's base (it allows). It returns the
// pre-execute decision (Allow or Ask) when the call got through both, or
// the call's isError result and false.
func (r *Registry) gate(ctx context.Context, em host.Emitter, exec *Execution, base events.Next[PreDecision]) (PreDecision, Result, bool) {
	if ctx.Err() != nil {
		return PreDecision{}, aborted(ctx, CodeAbortedBeforeDispatch), false
	}

	// Stage 3, tools/pre-execute: the reorderable gate. The base of the
	// waterfall allows. The decision is validated exactly; a malformed one
	// fails closed. A listener failure (error or panic) is an isError with
	// the error's code, or LISTENER_ERROR (ABORTED_BEFORE_DISPATCH when it
	// failed because ctx is done).
	exec.stage = stagePreExecute
	sctx, st := exec.beginStage(ctx, TracePreExecute)
	var (
		dec PreDecision
		err error
	)
	if r.h.Listening(PreExecute.Descriptor()) == 0 {
		// What the host's dispatch would do, without the dispatch: no
		// listener, the base decides (the pipeline's bases cannot fail).
		dec, err = base(sctx)
	} else {
		dec, err = waterfall(sctx, em, PreExecute, exec, base)
	}
	if err != nil {
		return dec, st.fail(listenerFailure(ctx, "tools/pre-execute", err, CodeAbortedBeforeDispatch)), false
	}
	if err := dec.check(); err != nil {
		return dec, st.fail(failure(CodeInvalidDecision, "InvalidDecision", "tools/pre-execute returned a malformed decision: "+err.Error())), false
	}
	st.done(StageEnd{Outcome: string(dec.Kind)})
	if dec.Kind == Deny {
		return dec, failure(CodeDenied, "ToolDenied", "Tool call denied: "+dec.Reason), false
	}

	// Stage 4, guards: global guards, then the agent's own, in
	// registration order, for an allow and an ask alike (before anyone is
	// asked to approve). The first error denies, with the error's code or
	// DENIED, and nothing after can re-allow (guards run after the
	// waterfall precisely so that listener order cannot override them). A
	// panicking guard denies (GUARD_FAILED).
	exec.stage = stageGuards
	_, st = exec.beginStage(ctx, TraceGuards)
	ran := 0
	global, scoped := r.guards(exec.agent)
	for _, gs := range [2][]*guardEntry{global, scoped} {
		for _, g := range gs {
			ran++
			if res, denied := runGuard(g.fn, exec); denied {
				st.done(StageEnd{Error: res.Error.clone(), Guards: ran})
				return dec, res, false
			}
		}
	}
	st.done(StageEnd{Guards: ran})
	return dec, Result{}, true
}

// execute is stages 6–7, for a call that policy allowed. Every failure
// returns its isError result, which goes on to post-execute.
func (r *Registry) execute(ctx context.Context, em host.Emitter, exec *Execution) Result {
	if ctx.Err() != nil {
		return aborted(ctx, CodeAbortedBeforeDispatch)
	}

	// Stage 6, tools/execute: wrappers around dispatch. A wrapper changes
	// only the body's cancellation, by passing a derived ctx to next; next
	// is dispatch-with-normalization (stage 7), so it always yields a
	// Result. A failing wrapper is LISTENER_ERROR (or its code).
	// When the stage returns it is over (settle): a body still running (a
	// wrapper ran next on another goroutine and returned) is cancelled and
	// waited for, and a next called later starts no body. Only then is the
	// caller's cancellation read: a success while ctx is done becomes
	// ABORTED if a body started, ABORTED_BEFORE_DISPATCH if none did (a
	// wrapper short-circuited, or its next was refused).
	exec.stage = stageExecute
	ctx, st := exec.beginStage(ctx, TraceExecute)
	if r.h.Listening(ExecuteEvent.Descriptor()) == 0 {
		// No wrapper anywhere: dispatch is called once, here, under the
		// caller's own context, and nothing else can start a body.
		res := r.dispatchDirect(ctx, exec)
		if !res.IsError && ctx.Err() != nil {
			// As endExecute: nothing is running, nothing can start a
			// body, and a success means the body ran.
			res = abortedAfter(ctx, res.AdditionalContext)
		}
		return st.result(res)
	}
	res, err := waterfall(ctx, em, ExecuteEvent, exec, func(wctx context.Context) (Result, error) {
		return r.dispatch(ctx, wctx, exec), nil
	})
	return st.result(endExecute(ctx, exec, res, err))
}

// abortedAfter is the ABORTED result replacing a success that carried
// additional context ac.
func abortedAfter(ctx context.Context, ac []string) Result {
	a := aborted(ctx, CodeAborted)
	a.AdditionalContext = ac
	return a
}

// endExecute ends stage 6 with what the wrappers returned: the stage is
// over (settle), then a wrapper's failure or the caller's cancellation
// decides the result. A success replaced by ABORTED keeps its additional
// context, as every other failure does.
func endExecute(ctx context.Context, exec *Execution, res Result, err error) Result {
	abortCode := CodeAbortedBeforeDispatch
	if exec.bodies.settle(ErrAbandoned) {
		abortCode = CodeAborted
	}
	if err != nil {
		return listenerFailure(ctx, "tools/execute", err, abortCode)
	}
	if !res.IsError && ctx.Err() != nil {
		a := aborted(ctx, abortCode)
		a.AdditionalContext = res.AdditionalContext
		return a
	}
	return res
}

func allowBase(context.Context) (PreDecision, error) { return PreDecision{Kind: Allow}, nil }

// approve is stage 5. It returns ok only for an allowed-once answer given
// while ctx was not done.
func (r *Registry) approve(ctx context.Context, exec *Execution, reason string) (Result, bool) {
	required := "Tool call denied: approval is required"
	if reason != "" {
		required += " (" + reason + ")"
	}
	if exec.agent == "" {
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", required+", but the call has no agent to ask for"), false
	}
	ap, ok := ApprovalService.Lookup(r.c)
	if !ok || ap == nil {
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", required+", but no approval service is mounted"), false
	}
	req := ApprovalRequest{Agent: exec.agent, Tool: exec.name, CallID: exec.callID, Reason: reason, Execution: exec}
	if exec.tool != nil {
		req.Call = exec.tool.PresentCall(exec.Args())
	}
	outcome, err := SafeApprove(ctx, ap, req)
	// The decision is taken here, once: after the caller withdrew the
	// request no answer grants anything (and the body would not start
	// anyway: dispatch checks ctx again).
	if ctx.Err() != nil && (err != nil || outcome != Rejected) {
		return aborted(ctx, CodeAbortedBeforeDispatch), false
	}
	if err != nil {
		return failure(CodeApprovalFailed, "ApprovalFailed", "Tool call denied: the approval service failed: "+safeerr.Text(err)), false
	}
	switch outcome {
	case AllowedOnce:
		return Result{}, true
	case Rejected:
		return failure(CodeApprovalRejected, "ApprovalRejected", "Tool call denied: the user rejected it"), false
	case Cancelled:
		return failure(CodeApprovalCancelled, "ApprovalCancelled", "Tool call denied: the approval request was cancelled"), false
	case Unavailable:
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", required+", but approval is unavailable"), false
	}
	return failure(CodeApprovalFailed, "ApprovalFailed", fmt.Sprintf("Tool call denied: the approval service answered with an unknown outcome %q", outcome)), false
}

// SafeApprove calls ap.Approve(ctx, req) under containment, as the
// pipeline's approval stage does: a panic is returned as an error ("the
// approval service panicked: ..."). For code outside the pipeline that
// asks the approval service itself (an MCP server's elicitation, say).
func SafeApprove(ctx context.Context, ap Approver, req ApprovalRequest) (o ApprovalOutcome, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New(panicMessage("the approval service", v))
		}
	}()
	return ap.Approve(ctx, req)
}

func runGuard(g Guard, exec *Execution) (res Result, denied bool) {
	defer func() {
		if v := recover(); v != nil {
			res, denied = failure(CodeGuardFailed, "GuardFailed", "Tool call denied: "+panicMessage("a guard", v)), true
		}
	}()
	if err := g(exec); err != nil {
		return errorResult("Tool call denied", err, CodeDenied, "GuardDenied"), true
	}
	return Result{}, false
}

// Stage 7, dispatch: the base of tools/execute: it runs the tool body
// and normalizes every outcome into a Result. The caller's cancellation is
// checked here, whatever context the wrapper passed (wctx; nil when no
// wrapper is registered): done, the body never starts
// (ABORTED_BEFORE_DISPATCH). The body runs under wctx, additionally
// cancelled with the caller's ctx, so a wrapper that replaced the context
// cannot detach the body from the caller, and cancellable by the end of
// the stage (see bodies), and bounded by the tool's declared Timeout: when
// that deadline fires first and the run ends aborted, the result is
// TOOL_TIMEOUT (cause a *[TimeoutError]). The body is registered with the
// execution before it starts (bodies.begin), so the end of the
// tools/execute stage either waits for it or refuses it.
func (r *Registry) dispatch(ctx, wctx context.Context, exec *Execution) Result {
	t := exec.tool
	if t == nil {
		return unknownTool(exec)
	}
	// Read directly: the merge below delivers ctx's cancellation to the
	// body's context asynchronously.
	if ctx.Err() != nil {
		return aborted(ctx, CodeAbortedBeforeDispatch)
	}
	body := ctx
	var cancel bodyCanceler
	if wctx != nil {
		// Behind wrappers, which may run next elsewhere and return: the
		// body gets a context of its own (made only if the body needs
		// it: see bodyCtx), cancelled when it returns.
		bc := newBodyCtx(exec, wctx)
		body, cancel = bc, bc
		defer bc.cancelBody(nil)
		if done := ctx.Done(); done != nil && done != wctx.Done() {
			stop := context.AfterFunc(ctx, func() { bc.cancelBody(context.Cause(ctx)) })
			defer stop()
		}
		if body.Err() != nil {
			return aborted(body, CodeAbortedBeforeDispatch)
		}
	}
	slot, ok := exec.bodies.begin(cancel)
	if !ok {
		return failure(CodeAbortedBeforeDispatch, "AbortedBeforeDispatch",
			fmt.Sprintf("Tool call %q was not dispatched: its tools/execute stage is over (a wrapper called next after returning)", exec.callID))
	}
	returned := false
	defer func() {
		// Unwinding here is runtime.Goexit: runBody contains panics.
		exec.bodies.end(slot, !returned)
	}()
	// The tool's declared Timeout is enforced here, whether or not a
	// timeout policy is mounted (a policy's budget for the same tool,
	// derived earlier, fires first and is reported by the policy).
	body, budget, stop := withBudget(body, t)
	defer stop()
	sctx, st := exec.beginStage(body, TraceDispatch)
	res := budget.expired(body, r.runBody(sctx, t, exec))
	returned = true
	return st.result(res)
}

// dispatchDirect is dispatch with no tools/execute wrapper registered,
// called once by the stage itself on the goroutine running it: the body
// runs under ctx, the caller's own context, and returns before the stage
// does, so no other goroutine ever touches exec.bodies for it and none of
// the wrapped case's bookkeeping is needed. While the body runs,
// bodies.direct is set (a plain write: only this goroutine reads it), so
// that a runtime.Goexit in the body, which skips the rest, is the tool's
// (goexitResult).
func (r *Registry) dispatchDirect(ctx context.Context, exec *Execution) Result {
	t := exec.tool
	if t == nil {
		return unknownTool(exec)
	}
	if ctx.Err() != nil {
		return aborted(ctx, CodeAbortedBeforeDispatch)
	}
	if t.timeout > 0 {
		return r.dispatchBudgeted(ctx, exec, t)
	}
	exec.bodies.direct = true // from here on, as dispatch's bodies.begin
	sctx, st := exec.beginStage(ctx, TraceDispatch)
	res := r.runBody(sctx, t, exec)
	exec.bodies.direct = false
	return st.result(res)
}

// dispatchBudgeted is dispatchDirect for a tool that declares a Timeout.
func (r *Registry) dispatchBudgeted(ctx context.Context, exec *Execution, t *Tool) Result {
	exec.bodies.direct = true
	body, budget, stop := withBudget(ctx, t)
	defer stop()
	sctx, st := exec.beginStage(body, TraceDispatch)
	res := budget.expired(body, r.runBody(sctx, t, exec))
	exec.bodies.direct = false
	return st.result(res)
}

// unknownTool is the UNKNOWN_TOOL result of exec's call.
func unknownTool(exec *Execution) Result {
	return failure(CodeUnknownTool, "UnknownTool", fmt.Sprintf("Unknown tool %q", exec.name)+exec.hint)
}

// runBody calls the body and turns what it returned into a Result; the
// error it returned is read under containment (errorText, errorInfo). The
// body's additional context is kept on a failure too (a failed run_code
// still defers its sub-calls' context); a panic keeps nothing.
func (r *Registry) runBody(body context.Context, t *Tool, exec *Execution) Result {
	out, err, panicked := r.callBody(body, t, exec)
	var res Result
	switch {
	case panicked:
		return errorResult("", err, CodeToolError, "ToolPanic")
	case err != nil && body.Err() != nil && isContextErr(body, err):
		res = aborted(body, CodeAborted)
	case err != nil:
		res = errorResult("", err, CodeToolError, "ToolError")
	case body.Err() != nil:
		res = aborted(body, CodeAborted)
	default:
		return checkOutputOf(exec, t, Result{Content: out.Content, Value: out.Value, Meta: out.Meta, AdditionalContext: out.AdditionalContext, ConcludeTurn: out.ConcludeTurn}, out.checked)
	}
	res.AdditionalContext = out.AdditionalContext
	return res
}

func (r *Registry) callBody(ctx context.Context, t *Tool, exec *Execution) (out Output, err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			if r.c != nil { // nil: run by NewExecution's offline stages
				r.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Bytes("stack", debug.Stack()).Str("tool", t.name).Msg("tool body panicked")
			}
			out, err, panicked = Output{}, errors.New(panicMessage(fmt.Sprintf("tool %q", t.name), v)), true
		}
	}()
	out, err = t.exec(ctx, exec)
	return out, err, false
}

// isContextErr reports whether a body's error is its cancellation: a
// context error, or the context's cause (a policy's own cause, such as the
// timeout policy's, wrapped by the tool). It reads err under containment.
func isContextErr(ctx context.Context, err error) bool {
	return safeerr.Is(err, context.Canceled, context.DeadlineExceeded, context.Cause(ctx))
}

func aborted(ctx context.Context, code ErrorCode) Result {
	why := "context canceled"
	if cause := context.Cause(ctx); cause != nil {
		why = safeerr.Text(cause)
	}
	if code == CodeAbortedBeforeDispatch {
		return failure(code, "AbortedBeforeDispatch", "Tool call aborted before it started: "+why)
	}
	return failure(code, "Aborted", "Tool call aborted: "+why)
}

// listenerFailure turns a propagated listener failure into a result: the
// error's own code when it has one; abortCode when it failed because ctx
// is done; else LISTENER_ERROR.
func listenerFailure(ctx context.Context, event string, err error, abortCode ErrorCode) Result {
	if ctx.Err() != nil && errorInfo(err, "", "").Code == "" && isContextErr(ctx, err) {
		return aborted(ctx, abortCode)
	}
	return errorResult(event+" failed", err, CodeListenerError, "ListenerError")
}

// Stage 8, tools/post-execute (post). Every result after stage 2 passes
// it, denials and failures included. Accept keeps the result (replacing
// its content when the decision carries content); block turns it into a
// BLOCKED isError whose content is the feedback (and drops meta). Either
// appends its additional context after the tool's and the wrappers'. A
// listener failure or malformed decision replaces the result with an
// isError (LISTENER_ERROR or its code, INVALID_DECISION), keeping the
// additional context gathered so far.
func (r *Registry) post(ctx context.Context, em host.Emitter, exec *Execution, res Result) Result {
	exec.stage = stagePostExecute
	sctx, st := exec.beginStage(ctx, TracePostExecute)
	if r.h.Listening(PostExecute.Descriptor()) == 0 {
		// What the waterfall's base decides (accept, nothing replaced),
		// without the dispatch.
		st.done(StageEnd{Outcome: string(Accept)})
		return res
	}
	exec.post = res
	dec, err := waterfall(sctx, em, PostExecute, PostInput{exec: exec, result: &exec.post}, acceptBase)
	if err != nil {
		f := errorResult("tools/post-execute failed", err, CodeListenerError, "ListenerError")
		f.AdditionalContext = res.AdditionalContext
		return st.fail(f)
	}
	if err := dec.check(); err != nil {
		f := failure(CodeInvalidDecision, "InvalidDecision", "tools/post-execute returned a malformed decision: "+err.Error())
		f.AdditionalContext = res.AdditionalContext
		return st.fail(f)
	}
	if dec.Kind == Block {
		st.done(StageEnd{Outcome: string(Block), Error: &ErrorInfo{Name: "ToolBlocked", Code: CodeBlocked}})
	} else {
		st.done(StageEnd{Outcome: string(dec.Kind)})
	}
	switch dec.Kind {
	case Accept:
		if dec.Value != nil {
			if res.IsError {
				f := failure(CodeInvalidDecision, "InvalidDecision", "tools/post-execute returned a malformed decision: a value replacement on a failed result")
				f.AdditionalContext = res.AdditionalContext
				return f
			}
			// A new value is validated again and, without new content,
			// rendered again.
			res.Value, res.Content = dec.Value, dec.Content
			res = checkOutput(exec, exec.tool, res)
		} else if dec.Content != nil {
			res.Content = dec.Content
		}
	case Block:
		res = Result{Content: []Content{Text(dec.Feedback)}, IsError: true, Error: &ErrorInfo{Name: "ToolBlocked", Code: CodeBlocked}, AdditionalContext: res.AdditionalContext}
	}
	if dec.AdditionalContext != "" {
		res.AdditionalContext = append(res.AdditionalContext[:len(res.AdditionalContext):len(res.AdditionalContext)], dec.AdditionalContext)
	}
	return res
}

func acceptBase(context.Context) (PostDecision, error) { return PostDecision{Kind: Accept}, nil }

// Stage 9, finalize: a success's value is checked against the tool's
// declared output (checkOutput: a value a wrapper made is validated here;
// one validated at dispatch or post is not checked twice), the tool's
// FinalizeContent has its one say on the content, then the result gets
// the call's id, is validated as lossless JSON (content blocks, additional context, meta; error info only
// on failures), has its meta canonicalized, and is detached from every
// slice a tool or listener might still hold. An invalid result is replaced
// by an INVALID_RESULT isError. Every isError result leaves with error
// info: one that a wrapper made without any gets TOOL_ERROR, and without
// ConcludeTurn (only a success may end the turn).
func (r *Registry) finalize(exec *Execution, res Result) Result {
	r.finalizeIn(exec, &res)
	return res
}

// finalizeIn is finalize in place, without copying the result in and out.
func (r *Registry) finalizeIn(exec *Execution, res *Result) {
	if res.IsError {
		if res.Error == nil {
			res.Error = &ErrorInfo{Name: "ToolError", Code: CodeToolError}
		}
		res.ConcludeTurn = false
	}
	*res = checkOutput(exec, exec.tool, *res)
	if t := exec.tool; t != nil && t.finalizeC != nil {
		// Only then: finalizeContent keeps a pointer to its result (for a
		// Goexit), which costs an allocation.
		*res = r.finalizeContent(exec, *res)
	}
	if meta, err := validateResult(res); err != nil {
		*res = failure(CodeInvalidResult, "InvalidResult", fmt.Sprintf("tool %q produced an invalid result: %v", exec.name, err))
	} else {
		res.Meta = meta
	}
	res.CallID = exec.callID
	r.detach(exec, res)
	if res.Content == nil {
		res.Content = []Content{}
	}
}

// validateResult checks res and returns its meta in canonical form (nil
// when absent).
func validateResult(res *Result) (json.RawMessage, error) {
	for i, c := range res.Content {
		if err := c.check(); err != nil {
			return nil, fmt.Errorf("content[%d]: %w", i, err)
		}
	}
	for i, s := range res.AdditionalContext {
		if !utf8.ValidString(s) {
			return nil, fmt.Errorf("additionalContext[%d] is not valid UTF-8", i)
		}
	}
	if !res.IsError && res.Error != nil {
		return nil, fmt.Errorf("error info %+v on a successful result", *res.Error)
	}
	if res.Error != nil && (res.Error.Code == "" || !utf8.ValidString(string(res.Error.Code)) || !utf8.ValidString(res.Error.Name)) {
		return nil, fmt.Errorf("malformed error info %+v", *res.Error)
	}
	if len(res.Meta) == 0 {
		return nil, nil
	}
	meta, err := canonjson.Canonicalize(res.Meta, canonjson.Options{})
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return meta, nil
}

// observe is stage 10 with res, the call's final result: it ends the
// trace, then emits tools/result. From here on a runtime.Goexit no longer
// fails the call (see resumeResult): in a tracer's End it still emits res,
// in an observer it ends that one delivery.
func (r *Registry) observe(ctx context.Context, exec *Execution, res Result) {
	r.observeRef(ctx, exec, &res)
}

// observeRef is observe with the final result in *res, which it does not
// change.
func (r *Registry) observeRef(ctx context.Context, exec *Execution, res *Result) {
	exec.stage = stageResult
	exec.endTrace(ctx, res)
	r.emitResult(ctx, exec, res)
}

// emitResult emits tools/result. The host contains observer failures; a
// panic escaping the dispatcher itself (logging a hostile error value) is
// contained here.
func (r *Registry) emitResult(ctx context.Context, exec *Execution, res *Result) {
	exec.emitting = true
	if r.h.Listening(ResultEvent.Descriptor()) == 0 {
		return
	}
	returned := false
	defer func() {
		if !returned {
			if v := recover(); v != nil {
				r.c.Logger().Error().Str("panic", safeerr.Sprint(v)).Str("tool", exec.name).Msg("tools/result dispatch panicked")
			}
		}
	}()
	_ = host.Emit(withoutCancel(ctx), r.h.Emitter(exec.agent), ResultEvent, ResultNotice{exec: exec, result: noticeCopy(exec, *res)})
	returned = true
}

// detach makes *res a clone of itself (Result.Clone): the call's result,
// detached from every slice a tool or listener might still hold. When tools/result has
// observers, who get a copy of their own (noticeCopy), the content is
// copied for them too, in the same allocation: the caller's copy is the
// first half of exec.twin, the observers' the second, each with its
// capacity cut at its end, so that neither can reach the other's.
func (r *Registry) detach(exec *Execution, res *Result) {
	n := len(res.Content)
	if n == 0 || uint64(n) > math.MaxUint32 || r.h == nil || r.h.Listening(ResultEvent.Descriptor()) == 0 {
		res.cloneIn()
		return
	}
	twin := make([]Content, 2*n)
	copy(twin, res.Content)
	copy(twin[n:], res.Content)
	exec.twin, exec.twinLen = &twin[0], uint32(n)
	res.Content = nil
	res.cloneIn()
	res.Content = twin[:n:n]
}

// noticeCopy returns the copy of res that the tools/result observers get:
// res.Clone(), with the content copy that detach made alongside res's own
// when res is that result (its content is the first half of exec.twin),
// which it hands out once.
func noticeCopy(exec *Execution, res Result) Result {
	n, twin := len(res.Content), exec.twin
	same := n > 0 && twin == &res.Content[0] && uint64(n) == uint64(exec.twinLen)
	exec.twin, exec.twinLen = nil, 0
	if !same {
		return res.Clone()
	}
	res.Content = nil
	res = res.Clone()
	res.Content = unsafe.Slice(twin, 2*n)[n:]
	return res
}

// withoutCancel is context.WithoutCancel, except that the background
// context, which has nothing to strip, is returned as it is: no wrapper to
// allocate, and the host's dispatch memo recognizes it.
func withoutCancel(ctx context.Context) context.Context {
	if ctx == context.Background() {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// goexit completes a call whose goroutine is exiting through
// runtime.Goexit (see Execute): bodies still running are waited for, and
// the call's one result is emitted, unless the Goexit happened while it was
// being emitted. final is the result observe was given, once it was.
func (r *Registry) goexit(ctx context.Context, exec *Execution, final *Result) {
	exec.bodies.settle(ErrAbandoned)
	if r.resumeResult(ctx, exec, final) {
		return
	}
	if f := exec.out.finalizing; f != nil {
		// The Goexit came from the tool's FinalizeContent: the result it
		// was finalizing stands, its content withheld.
		res := *f
		res.Content = withheldContent(exec.name)
		r.c.Logger().Error().Str("tool", exec.name).Str("call", exec.callID).Msg("FinalizeContent called runtime.Goexit; the call's goroutine is exiting")
		r.observe(ctx, exec, r.finalize(exec, res))
		return
	}
	r.observe(ctx, exec, r.goexitResult(exec))
}

// resumeResult completes, on runtime.Goexit, a call whose stage 10 had
// begun (observe), and reports whether it had: the Goexit came from a
// tracer's End, before tools/result was emitted, which it emits now with
// the call's final result (End is not called again); or from a
// tools/result observer, which ends that one delivery.
func (r *Registry) resumeResult(ctx context.Context, exec *Execution, final *Result) bool {
	if exec.stage != stageResult {
		return false
	}
	if !exec.emitting {
		r.emitResult(ctx, exec, final)
	}
	return true
}

// goexitResult is the final result of a call whose goroutine is exiting
// through runtime.Goexit in stage exec.stage (before tools/result); the
// caller has settled its bodies.
func (r *Registry) goexitResult(exec *Execution) Result {
	if exec.token.IsZero() {
		exec.token = newToken()
	}
	where, code := "the tool pipeline", CodeInternal
	switch exec.stage {
	case stageValidateArgs:
		where, code = "argument validation", CodeInvalidArgs
	case stagePreExecute:
		where, code = "a tools/pre-execute listener", CodeListenerError
	case stageApproval:
		where, code = "the approval service", CodeApprovalFailed
	case stageGuards:
		where, code = "a guard", CodeGuardFailed
	case stageExecute:
		where, code = "a tools/execute wrapper", CodeListenerError
		if exec.bodies.goexited() {
			where, code = fmt.Sprintf("tool %q", exec.name), CodeToolError
		}
	case stagePostExecute:
		where, code = "a tools/post-execute listener", CodeListenerError
	}
	r.c.Logger().Error().Str("tool", exec.name).Str("call", exec.callID).Msg(where + " called runtime.Goexit; the call's goroutine is exiting")
	return r.finalize(exec, failure(code, "Goexit", fmt.Sprintf("Tool call ended: %s called runtime.Goexit, which ends the goroutine running the call", where)))
}
