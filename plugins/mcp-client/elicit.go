package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Elicitor answers a server's elicitation requests (Config.Elicitor): a
// server asking the user for input or confirmation during a tool call.
// Elicit may block until a user answers; it must return once ctx is done
// (the call was cancelled, the session ended or the plugin is disposed).
// It may be called concurrently (a server may ask several questions at
// once).
// Its answer's Action must be "accept" (with Content matching the
// requested schema), "decline" or "cancel"; an error, a panic, a nil or
// malformed answer declines.
type Elicitor interface {
	Elicit(ctx context.Context, req ElicitationRequest) (*mcp.ElicitResult, error)
}

// ElicitorFunc adapts a function to [Elicitor].
type ElicitorFunc func(ctx context.Context, req ElicitationRequest) (*mcp.ElicitResult, error)

// Elicit implements [Elicitor].
func (f ElicitorFunc) Elicit(ctx context.Context, req ElicitationRequest) (*mcp.ElicitResult, error) {
	return f(ctx, req)
}

var _ Elicitor = ElicitorFunc(nil)

// ElicitationRequest is a server's request for user input.
type ElicitationRequest struct {
	// Server is Config.Name.
	Server string
	// Execution is the tool call the request belongs to, when exactly one
	// call of this server is in progress; nil when it cannot be told
	// (MCP does not say which call a request belongs to).
	Execution *tools.Execution
	// Agent is the agent of the calls in progress, when they all have the
	// same one; "" otherwise.
	Agent host.ScopeKey
	// Params is the server's request: its message, mode ("form" or
	// "url"), requested schema or URL.
	Params *mcp.ElicitParams
}

// The elicitation answers.
const (
	ActionAccept  = "accept"
	ActionDecline = "decline"
	ActionCancel  = "cancel"
)

func decline() *mcp.ElicitResult { return &mcp.ElicitResult{Action: ActionDecline} }

// elicit is the session's elicitation handler. Without an Elicitor it asks
// the approval service, for the attributed call's agent: allowed-once
// accepts a request that needs no input (a confirmation: no required
// field), and declines one that does (an approver cannot fill a form);
// cancelled cancels; anything else declines. No answerer: decline.
func (s *server) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	if req == nil || req.Params == nil {
		return decline(), nil
	}
	in, agent := s.attribute(ctx)
	// The answer is moot once the plugin goes or the call ends.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.ctx, cancel)()
	if cur := s.conn.Load(); cur != nil {
		defer context.AfterFunc(cur.ctx, cancel)()
	}
	er := ElicitationRequest{Server: s.cfg.Name, Agent: agent, Params: req.Params}
	if in != nil {
		er.Execution = in.exec
		defer context.AfterFunc(in, cancel)()
	}
	if s.cfg.Elicitor != nil {
		res, err := safeElicit(ctx, s.cfg.Elicitor, er)
		if err != nil || ctx.Err() != nil || !validAnswer(res) {
			if err != nil {
				s.log.Warn().Str("error", safeerr.Text(err)).Msg("MCP elicitation: the elicitor failed; declined")
			}
			return decline(), nil
		}
		return res, nil
	}
	ap, ok := tools.ApprovalService.Lookup(s.c)
	if !ok || agent == "" || req.Params.Mode == "url" || req.Params.URL != "" {
		return decline(), nil
	}
	ar := tools.ApprovalRequest{
		Agent:  agent,
		Reason: fmt.Sprintf("MCP server %q asks: %s", s.cfg.Name, textcut.Valid(req.Params.Message, 4096)),
		Call:   tools.GenericCall{Title: "MCP server " + s.cfg.Name + " asks for input", Content: []tools.Content{tools.Text(textcut.Valid(req.Params.Message, 4096))}},
	}
	if in != nil {
		ar.Tool, ar.CallID, ar.Execution = in.exec.Name(), in.exec.CallID(), in.exec
	}
	outcome, err := tools.SafeApprove(ctx, ap, ar)
	if err != nil || ctx.Err() != nil {
		return decline(), nil
	}
	switch outcome {
	case tools.AllowedOnce:
		if needsInput(req.Params.RequestedSchema) {
			return decline(), nil
		}
		return &mcp.ElicitResult{Action: ActionAccept, Content: map[string]any{}}, nil
	case tools.Cancelled:
		return &mcp.ElicitResult{Action: ActionCancel}, nil
	}
	return decline(), nil
}

// inflightKey carries a call's *inflight in its CallTool context: the SDK
// fulfils a multi-round-trip call's input requests (protocol 2026-07-28)
// under that context, so those elicitations are attributed exactly.
type inflightKey struct{}

// attribute returns the call an elicitation belongs to and its agent: the
// call whose context ctx is, else the single call in progress (or nil)
// and the agent all calls in progress share ("" when none or several).
// A server on an older protocol sends elicitation/create as a request of
// its own, which does not say which call it is for.
func (s *server) attribute(ctx context.Context) (*inflight, host.ScopeKey) {
	if in, ok := ctx.Value(inflightKey{}).(*inflight); ok && in != nil {
		return in, in.exec.Agent()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var one *inflight
	var agent host.ScopeKey
	n := 0
	for in := range s.inflight.all {
		a := in.exec.Agent()
		if n == 0 {
			agent = a
		} else if a != agent {
			agent = ""
		}
		one = in
		n++
	}
	if n != 1 {
		one = nil
	}
	if n == 0 {
		agent = ""
	}
	return one, agent
}

func validAnswer(r *mcp.ElicitResult) bool {
	if r == nil {
		return false
	}
	switch r.Action {
	case ActionAccept:
		return true
	case ActionDecline, ActionCancel:
		return r.Content == nil
	}
	return false
}

// needsInput reports whether an elicitation schema has a required field
// (or cannot be read).
func needsInput(schema any) bool {
	if schema == nil {
		return false
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return true
	}
	var s struct {
		Required []string `json:"required"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return true
	}
	return len(s.Required) > 0
}

func safeElicit(ctx context.Context, e Elicitor, req ElicitationRequest) (res *mcp.ElicitResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("elicitor panicked: %s", safeerr.Sprint(v))
		}
	}()
	return e.Elicit(ctx, req)
}
