package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bounds of a proxied completion's answer: at most maxCompletionValues
// values (the MCP limit), each at most maxCompletionValueBytes long; a
// value past either is dropped and the answer says hasMore.
const (
	maxCompletionValues     = 100
	maxCompletionValueBytes = 4096
)

// complete answers completion/complete for a mounted server's prompt
// (ref/prompt, name mcp__S__<name>) or resource template (ref/resource,
// URI dsh://S/<template>): the request goes to S with the names mapped
// back, and S's answer comes back bounded.
//
// Visibility and rules: a completion is refused when the prompt or
// template is hidden (as its get or read would be) or when
// Config.Access does not allow it: deny refuses, and so does ask, since a
// completion is never asked for (asking on every keystroke would be
// unusable) and candidate values may be what the ask rule protects; an
// ask fails closed.
// For a prompt, Access is asked with the prompt's name and the completion
// context's arguments; for a template, with its name and {"uri": <the
// upstream template>}. A reference whose server is not mounted or does
// not offer completions is refused.
func (s *Server) complete(ctx context.Context, x *session, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if p == nil || p.Ref == nil {
		return nil, fmt.Errorf("completion: missing ref")
	}
	var (
		sv    string
		names []string
		args  []byte
		ref   mcp.CompleteReference
		what  string
	)
	switch p.Ref.Type {
	case "ref/prompt":
		what = "prompt " + fmt.Sprintf("%q", p.Ref.Name)
		var name string
		var ok bool
		sv, name, ok = s.splitName(p.Ref.Name)
		if !ok || s.known(sv) == nil {
			return nil, fmt.Errorf("completion for the %s: not found", what)
		}
		names = []string{p.Ref.Name}
		var a map[string]string
		if p.Context != nil {
			a = p.Context.Arguments
		}
		if b, err := json.Marshal(a); err == nil && a != nil {
			args = b
		} else {
			args = []byte("{}")
		}
		ref = mcp.CompleteReference{Type: "ref/prompt", Name: name}
	case "ref/resource":
		what = "resource " + fmt.Sprintf("%q", p.Ref.URI)
		var uri string
		var ok bool
		sv, uri, ok = splitURI(p.Ref.URI)
		if !ok || s.known(sv) == nil {
			return nil, fmt.Errorf("completion for the %s: not found", what)
		}
		var sure bool
		names, sure = s.completionNames(ctx, sv, uri)
		if !sure {
			return nil, fmt.Errorf("completion for the %s: denied by a permission rule (its listing is incomplete)", what)
		}
		args, _ = json.Marshal(map[string]string{"uri": uri})
		ref = mcp.CompleteReference{Type: "ref/resource", URI: uri}
	default:
		return nil, fmt.Errorf("completion: unknown ref type %q", p.Ref.Type)
	}
	if s.hiddenTo(x, names) {
		return nil, fmt.Errorf("completion for the %s: denied by a permission rule", what)
	}
	switch d := s.verdictFor(x, names, args); d.Verdict {
	case AccessAllow:
	case AccessAsk:
		return nil, fmt.Errorf("completion for the %s: refused, an ask rule covers it and completions are not asked for (%s)", what, d.Reason)
	default:
		return nil, fmt.Errorf("completion for the %s: denied by a permission rule (%s)", what, d.Reason)
	}
	cs := s.known(sv)
	if cs == nil {
		return nil, fmt.Errorf("completion for the %s: not found", what)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Completions == nil {
		return nil, fmt.Errorf("completion for the %s: the server %q does not offer completions", what, sv)
	}
	res, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &ref, Argument: p.Argument, Context: p.Context})
	if err != nil {
		return nil, fmt.Errorf("completion for the %s: %w", what, err)
	}
	return boundCompletion(res), nil
}

// completionNames returns the namespaced names deciding a completion of
// uri of sv: the template whose URI template is uri, else what decides a
// read of uri (readNames). sure as for readNames.
func (s *Server) completionNames(ctx context.Context, sv, uri string) (names []string, sure bool) {
	templates, complete := s.upstreamTemplates(ctx, sv)
	if !complete {
		return nil, false
	}
	for _, t := range templates {
		if t.URITemplate == uri {
			return []string{nsName(sv, t.Name)}, true
		}
	}
	return s.readNames(ctx, sv, uri)
}

// boundCompletion keeps at most maxCompletionValues values of at most
// maxCompletionValueBytes each; when it drops any, HasMore is set.
func boundCompletion(r *mcp.CompleteResult) *mcp.CompleteResult {
	out := &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
	if r == nil {
		return out
	}
	out.Completion.HasMore, out.Completion.Total = r.Completion.HasMore, r.Completion.Total
	for _, v := range r.Completion.Values {
		if len(v) > maxCompletionValueBytes || len(out.Completion.Values) == maxCompletionValues {
			out.Completion.HasMore = true
			continue
		}
		out.Completion.Values = append(out.Completion.Values, v)
	}
	if out.Completion.Total < 0 {
		out.Completion.Total = 0
	}
	return out
}
