package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Policy decides for a hook. A *tools.Registry with the configured
// policies loaded is one: [tools.Registry.Check] for PreToolUse,
// [tools.Registry.CheckPost] for PostToolUse.
type Policy interface {
	Check(ctx context.Context, call tools.Call) tools.Verdict
	CheckPost(ctx context.Context, call tools.Call, res tools.Result) tools.Result
}

var _ Policy = (*tools.Registry)(nil)

// Answer is what the hook process writes and how it exits.
type Answer struct {
	// Stdout is the JSON answer (one object and a newline), or nil when
	// the exit code alone answers.
	Stdout []byte
	// Stderr is a line for humans, or "". With ExitCode 2 it is the
	// reason the agent shows (Claude Code gives it to the model; Codex
	// blocks the call with it).
	Stderr string
	// ExitCode is 0 (the JSON on Stdout is the answer) or 2 (a blocking
	// error, for input whose event is unknown).
	ExitCode int
}

// Decide answers payload p in format f with pol's decision. Decide runs no
// tool. It does not bound the time pol takes: see [Run].
func Decide(ctx context.Context, f Format, pol Policy, p Payload) Answer {
	call := tools.Call{ID: p.ToolUseID, Name: p.ToolName, Arguments: p.ToolInput}
	switch p.Event {
	case PreToolUse:
		v := pol.Check(ctx, call)
		switch v.Kind {
		case tools.Allow:
			if v.Default || f == Codex {
				// No policy decided (or Codex, whose PreToolUse cannot
				// allow): the agent's own permission flow applies.
				return jsonAnswer(struct{}{})
			}
			return preAnswer("allow", "")
		case tools.Ask:
			reason := "dsh policy requires approval"
			if v.Reason != "" {
				reason += ": " + v.Reason
			}
			if f == Codex {
				// Codex's PreToolUse cannot ask: fail closed.
				return preAnswer("deny", reason+" (Codex hooks cannot ask, so dsh denies)")
			}
			return preAnswer("ask", reason)
		case tools.Deny:
			return preAnswer("deny", nonEmpty(v.Reason, "Tool call denied by dsh policy"))
		}
		return preAnswer("deny", fmt.Sprintf("dsh policy returned an unknown decision %q", v.Kind))
	case PostToolUse:
		res := pol.CheckPost(ctx, call, responseResult(p.ToolResponse))
		extra := strings.Join(res.AdditionalContext, "\n\n")
		var out postOutput
		if res.IsError {
			out.Decision, out.Reason = "block", nonEmpty(resultText(res), "dsh policy blocked the tool's result")
		}
		if extra != "" {
			out.Specific = &postSpecific{HookEventName: string(PostToolUse), AdditionalContext: extra}
		}
		return jsonAnswer(out)
	}
	return Fail(f, &PayloadError{Field: "hook_event_name", Problem: fmt.Sprintf("unknown event %.100q", p.Event)})
}

// Fail is the fail-closed answer for err in format f. When err is a
// *[PayloadError] or wraps one whose event is unknown (not JSON, too
// large, no or an unknown hook_event_name), the answer is exit code 2
// with the reason on stderr, which blocks in both protocols. Otherwise
// the event is PreToolUse or PostToolUse (see [EventError]) and the
// answer is that event's JSON: deny with the reason (PreToolUse), block
// with the reason (PostToolUse).
func Fail(f Format, err error) Answer {
	_ = f // both formats answer failures alike
	reason := "dsh hook: " + strings.TrimPrefix(safeerr.Text(err), "hooks: ")
	var ev Event
	var pe *PayloadError
	var ee *EventError
	switch {
	case safeerr.AsAny(err, &pe):
		ev = pe.Event
	case safeerr.AsAny(err, &ee):
		ev = ee.Event
	}
	switch ev {
	case PreToolUse:
		a := preAnswer("deny", reason)
		a.Stderr = reason
		return a
	case PostToolUse:
		a := jsonAnswer(postOutput{Decision: "block", Reason: reason})
		a.Stderr = reason
		return a
	}
	return Answer{Stderr: reason, ExitCode: 2}
}

// EventError is an error that happened while answering a payload whose
// event was known (loading the configuration, a policy that did not
// answer in time): [Fail] answers it in the event's JSON.
type EventError struct {
	Event Event
	Err   error
}

// Error implements error.
func (e *EventError) Error() string { return safeerr.Text(e.Err) }

// Unwrap returns the cause.
func (e *EventError) Unwrap() error { return e.Err }

// Loader returns the policy for payload p and a function that releases
// it. Run calls it once per payload, after p was parsed.
type Loader func(ctx context.Context, p Payload) (pol Policy, release func(), err error)

// Options configures [Run].
type Options struct {
	// Timeout bounds reading the payload, loading the policy and deciding
	// (zero: 10s). Past it
	// the answer fails closed; set it below the agent's own hook timeout,
	// on which the agent would proceed without an answer.
	Timeout time.Duration
}

