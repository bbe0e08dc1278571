package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"unicode/utf8"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools/schema"
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
	{Name: "snapshot", Doc: "Assign the token, resolve the tool for the agent, canonicalize the arguments (not lossless → INVALID_ARGS, to finalize).",
		OnFailure: "INVALID_ARGS", FailTo: "finalize"},
	{Name: "validate-args", Doc: "A typed tool checks the arguments against its schema (violations → INVALID_ARGS, to finalize).",
		OnFailure: "INVALID_ARGS", FailTo: "finalize"},
	{Name: "pre-execute", Event: PreExecute.Descriptor().Name, Doc: "Allow, deny (DENIED) or ask; a failing listener → LISTENER_ERROR, a malformed decision → INVALID_DECISION; cancelled before → ABORTED_BEFORE_DISPATCH.",
		OnFailure: "deny / error", FailTo: "post-execute"},
	{Name: "approval", Doc: "An ask goes to the approval service: allowed-once proceeds; rejected, cancelled, unavailable, no service or no agent deny (APPROVAL_*).",
		OnFailure: "not granted", FailTo: "post-execute"},
	{Name: "guards", Doc: "Global guards, then the agent's: a reason denies (DENIED), monotonically; a panic → GUARD_FAILED.",
		OnFailure: "DENIED", FailTo: "post-execute"},
	{Name: "execute", Event: ExecuteEvent.Descriptor().Name, Doc: "Wrappers around dispatch may derive the cancellation context, retry or short-circuit; a failing wrapper → LISTENER_ERROR.",
		OnFailure: "short-circuit / error", FailTo: "post-execute"},
	{Name: "dispatch", Doc: "Run the tool body: unknown (or, under tools mode code, called directly) → UNKNOWN_TOOL; cancelled before → ABORTED_BEFORE_DISPATCH; error or panic → its code or TOOL_ERROR; cancelled during → ABORTED."},
	{Name: "post-execute", Event: PostExecute.Descriptor().Name, Doc: "Accept (optionally replacing content) or block with feedback (BLOCKED); attach additional context."},
	{Name: "finalize", Doc: "Validate the result as lossless JSON (else INVALID_RESULT) and freeze it."},
	{Name: "result", Event: ResultEvent.Descriptor().Name, Doc: "Observers see the frozen result, exactly once per call; their failures are contained."},
}

// resultEventName is read on every Execute.
var resultEventName = ResultEvent.Descriptor().Name

// Execute runs one call through the pipeline and returns its result. It
// always returns exactly one result and emits exactly one tools/result,
// whatever a tool, listener, guard or approver does (return an error,
// panic, return a malformed decision, block until cancelled): failures
// become isError results with a stable error.code.
//
// ctx is the call's cancellation (the spec's signal). Done before the tool
// body starts (including while waiting for approval), the call fails with
// ABORTED_BEFORE_DISPATCH; done while the body runs, with ABORTED once the
// body has returned (a body that ignores ctx is waited for). A more
// specific failure that happened first (a denial, a tool error, a wrapper
// error) is kept. Post-execute listeners and result observers still run
// after cancellation.
//
// Execute runs everything on the calling goroutine, holds no lock while
// user code runs, and is safe for concurrent use; listeners and tool
// bodies may call Execute recursively (Code Mode).
func (r *Registry) Execute(ctx context.Context, call Call) Result {
	exec, res := r.run(ctx, call)
	// Stage 10, tools/result: observe-only, exactly once per call.
	// res is already detached (finalize). Observers get their own copy so
	// that what the caller does with its result can never reach them.
	if r.h.ListenerCount(resultEventName) > 0 {
		_ = host.Emit(context.WithoutCancel(ctx), r.h.Emitter(exec.agent), ResultEvent, ResultNotice{exec: exec, result: res.Clone()})
	}
	return res
}

