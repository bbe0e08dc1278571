package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// PreKind is the kind of a [PreDecision].
type PreKind string

// The pre-execute decision kinds.
const (
	Allow PreKind = "allow"
	Deny  PreKind = "deny"
	Ask   PreKind = "ask"
)

// PreDecision is the result of the tools/pre-execute waterfall:
// Allow, Deny with a Reason, or Ask with an optional
// Reason shown to the approver. The pipeline validates it exactly: the zero
// value, an unknown kind, Deny without a reason, or Allow with a reason (a
// field that does not belong to the kind) fail closed as INVALID_DECISION.
// Changing the arguments is deliberately not offered.
type PreDecision struct {
	Kind   PreKind
	Reason string
}

// Allowed returns the allow decision (what the waterfall's base returns).
func Allowed() PreDecision { return PreDecision{Kind: Allow} }

// Denied returns a deny decision.
func Denied(reason string) PreDecision { return PreDecision{Kind: Deny, Reason: reason} }

// Asked returns an ask decision.
func Asked(reason string) PreDecision { return PreDecision{Kind: Ask, Reason: reason} }

// Validate reports why d is malformed, or nil.
func (d PreDecision) Validate() error {
	if err := d.check(); err != nil {
		return fmt.Errorf("tools: malformed pre-execute decision: %w", err)
	}
	return nil
}

// check is Validate without the package prefix, for the pipeline's
// INVALID_DECISION text.
func (d PreDecision) check() error {
	switch d.Kind {
	case Allow:
		if d.Reason != "" {
			return fmt.Errorf("allow decision with a reason %q (reasons belong to deny and ask)", d.Reason)
		}
	case Deny:
		if d.Reason == "" {
			return fmt.Errorf("deny decision without a reason")
		}
	case Ask:
	case "":
		return fmt.Errorf("zero pre-execute decision (no kind)")
	default:
		return fmt.Errorf("unknown pre-execute decision kind %q", d.Kind)
	}
	return nil
}

// PostKind is the kind of a [PostDecision].
type PostKind string

// The post-execute decision kinds.
const (
	Accept PostKind = "accept"
	Block  PostKind = "block"
)

// PostDecision is the result of the tools/post-execute waterfall.
// Accept keeps the result, replacing its content
// when Content is non-nil (an empty non-nil slice replaces it with
// nothing), and its value when Value is non-nil (only on a success of a
// tool that declares its output: the new value is validated against the
// schema, INVALID_OUTPUT when it does not match, and the content is
// rendered from it unless Content replaces it too). Block turns it into an isError (code BLOCKED) whose content is
// Feedback. Either may attach AdditionalContext, which is appended after
// the tool's and wrappers'. The zero value, an unknown kind, Block without
// feedback, Accept with feedback or Block with content fail closed as
// INVALID_DECISION.
type PostDecision struct {
	Kind              PostKind
	Content           []Content
	Value             json.RawMessage
	Feedback          string
	AdditionalContext string
}

// Accepted returns the accept decision that keeps the result unchanged
// (what the waterfall's base returns).
func Accepted() PostDecision { return PostDecision{Kind: Accept} }

// Blocked returns a block decision.
func Blocked(feedback string) PostDecision { return PostDecision{Kind: Block, Feedback: feedback} }

// Validate reports why d is malformed, or nil.
func (d PostDecision) Validate() error {
	if err := d.check(); err != nil {
		return fmt.Errorf("tools: malformed post-execute decision: %w", err)
	}
	return nil
}

// check is Validate without the package prefix, for the pipeline's
// INVALID_DECISION text.
func (d PostDecision) check() error {
	switch d.Kind {
	case Accept:
		if d.Feedback != "" {
			return fmt.Errorf("accept decision with feedback (feedback belongs to block)")
		}
		for i, c := range d.Content {
			if err := c.check(); err != nil {
				return fmt.Errorf("accept decision content[%d]: %w", i, err)
			}
		}
	case Block:
		if d.Feedback == "" {
			return fmt.Errorf("block decision without feedback")
		}
		if d.Content != nil {
			return fmt.Errorf("block decision with content (its content is the feedback)")
		}
		if d.Value != nil {
			return fmt.Errorf("block decision with a value (a blocked result has none)")
		}
	case "":
		return fmt.Errorf("zero post-execute decision (no kind)")
	default:
		return fmt.Errorf("unknown post-execute decision kind %q", d.Kind)
	}
	return nil
}

