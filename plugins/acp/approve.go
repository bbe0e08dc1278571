package acp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The permission options every request offers, by id (the ids are also
// their ACP kinds).
const (
	OptionAllowOnce    acpsdk.PermissionOptionId = "allow_once"
	OptionAllowAlways  acpsdk.PermissionOptionId = "allow_always"
	OptionRejectOnce   acpsdk.PermissionOptionId = "reject_once"
	OptionRejectAlways acpsdk.PermissionOptionId = "reject_always"
)

var _ tools.Approver = (*Bridge)(nil)

// Approve implements [tools.Approver]: it answers an ask of an attached
// agent scope through that scope's session (see [Session.Approve]); an ask
// of any other scope goes to Config.Fallback, or is unavailable.
func (b *Bridge) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	if s := b.session(req.Agent); s != nil {
		return s.Approve(ctx, req)
	}
	if b.cfg.Fallback != nil {
		return b.cfg.Fallback.Approve(ctx, req)
	}
	return tools.Unavailable, nil
}

// pattern is what an always-rule is scoped to, taken from the call's card:
// the exact command of a terminal card, or the set of (resolved, cleaned)
// paths of a diff or generic card's diffs and locations; neither means the
// tool as a whole.
type pattern struct {
	tool    string
	command string
	hasCmd  bool
	paths   []string // sorted, unique; nil = no paths
}

type rule struct {
	pattern
	allow bool
}

// patternOf derives the pattern of a call from its card.
func (m mapper) patternOf(tool string, card tools.CallView) pattern {
	p := pattern{tool: tool}
	var paths []string
	switch c := card.(type) {
	case tools.TerminalCall:
		p.command, p.hasCmd = c.Title, true
		return p
	case tools.DiffCall:
		for _, d := range c.Diffs {
			paths = append(paths, d.Path)
		}
		for _, l := range c.Locations {
			paths = append(paths, l.Path)
		}
	case tools.GenericCall:
		for _, l := range c.Locations {
			paths = append(paths, l.Path)
		}
	}
	for _, x := range paths {
		p.paths = append(p.paths, filepath.Clean(m.path(x)))
	}
	slices.Sort(p.paths)
	p.paths = slices.Compact(p.paths)
	return p
}

// covers reports whether a rule remembered for r applies to the call c:
// same tool, and the same command exactly, or every path of c among r's
// paths; a tool-wide rule (no command, no paths) covers every call of the
// tool.
func (r pattern) covers(c pattern) bool {
	if r.tool != c.tool {
		return false
	}
	switch {
	case r.hasCmd:
		return c.hasCmd && c.command == r.command
	case r.paths != nil:
		if c.hasCmd || len(c.paths) == 0 {
			return false
		}
		for _, p := range c.paths {
			if _, ok := slices.BinarySearch(r.paths, p); !ok {
				return false
			}
		}
		return true
	}
	return true
}

// describe is the scope shown in the always options.
func (r pattern) describe() string {
	switch {
	case r.hasCmd:
		return fmt.Sprintf("%s `%s`", r.tool, textcut.Truncate(r.command, 80))
	case r.paths != nil:
		shown := make([]string, 0, 3)
		for i, p := range r.paths {
			if i == 3 {
				shown = append(shown, fmt.Sprintf("and %d more", len(r.paths)-3))
				break
			}
			shown = append(shown, textcut.Truncate(p, 80))
		}
		return fmt.Sprintf("%s on %s", r.tool, strings.Join(shown, ", "))
	}
	return fmt.Sprintf("every %s call", r.tool)
}

// remembered returns the rule covering p, reject rules first.
func (s *Session) remembered(p pattern) (rule, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var allow *rule
	for i := range s.rules {
		r := &s.rules[i]
		if !r.covers(p) {
			continue
		}
		if !r.allow {
			return *r, true
		}
		if allow == nil {
			allow = r
		}
	}
	if allow != nil {
		return *allow, true
	}
	return rule{}, false
}

func (s *Session) remember(r rule) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.rules) >= MaxRules {
		s.log.Warn().Str("tool", r.tool).Msg("acp: too many remembered permission rules; this answer applies once")
		return
	}
	s.rules = append(s.rules, r)
}