// run is stages 1–9; it contains any panic of the pipeline itself.
func (r *Registry) run(ctx context.Context, call Call) (exec *Execution, res Result) {
	defer func() {
		if v := recover(); v != nil {
			r.c.Logger().Error().Interface("panic", v).Bytes("stack", debug.Stack()).Str("tool", call.Name).Msg("tool pipeline panicked")
			if exec == nil {
				exec = &Execution{token: newToken(), callID: call.ID, name: call.Name, agent: call.Agent, parent: call.Parent}
			}
			res = failure(CodeInternal, "InternalError", panicMessage("the tool pipeline", v))
			res.CallID = call.ID
		}
	}()

	// Stage 1, snapshot: the execution gets a fresh token (the caller may
	// only name a parent), the tool is resolved once for the agent (policy
	// sees, and dispatch runs, that same frozen *Tool), and the arguments
	// are canonicalized once. Input that is not lossless JSON (see
	// schema.Canonicalize for exactly which: invalid UTF-8, lone
	// surrogates, duplicate keys, integers beyond 2^53-1, overflow, too
	// deep or too large) or not an object is rejected here, before any
	// policy runs, so policy and tool always see the same value.
	exec = &Execution{token: newToken(), callID: call.ID, name: call.Name, agent: call.Agent, parent: call.Parent}
	exec.tool, _ = r.Get(call.Name, call.Agent)
	// Under Code, end capabilities are reachable only from a run_code
	// program (a call whose Parent is a run_code execution in progress); a
	// direct call is an unknown tool whose message says how to reach it.
	if t := exec.tool; t != nil && t != r.transport && r.mode.mode() == Code && !r.inCodeRun(call.Parent, call.Agent) {
		exec.tool, exec.hint = nil, codeOnlyHint(call.Name)
	}
	canon, err := schema.CanonicalizeObject(call.Arguments, schema.CanonOptions{})
	if err != nil {
		return exec, r.finalize(exec, argsFailure(call.Name, err))
	}
	exec.args = string(canon)

	// Stage 2, validate-args: a typed tool (Define) checks the arguments
	// against its schema; every violation is listed in the INVALID_ARGS
	// text. Raw (MCP) tools validate their own input.
	if t := exec.tool; t != nil && t.validate != nil {
		if err := safeValidate(t.validate, canon); err != nil {
			return exec, r.finalize(exec, argsFailure(call.Name, err))
		}
	}

	em := r.h.Emitter(exec.agent)
	res = r.decide(ctx, em, exec)
	res = r.post(ctx, em, exec, res)
	return exec, r.finalize(exec, res)
}

func argsFailure(tool string, err error) Result {
	name := "ToolArgsError"
	var n Namer
	if errors.As(err, &n) && n.Name() != "" {
		name = n.Name()
	}
	var ce *schema.CanonError
	msg := err.Error()
	if errors.As(err, &ce) {
		msg = fmt.Sprintf("invalid arguments for tool %q: %v", tool, err)
	}
	return Result{Content: []Content{Text(msg)}, IsError: true, Error: &ErrorInfo{Name: name, Code: CodeInvalidArgs}}
}

func safeValidate(f func([]byte) error, args []byte) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = errors.New(panicMessage("argument validation", v))
		}
	}()
	return f(args)
}

// decide is stages 3–7: policy, then dispatch. Every failure returns its
// isError result, which then goes on to post-execute.
func (r *Registry) decide(ctx context.Context, em host.Emitter, exec *Execution) Result {
	if ctx.Err() != nil {
		return aborted(ctx, CodeAbortedBeforeDispatch)
	}

	// Stage 3, tools/pre-execute: the reorderable gate. The base of the
	// waterfall allows. The decision is validated exactly; a malformed one
	// fails closed. A listener failure (error or panic) is an isError with
	// the error's code, or LISTENER_ERROR (ABORTED_BEFORE_DISPATCH when it
	// failed because ctx is done).
	dec, err := host.Waterfall(ctx, em, PreExecute, exec, allowBase)
	if err != nil {
		return listenerFailure(ctx, "tools/pre-execute", err, CodeAbortedBeforeDispatch)
	}
	if err := dec.Validate(); err != nil {
		return failure(CodeInvalidDecision, "InvalidDecision", "tools/pre-execute returned a malformed decision: "+err.Error())
	}
	switch dec.Kind {
	case Deny:
		return failure(CodeDenied, "ToolDenied", "Tool call denied: "+dec.Reason)

	// Stage 4, approval: an ask is put to the approval service, looked up
	// per ask (non-reactively) through the registry's context. No service,
	// or a call without an agent, denies. Only allowed-once proceeds; a
	// misbehaving approver (error, panic, unknown outcome) fails closed;
	// ctx done while waiting is ABORTED_BEFORE_DISPATCH.
	case Ask:
		if res, ok := r.approve(ctx, exec, dec.Reason); !ok {
			return res
		}
	}

	// Stage 5, guards: global guards, then the agent's own, in
	// registration order. The first reason denies, and nothing after can
	// re-allow (guards run after the waterfall precisely so that listener
	// order cannot override them). A panicking guard denies.
	global, scoped := r.guards(exec.agent)
	for _, gs := range [2][]*guardEntry{global, scoped} {
		for _, g := range gs {
			if res, denied := runGuard(g.fn, exec); denied {
				return res
			}
		}
	}

	if ctx.Err() != nil {
		return aborted(ctx, CodeAbortedBeforeDispatch)
	}

	// Stage 6, tools/execute: wrappers around dispatch. A wrapper changes
	// only the body's cancellation, by passing a derived ctx to next; next
	// is dispatch-with-normalization (stage 7), so it always yields a
	// Result. A failing wrapper is LISTENER_ERROR (or its code). A success
	// while the caller's ctx is done becomes ABORTED.
	// The base refuses to run once the stage is over: a wrapper that kept
	// next and calls it later would otherwise run the body outside the
	// pipeline (no post-execute, no tools/result, policy since changed).
	res, err := host.Waterfall(ctx, em, ExecuteEvent, exec, func(wctx context.Context) (Result, error) {
		if exec.settled.Load() {
			return failure(CodeAbortedBeforeDispatch, "AbortedBeforeDispatch",
				fmt.Sprintf("Tool call %q was not dispatched: its tools/execute stage is over (a wrapper called next after returning)", exec.callID)), nil
		}
		return r.dispatch(ctx, wctx, exec), nil
	})
	exec.settled.Store(true)
	if err != nil {
		return listenerFailure(ctx, "tools/execute", err, CodeAborted)
	}
	if !res.IsError && ctx.Err() != nil {
		return aborted(ctx, CodeAborted)
	}
	return res
}