// PostInput is the payload of tools/post-execute: the execution and the
// result so far. Result returns a fresh copy at each call, so a listener
// cannot change what the next one sees.
type PostInput struct {
	exec   *Execution
	result *Result // &exec.post (two words: the host's links hold it by value)
}

// Execution returns the call's identity.
func (p PostInput) Execution() *Execution { return p.exec }

// Result returns a copy of the result so far.
func (p PostInput) Result() Result { return p.result.cloneOrZero() }

// ResultNotice is the payload of tools/result: the frozen execution and its
// final result. Result returns a fresh copy at each call, so an observer
// cannot change what another observer (or the caller) sees.
type ResultNotice struct {
	exec   *Execution
	result Result
}

// Execution returns the call's identity.
func (n ResultNotice) Execution() *Execution { return n.exec }

// Result returns a copy of the final result.
func (n ResultNotice) Result() Result { return n.result.Clone() }

// ChangeKind says what changed in a [ChangeNotice].
type ChangeKind string

// The registry change kinds.
const (
	ChangeRegister   ChangeKind = "register"
	ChangeUnregister ChangeKind = "unregister"
	ChangeRestrict   ChangeKind = "restrict"
	ChangeUnrestrict ChangeKind = "unrestrict"
	// ChangePresent and ChangeUnpresent: an agent's PresentAs declaration
	// began or ended (Names is empty; see [Registry.ModeOf]).
	ChangePresent   ChangeKind = "present"
	ChangeUnpresent ChangeKind = "unpresent"
)

// ChangeNotice is the payload of tools/change: what changed, in which layer
// ("" = global), and the tool names involved (the tool, or the
// restriction's names). Each notification has its own Names slice, shared
// by the listeners of that one notification: read it, do not modify it.
type ChangeNotice struct {
	Kind  ChangeKind
	Scope host.ScopeKey
	Names []string
}

// Listener type shorthands for the tools/* events.
type (
	// PreNext delegates from a tools/pre-execute listener to the rest.
	PreNext = events.Next[PreDecision]
	// ExecuteNext delegates from a tools/execute wrapper to the rest, and
	// finally to core dispatch; pass a derived context to change the
	// body's cancellation (see ExecuteEvent for what next refuses).
	ExecuteNext = events.Next[Result]
	// PostNext delegates from a tools/post-execute listener to the rest.
	PostNext = events.Next[PostDecision]
)

// The events of the registry. The three waterfalls and tools/result are
// scope-filtered by the execution's agent: global listeners see every
// call, an agent's listeners only that agent's calls. A failing (erroring
// or panicking) waterfall listener propagates: the call becomes an isError
// result (its Coder code, or LISTENER_ERROR). tools/result and
// tools/change contain failures (logged with the owning plugin's name).
var (
	// PreExecute is the reorderable allow/deny/ask gate. Listeners call next
	// to delegate (the base allows) or return a decision to short-circuit.
	PreExecute = events.NewWaterfall[*Execution, PreDecision](events.Descriptor{
		Name:     "tools/pre-execute",
		Mode:     events.ModeWaterfall,
		Doc:      "Allow, deny or ask before a tool call runs; a deny skips the body, an ask goes to the approval service.",
		Filtered: true,
		Failure:  events.Propagate,
	})
	// ExecuteEvent is the around-dispatch seam (timeout, retry, metrics).
	// next is dispatch-with-normalization: it returns an isError Result for
	// an unknown, failing or panicking tool rather than an error. A wrapper
	// may change only the cancellation (by passing a derived ctx to next),
	// may call next more than once, or may return a result without calling
	// it. The caller's cancellation reaches the body even when a wrapper
	// replaced the context, and once the caller cancelled, next starts no
	// body (ABORTED_BEFORE_DISPATCH), whatever context it is given. next
	// may run on another goroutine, but the stage ends when the outermost
	// wrapper returns: a body still running is then cancelled (cause
	// ErrAbandoned) and waited for, and a later next starts no body.
	ExecuteEvent = events.NewWaterfall[*Execution, Result](events.Descriptor{
		Name:     "tools/execute",
		Mode:     events.ModeWaterfall,
		Doc:      "Around the tool body: wrappers may derive the cancellation context, retry, or short-circuit with a result.",
		Filtered: true,
		Failure:  events.Propagate,
	})
	// PostExecute is the inspect/transform seam: accept (optionally
	// replacing content) or block with feedback, either attaching
	// additional context. Denials and failures pass through it too.
	PostExecute = events.NewWaterfall[PostInput, PostDecision](events.Descriptor{
		Name:     "tools/post-execute",
		Mode:     events.ModeWaterfall,
		Doc:      "Inspect a tool call's result: accept (optionally replacing content or, for a declared output, the value) or block with feedback; attach additional context.",
		Filtered: true,
		Failure:  events.Propagate,
	})
	// ResultEvent observes the final, validated, immutable result of every
	// call, exactly once per Execute. Observers cannot change it.
	ResultEvent = events.NewEvent[ResultNotice](events.Descriptor{
		Name:     "tools/result",
		Mode:     events.ModeEmit,
		Doc:      "Observe the final result of a tool call (exactly once per call; observe-only).",
		Filtered: true,
		Failure:  events.Contain,
	})
	// Change notifies every listener (unfiltered) that a scope's tool
	// surface changed: a tool registered or disposed, a restriction added
	// or lifted, an agent's presentation (Registry.PresentAs) declared or
	// ended.
	Change = events.NewEvent[ChangeNotice](events.Descriptor{
		Name:    "tools/change",
		Mode:    events.ModeEmit,
		Doc:     "The registry changed: a tool was registered or removed, a restriction added or lifted, or an agent's presentation mode declared or ended (unfiltered).",
		Failure: events.Contain,
	})
)

