package audit

import (
	"errors"
	"time"
)

// Call is the record of one tool call: written once when the call enters
// the pipeline (Finished zero: unfinished) and completed when its result
// is final (tools/result). A call whose gateway stopped mid-call keeps its
// entry record, unfinished.
type Call struct {
	// ID is the record's own id (unique across instances).
	ID string `json:"id"`
	// Instance is the gateway instance that ran the call.
	Instance string `json:"instance"`
	// Started is when the call entered the pipeline; Finished when its
	// result was final (zero while it runs, or if the gateway stopped).
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished,omitzero"`
	// Identity is the authenticated caller ("" without authentication).
	Identity string `json:"identity,omitempty"`
	// Session is the MCP session (the agent scope that ran the call).
	Session string `json:"session,omitempty"`
	// Agent is the calling agent: the MCP client's declared name when
	// known, else the session's scope.
	Agent string `json:"agent,omitempty"`
	// Tool and CallID are the call as made.
	Tool   string `json:"tool"`
	CallID string `json:"callId,omitempty"`
	// Args is the argument object, redacted and cut at the configured
	// bound (ArgsTruncated then).
	Args          string `json:"args,omitempty"`
	ArgsTruncated bool   `json:"argsTruncated,omitempty"`
	// Decisions are the policy decisions taken on the call, in order,
	// each with who took it.
	Decisions []Decision `json:"decisions,omitempty"`
	// Stages are the pipeline stages that ran, with their timings.
	Stages []Stage `json:"stages,omitempty"`
	// Code is the result's error code ("" for a success); IsError its
	// isError.
	Code    string `json:"code,omitempty"`
	IsError bool   `json:"isError,omitempty"`
	// Duration is Finished - Started.
	Duration time.Duration `json:"durationNs,omitempty"`
	// ResultSize is the byte size of the result's content; Preview its
	// first text, redacted and bounded.
	ResultSize int    `json:"resultSize,omitempty"`
	Preview    string `json:"preview,omitempty"`
}

// Unfinished reports whether the call has no final result on record.
func (c Call) Unfinished() bool { return c.Finished.IsZero() }

// Decision is one policy decision on a call and who took it.
type Decision struct {
	// Stage is the pipeline stage: "pre-execute", "approval", "guards",
	// "post-execute", "audit".
	Stage string `json:"stage"`
	// Outcome is what was decided: allow, deny or ask (pre-execute);
	// allowed-once, rejected, cancelled, unavailable or failed
	// (approval); deny (guards); block (post-execute).
	Outcome string `json:"outcome"`
	// By says who decided: "rule" (a permission rule, named by Rule),
	// "default" (the policy's defaultMode), "policy" (a pre-execute
	// listener), "guard", "approver", "post-execute", "audit".
	By string `json:"by"`
	// Rule is the permission rule that decided, when one did.
	Rule string `json:"rule,omitempty"`
	// Profile is the permission profile of the caller's identity whose
	// rules applied (pre-execute; set when profiles are configured:
	// "default" for the top-level rules).
	Profile string `json:"profile,omitempty"`
	// Approver and Channel say who answered an ask and through what:
	// channel "client" (the MCP client's elicitation), "console" (the
	// approval inbox), "always" (a standing session grant), "none".
	Approver string `json:"approver,omitempty"`
	Channel  string `json:"channel,omitempty"`
	// Code is the error code of a denial.
	Code string `json:"code,omitempty"`
	// Reason is the decision's reason, bounded.
	Reason string `json:"reason,omitempty"`
}

// Stage is one pipeline stage of a call, with the names of the pipeline
// diagram (pre-execute, approval, guards, execute, dispatch,
// post-execute).
type Stage struct {
	Name string `json:"name"`
	// Start is the stage's start as an offset from the call's start;
	// Duration how long it ran.
	Start    time.Duration `json:"startNs"`
	Duration time.Duration `json:"durationNs"`
	// Outcome and Code are how the stage ended (see tools.StageEnd).
	Outcome string `json:"outcome,omitempty"`
	Code    string `json:"code,omitempty"`
}

