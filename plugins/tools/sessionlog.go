package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/dsh-go/dsh/host"
)

// SessionLogService is the service the registry looks the [SessionLog] up
// through (non-reactively, once per run_code execution).
var SessionLogService = host.NewService[SessionLog]("session-log")

// SessionLog is the seam an agent runtime provides so the registry can
// record events inside the open turn of a session: today the
// tool/code-dispatch event of each Code Mode sub-call. The registry owns
// the interface; a runtime implements it and provides it under
// [SessionLogService]. Without one (or for a call without an agent)
// dispatch works the same and nothing is logged.
//
// Append is called on the goroutine of the sub-call, before run_code
// returns, in dispatch order within a run; runs of different calls may
// append concurrently, so an implementation must be safe for concurrent
// use. ctx carries no cancellation of the call (a sub-call cancelled by the
// run's settlement is still logged). An error is logged by the registry
// and does not fail the call.
type SessionLog interface {
	Append(ctx context.Context, e SessionEvent) error
}

// SessionLogFunc adapts a function to [SessionLog].
type SessionLogFunc func(ctx context.Context, e SessionEvent) error

// Append implements [SessionLog].
func (f SessionLogFunc) Append(ctx context.Context, e SessionEvent) error { return f(ctx, e) }

var _ SessionLog = SessionLogFunc(nil)

// SessionEvent is one durable session event. It is a value; Data is owned
// by the receiver.
type SessionEvent struct {
	// Type is the event type, e.g. codemode.CodeDispatchEvent ("tool/code-dispatch").
	Type string `json:"type"`
	// ID is the event's deterministic id; for a code dispatch
	// "<parent call id>:code:<n>", n counting from 1 per run, or, for a
	// call refused before it was dispatched because its argument is not
	// lossless JSON, "<parent call id>:code:rejected:<k>", k counting the
	// run's refused calls from 1 (its result is INVALID_ARGS).
	ID string `json:"id"`
	// Agent is the agent scope the event belongs to.
	Agent host.ScopeKey `json:"agent"`
	// Parent is the model's call id of the enclosing tool call (run_code),
	// or "".
	Parent string `json:"parent,omitempty"`
	// Data is the event's payload as JSON; for a code dispatch a
	// [CodeDispatch].
	Data json.RawMessage `json:"data"`
}

// CodeDispatch is the payload of a tool/code-dispatch event: the tool, the
// canonical arguments it was dispatched with (the same bytes every
// pipeline phase saw; for a refused call, the arguments as the program
// passed them, as a JSON string when they are not valid JSON) and its
// final result (its model-facing content, and its value when the tool
// declares its output), without additional context: Code Mode defers a
// sub-call's additional context to run_code's result, delivered once
// there. Timing is the pair's timing when a tool/code-dispatch-start
// event was appended for the call (nil for a call refused before it
// entered the pipeline).
type CodeDispatch struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Result    Result          `json:"result"`
	Timing    *DispatchTiming `json:"timing,omitempty"`
}

// CodeDispatchStart is the payload of a tool/code-dispatch-start event,
// appended when a Code Mode sub-call enters the pipeline: the tool, its
// canonical arguments and when it started.
type CodeDispatchStart struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	StartedAt time.Time       `json:"startedAt"`
}

// DispatchTiming is the timing of a start/settled pair of dispatch
// events: when the call entered the pipeline, when it settled, and the
// difference in milliseconds.
type DispatchTiming struct {
	StartedAt  time.Time `json:"startedAt"`
	SettledAt  time.Time `json:"settledAt"`
	DurationMs float64   `json:"durationMs"`
}