func allowBase(context.Context) (PreDecision, error) { return PreDecision{Kind: Allow}, nil }

func (r *Registry) approve(ctx context.Context, exec *Execution, reason string) (Result, bool) {
	if exec.agent == "" {
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", "Tool call denied: approval is required but the call has no agent to ask for"), false
	}
	ap, ok := host.Lookup[Approver](r.c, ApprovalService)
	if !ok || ap == nil {
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", "Tool call denied: approval is required but no approval service is mounted"), false
	}
	req := ApprovalRequest{Agent: exec.agent, Tool: exec.name, CallID: exec.callID, Reason: reason, Execution: exec}
	if exec.tool != nil {
		req.Call = exec.tool.PresentCall(exec.Args())
	}
	outcome, err := safeApprove(ctx, ap, req)
	if ctx.Err() != nil && (err != nil || outcome != AllowedOnce && outcome != Rejected) {
		return aborted(ctx, CodeAbortedBeforeDispatch), false
	}
	if err != nil {
		return failure(CodeApprovalFailed, "ApprovalFailed", "Tool call denied: the approval service failed: "+err.Error()), false
	}
	switch outcome {
	case AllowedOnce:
		return Result{}, true
	case Rejected:
		return failure(CodeApprovalRejected, "ApprovalRejected", "Tool call denied: the user rejected it"), false
	case Cancelled:
		return failure(CodeApprovalCancelled, "ApprovalCancelled", "Tool call denied: the approval request was cancelled"), false
	case Unavailable:
		return failure(CodeApprovalUnavailable, "ApprovalUnavailable", "Tool call denied: approval is unavailable"), false
	}
	return failure(CodeApprovalFailed, "ApprovalFailed", fmt.Sprintf("Tool call denied: the approval service answered with an unknown outcome %q", outcome)), false
}

func safeApprove(ctx context.Context, ap Approver, req ApprovalRequest) (o ApprovalOutcome, err error) {
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
	if reason := g(exec); reason != "" {
		return failure(CodeDenied, "GuardDenied", "Tool call denied: "+reason), true
	}
	return Result{}, false
}

// Stage 7, dispatch: the base of tools/execute: it runs the tool body
// and normalizes every outcome into a Result. The body runs under the
// wrapper's context, additionally cancelled with the caller's, so a wrapper
// that replaced the context cannot detach the body from the caller.
func (r *Registry) dispatch(ctx, wctx context.Context, exec *Execution) Result {
	t := exec.tool
	if t == nil {
		return failure(CodeUnknownTool, "UnknownTool", fmt.Sprintf("Unknown tool %q", exec.name)+exec.hint)
	}
	body := wctx
	if done := ctx.Done(); done != nil && done != wctx.Done() {
		merged, cancel := context.WithCancelCause(wctx)
		stop := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
		defer cancel(nil)
		defer stop()
		body = merged
	}
	if body.Err() != nil {
		return aborted(body, CodeAbortedBeforeDispatch)
	}
	out, err, panicked := r.callBody(body, t, exec)
	switch {
	case panicked:
		return errorResult("", err, CodeToolError, "ToolPanic")
	case err != nil && body.Err() != nil && isContextErr(body, err):
		return aborted(body, CodeAborted)
	case err != nil:
		return errorResult("", err, CodeToolError, "ToolError")
	case body.Err() != nil:
		return aborted(body, CodeAborted)
	}
	return Result{Content: out.Content, Meta: out.Meta, AdditionalContext: out.AdditionalContext}
}