// AskState is the state of a stored approval ask.
type AskState string

// The ask states. An ask is pending until answered or withdrawn; an
// answer is applied by the asking gateway exactly once, while the caller
// still waits (applied), or refused there because the caller stopped
// waiting first (late). An ask whose gateway stopped while it was
// pending is abandoned: never granted.
const (
	AskPending   AskState = "pending"
	AskAnswered  AskState = "answered"
	AskApplied   AskState = "applied"
	AskLate      AskState = "late"
	AskWithdrawn AskState = "withdrawn"
	AskAbandoned AskState = "abandoned"
)

// Answers a person can give to an ask.
const (
	AnswerAllow  = "allow"  // allow this call once
	AnswerReject = "reject" // reject it
	AnswerAlways = "always" // allow it, and this tool for the rest of the session
)

// ValidAnswer reports whether a is one of the three answers.
func ValidAnswer(a string) bool {
	return a == AnswerAllow || a == AnswerReject || a == AnswerAlways
}

// Ask is an approval ask routed to the console, as stored.
type Ask struct {
	ID string `json:"id"`
	// Call is the id of the call's audit record.
	Call     string    `json:"call"`
	Instance string    `json:"instance"`
	Created  time.Time `json:"created"`
	// Deadline is when the ask stops waiting (zero: as long as the call).
	Deadline time.Time `json:"deadline,omitzero"`
	Tool     string    `json:"tool"`
	Identity string    `json:"identity,omitempty"`
	Session  string    `json:"session,omitempty"`
	Agent    string    `json:"agent,omitempty"`
	// Reason is the ask's reason; Rule the permission rule that asked.
	Reason string `json:"reason,omitempty"`
	Rule   string `json:"rule,omitempty"`
	// Args are the call's arguments (redacted, bounded); Card the tool's
	// presentation of the call, as text.
	Args  string   `json:"args,omitempty"`
	Card  string   `json:"card,omitempty"`
	State AskState `json:"state"`
	// Answer, AnsweredBy and AnsweredAt are the answer given, if any.
	Answer     string    `json:"answer,omitempty"`
	AnsweredBy string    `json:"answeredBy,omitempty"`
	AnsweredAt time.Time `json:"answeredAt,omitzero"`
	// Resolved is when the ask left pending/answered for good.
	Resolved time.Time `json:"resolved,omitzero"`
}

// Query selects call records: every non-zero field must match.
type Query struct {
	// Tool matches the tool name exactly, or as a prefix when it ends
	// with "*".
	Tool     string
	Identity string
	Session  string
	// Code matches the result's code; "ok" selects successes.
	Code string
	// Since and Until bound the start time (Until exclusive).
	Since, Until time.Time
	// Unfinished selects only calls without a final result.
	Unfinished bool
	// FinishedAfter, when set, selects finished records whose result
	// came at or after it, oldest first (for tailing).
	FinishedAfter time.Time
	// Limit bounds the records returned (0: 100; at most 10000), newest
	// first unless FinishedAfter is set.
	Limit int
}

// Errors of the store.
var (
	// ErrNotFound: no record or ask with that id.
	ErrNotFound = errors.New("audit: not found")
	// ErrNotPending: the ask was already answered, withdrawn or
	// abandoned; the answer is not taken.
	ErrNotPending = errors.New("audit: the ask is no longer pending")
	// ErrAbandoned: the gateway that raised the ask is gone; the ask is
	// marked abandoned and the answer is not taken.
	ErrAbandoned = errors.New("audit: the gateway that asked is gone (the ask is abandoned)")
	// ErrQueueFull: the write queue stayed full past the configured
	// wait; the call is failed closed.
	ErrQueueFull = errors.New("audit: the write queue is full")
	// ErrClosed: the store or recorder is closed.
	ErrClosed = errors.New("audit: closed")
)