// Events returns the registry's event handles, for catalogs and
// host.Declare.
func Events() []events.Handle {
	return []events.Handle{PreExecute, ExecuteEvent, PostExecute, ResultEvent, Change}
}

// Guard is a monotonic, synchronous execution guard. It returns nil to let
// the call through, or an error to deny it, and nothing later can re-allow
// a denied call. The result is an isError whose text is "Tool call denied:
// " and the error's message, and whose error.code is the error's [Coder]
// code (a *[Error] made with [NewError], say), or DENIED for a plain error
// (errors.New("interns may not write")). Guards run after tools/pre-execute
// and before approval (nobody is asked to approve a call a guard refuses),
// global guards before the agent's own, each in registration order; the
// first error wins. A panicking guard denies
// (GUARD_FAILED). A guard must not block; it may be called concurrently
// for different calls.
type Guard func(exec *Execution) error

// ApprovalService is the service the pipeline looks the [Approver] up
// through, per ask, non-reactively ([host.Service.Lookup]); package
// approval provides one.
var ApprovalService = host.NewService[Approver]("approval")

// Approver answers an ask (implemented by plugins/approval). Approve may
// block until a user answers; it must return once ctx is done. It is
// called on the goroutine running the call. An answer returned when ctx is
// already done grants nothing: the call is ABORTED_BEFORE_DISPATCH
// (a Rejected answer is kept as the more specific denial).
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)
}

// ApproverFunc adapts a function to [Approver].
type ApproverFunc func(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error)

// Approve implements [Approver].
func (f ApproverFunc) Approve(ctx context.Context, req ApprovalRequest) (ApprovalOutcome, error) {
	return f(ctx, req)
}

var _ Approver = ApproverFunc(nil)

// ApprovalRequest is what an approver is asked about.
type ApprovalRequest struct {
	Agent  host.ScopeKey
	Tool   string
	CallID string
	// Reason is the ask decision's reason (may be empty).
	Reason string
	// Call is the tool's own rendering of the pending call, or nil.
	Call      CallView
	Execution *Execution
}

// ApprovalOutcome is an approver's answer.
type ApprovalOutcome string

// The approval outcomes. Only AllowedOnce proceeds; the others deny with
// distinct codes (APPROVAL_REJECTED, APPROVAL_CANCELLED,
// APPROVAL_UNAVAILABLE). Any other value fails closed (APPROVAL_FAILED).
const (
	AllowedOnce ApprovalOutcome = "allowed-once"
	Rejected    ApprovalOutcome = "rejected"
	Cancelled   ApprovalOutcome = "cancelled"
	Unavailable ApprovalOutcome = "unavailable"
)