// Run is one hook invocation: it reads a payload from stdin (at most
// MaxPayloadBytes), parses it, loads the policy, decides, writes the
// answer to stdout and stderr and returns the exit code. Every failure
// is answered by [Fail]: a bad payload, a Loader error, a panic in
// loading or deciding, and a payload not read or a policy that has not
// answered within Options.Timeout or before ctx is done. In the last two
// cases Run returns while the read or the policy may still be running:
// Run is meant for a process that exits after it.
func Run(ctx context.Context, f Format, stdin io.Reader, stdout, stderr io.Writer, load Loader, o Options) int {
	a := answer(ctx, f, stdin, load, o)
	if len(a.Stdout) > 0 {
		_, _ = stdout.Write(a.Stdout)
	}
	if a.Stderr != "" {
		_, _ = io.WriteString(stderr, strings.TrimRight(a.Stderr, "\n")+"\n")
	}
	return a.ExitCode
}

func answer(ctx context.Context, f Format, stdin io.Reader, load Loader, o Options) Answer {
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The payload is read within the time budget too: an agent that never
	// closes stdin gets a denial, not a hook that outlives its timeout.
	var event atomic.Value // Event, once the payload is parsed
	done := make(chan Answer, 1)
	go func() {
		p, err := ReadPayload(stdin)
		if err != nil {
			done <- Fail(f, err)
			return
		}
		event.Store(p.Event)
		done <- decideContained(ctx, f, p, load)
	}()
	select {
	case a := <-done:
		return a
	case <-ctx.Done():
		ev, _ := event.Load().(Event)
		cancelled := !safeerr.Is(ctx.Err(), context.DeadlineExceeded)
		var why string
		switch {
		case ev == "" && cancelled:
			why = "the hook was cancelled before the payload was read"
		case ev == "":
			why = "no complete payload on stdin within " + timeout.String()
		case cancelled:
			why = "the hook was cancelled before the policy answered"
		default:
			why = "the policy did not answer within " + timeout.String()
		}
		return Fail(f, &EventError{Event: ev, Err: errors.New(why)})
	}
}

func decideContained(ctx context.Context, f Format, p Payload, load Loader) (a Answer) {
	defer func() {
		if v := recover(); v != nil {
			a = Fail(f, &EventError{Event: p.Event, Err: fmt.Errorf("the policy panicked: %s", safeerr.Sprint(v))})
		}
	}()
	pol, release, err := load(ctx, p)
	if err != nil {
		return Fail(f, &EventError{Event: p.Event, Err: fmt.Errorf("loading the policy: %w", err)})
	}
	if release != nil {
		defer release()
	}
	if pol == nil {
		return Fail(f, &EventError{Event: p.Event, Err: errors.New("loading the policy: no policy")})
	}
	a = Decide(ctx, f, pol, p)
	if dl, ok := ctx.Deadline(); ctx.Err() != nil || ok && !time.Now().Before(dl) {
		// An answer given after the deadline is not trusted (Run has
		// already answered, or is about to).
		return Fail(f, &EventError{Event: p.Event, Err: errors.New("the policy answered after the hook's deadline")})
	}
	return a
}

// responseResult is the tools.Result post-execute sees for a
// tool_response: a JSON string as one text block of itself; any other
// value as one text block of its canonical JSON.
func responseResult(raw json.RawMessage) tools.Result {
	var s string
	if len(raw) > 0 && raw[0] == '"' && json.Unmarshal(raw, &s) == nil {
		return tools.Result{Content: []tools.Content{tools.Text(s)}}
	}
	return tools.Result{Content: []tools.Content{tools.Text(string(raw))}}
}

func resultText(r tools.Result) string {
	var b strings.Builder
	for i, c := range r.Content {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

func nonEmpty(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// The answers' JSON shapes.
type (
	preOutput struct {
		Specific preSpecific `json:"hookSpecificOutput"`
	}
	preSpecific struct {
		HookEventName            string `json:"hookEventName"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason,omitempty"`
	}
	postOutput struct {
		Decision string        `json:"decision,omitempty"`
		Reason   string        `json:"reason,omitempty"`
		Specific *postSpecific `json:"hookSpecificOutput,omitempty"`
	}
	postSpecific struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	}
)

func preAnswer(decision, reason string) Answer {
	return jsonAnswer(preOutput{Specific: preSpecific{HookEventName: string(PreToolUse), PermissionDecision: decision, PermissionDecisionReason: reason}})
}

func jsonAnswer(v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		// The shapes above are strings only; unreachable.
		return Answer{Stderr: "dsh hook: encoding the answer: " + err.Error(), ExitCode: 2}
	}
	return Answer{Stdout: append(b, '\n')}
}