// Approve answers an ask for a call of this session (the [Bridge] routes
// asks here by the call's agent scope).
//
// A remembered rule answers first, without asking: reject_always rules
// before allow_always ones. Otherwise the call's tool_call is delivered,
// then session/request_permission is sent with the call's toolCall and the
// four options allow_once, allow_always, reject_once, reject_always. The
// answer: allow_once → allowed once; allow_always → allowed, and calls of
// the same tool with the same pattern are allowed from now on in this
// session; reject_once → rejected; reject_always → rejected, now and for
// the same pattern; the client's cancelled outcome → cancelled. The
// pattern comes from the call's card: a terminal card's exact command, or
// the paths of a diff or generic card (a later call is covered when every
// path it touches was among them); a card with neither (or no card) makes
// the rule cover every call of the tool.
//
// The ask answers cancelled when ctx is done or the turn is cancelled
// ([Session.Cancel]) before the client answers, whether or not it ever
// does; unavailable when the session is closed or broken. An answer naming
// an option that was not offered, or no outcome at all, is an error (the
// call is denied with the reason) and is logged.
func (s *Session) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	p := s.m.patternOf(req.Tool, req.Call)
	if r, ok := s.remembered(p); ok {
		if r.allow {
			return tools.AllowedOnce, nil
		}
		return tools.Rejected, nil
	}
	var st *callState
	if req.Execution != nil {
		st = s.started(ctx, req.Execution)
	}
	if st == nil {
		return tools.Unavailable, nil // no call to name, or the session is closed
	}
	// The tool_call goes out before the request that names it.
	if err := s.Flush(ctx); err != nil {
		if ctx.Err() != nil {
			return tools.Cancelled, nil
		}
		return tools.Unavailable, nil
	}

	s.mu.Lock()
	if s.closed || s.broken != nil {
		s.mu.Unlock()
		return tools.Unavailable, nil
	}
	turn := s.turn
	s.wg.Add(1)
	s.mu.Unlock()

	askCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopTurn := context.AfterFunc(turn, cancel)
	defer stopTurn()
	stopLife := context.AfterFunc(s.life, cancel)
	defer stopLife()

	tc := st.start
	call := acpsdk.ToolCallUpdate{
		ToolCallId: tc.ToolCallId, Title: &tc.Title, Kind: &tc.Kind, Status: &tc.Status,
		Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput,
	}
	what := p.describe()
	msg := acpsdk.RequestPermissionRequest{
		SessionId: s.id,
		ToolCall:  call,
		Options: []acpsdk.PermissionOption{
			{OptionId: OptionAllowOnce, Kind: acpsdk.PermissionOptionKindAllowOnce, Name: "Allow once"},
			{OptionId: OptionAllowAlways, Kind: acpsdk.PermissionOptionKindAllowAlways, Name: "Always allow " + what},
			{OptionId: OptionRejectOnce, Kind: acpsdk.PermissionOptionKindRejectOnce, Name: "Reject"},
			{OptionId: OptionRejectAlways, Kind: acpsdk.PermissionOptionKindRejectAlways, Name: "Always reject " + what},
		},
	}
	type answer struct {
		resp acpsdk.RequestPermissionResponse
		err  error
	}
	ch := make(chan answer, 1)
	go func() {
		defer s.wg.Done()
		var a answer
		defer func() {
			if v := recover(); v != nil {
				a = answer{err: fmt.Errorf("the peer panicked: %v", v)}
			}
			ch <- a
		}()
		a.resp, a.err = s.peer.RequestPermission(askCtx, msg)
	}()
	var a answer
	select {
	case a = <-ch:
	case <-askCtx.Done():
	}
	if s.Err() != nil {
		return tools.Unavailable, nil // closed or broken meanwhile
	}
	switch {
	case askCtx.Err() != nil:
		return tools.Cancelled, nil // the call or the turn was cancelled
	case a.err != nil:
		return "", fmt.Errorf("acp: session/request_permission for call %q failed: %w", string(tc.ToolCallId), a.err)
	}
	outcome, always, err := decide(a.resp.Outcome)
	if err != nil {
		err = fmt.Errorf("acp: the client answered session/request_permission for call %q %w", string(tc.ToolCallId), err)
		s.log.Warn().Err(err).Msg("acp: malformed permission answer")
		return "", err
	}
	if always {
		s.remember(rule{pattern: p, allow: outcome == tools.AllowedOnce})
	}
	return outcome, nil
}

// decide maps a client's answer to an outcome, and whether it is to be
// remembered; an option that was not offered, or no outcome, is an error.
func decide(out acpsdk.RequestPermissionOutcome) (outcome tools.ApprovalOutcome, always bool, err error) {
	if out.Cancelled != nil {
		return tools.Cancelled, false, nil
	}
	if out.Selected == nil {
		return "", false, errors.New("without an outcome")
	}
	switch out.Selected.OptionId {
	case OptionAllowOnce:
		return tools.AllowedOnce, false, nil
	case OptionAllowAlways:
		return tools.AllowedOnce, true, nil
	case OptionRejectOnce:
		return tools.Rejected, false, nil
	case OptionRejectAlways:
		return tools.Rejected, true, nil
	}
	return "", false, fmt.Errorf("with option %q, which was not offered (offered: %s, %s, %s, %s)",
		textcut.Truncate(string(out.Selected.OptionId), 64), OptionAllowOnce, OptionAllowAlways, OptionRejectOnce, OptionRejectAlways)
}