func (r *Registry) callBody(ctx context.Context, t *Tool, exec *Execution) (out Output, err error, panicked bool) {
	defer func() {
		if v := recover(); v != nil {
			r.c.Logger().Error().Interface("panic", v).Bytes("stack", debug.Stack()).Str("tool", t.name).Msg("tool body panicked")
			out, err, panicked = Output{}, errors.New(panicMessage(fmt.Sprintf("tool %q", t.name), v)), true
		}
	}()
	out, err = t.exec(ctx, exec)
	return out, err, false
}

// isContextErr reports whether a body's error is its cancellation: a
// context error, or the context's cause (a policy's own cause, such as the
// timeout policy's, wrapped by the tool).
func isContextErr(ctx context.Context, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	cause := context.Cause(ctx)
	return cause != nil && errors.Is(err, cause)
}

func aborted(ctx context.Context, code string) Result {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = context.Canceled
	}
	if code == CodeAbortedBeforeDispatch {
		return failure(code, "AbortedBeforeDispatch", "Tool call aborted before it started: "+cause.Error())
	}
	return failure(code, "Aborted", "Tool call aborted: "+cause.Error())
}

// listenerFailure turns a propagated listener failure into a result: the
// error's own code when it has one; abortCode when it failed because ctx
// is done; else LISTENER_ERROR.
func listenerFailure(ctx context.Context, event string, err error, abortCode string) Result {
	var c Coder
	if !errors.As(err, &c) && ctx.Err() != nil && isContextErr(ctx, err) {
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
	dec, err := host.Waterfall(ctx, em, PostExecute, PostInput{exec: exec, result: res}, acceptBase)
	if err != nil {
		f := errorResult("tools/post-execute failed", err, CodeListenerError, "ListenerError")
		f.AdditionalContext = res.AdditionalContext
		return f
	}
	if err := dec.Validate(); err != nil {
		f := failure(CodeInvalidDecision, "InvalidDecision", "tools/post-execute returned a malformed decision: "+err.Error())
		f.AdditionalContext = res.AdditionalContext
		return f
	}
	switch dec.Kind {
	case Accept:
		if dec.Content != nil {
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

// Stage 9, finalize: the result gets the call's id, is validated as
// lossless JSON (content blocks, additional context, meta; error info only
// on failures), has its meta canonicalized, and is detached from every
// slice a tool or listener might still hold. An invalid result is replaced
// by an INVALID_RESULT isError. Every isError result leaves with error
// info: one that a wrapper made without any gets TOOL_ERROR.
func (r *Registry) finalize(exec *Execution, res Result) Result {
	if res.IsError && res.Error == nil {
		res.Error = &ErrorInfo{Name: "ToolError", Code: CodeToolError}
	}
	if meta, err := validateResult(res); err != nil {
		res = failure(CodeInvalidResult, "InvalidResult", fmt.Sprintf("tool %q produced an invalid result: %v", exec.name, err))
	} else {
		res.Meta = meta
	}
	res.CallID = exec.callID
	res = res.Clone()
	if res.Content == nil {
		res.Content = []Content{}
	}
	return res
}

// validateResult checks res and returns its meta in canonical form (nil
// when absent).
func validateResult(res Result) (json.RawMessage, error) {
	for i, c := range res.Content {
		if err := c.Validate(); err != nil {
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
	if res.Error != nil && (res.Error.Code == "" || !utf8.ValidString(res.Error.Code) || !utf8.ValidString(res.Error.Name)) {
		return nil, fmt.Errorf("malformed error info %+v", *res.Error)
	}
	if len(res.Meta) == 0 {
		return nil, nil
	}
	meta, err := schema.Canonicalize(res.Meta, schema.CanonOptions{})
	if err != nil {
		return nil, fmt.Errorf("meta: %w", err)
	}
	return meta, nil
}
