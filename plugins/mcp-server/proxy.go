package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Upstream gives the mounted servers' sessions by name (mcpclient's
// *Upstreams is one).
type Upstream interface {
	// Servers names the mounted servers.
	Servers() []string
	// Session is server's current session, nil while it is down.
	Session(server string) *mcp.ClientSession
}

// The namespacing of what is proxied besides tools, for a mounted server
// S:
//
//   - a resource or resource template is served with the name
//     mcp__S__<name> and the URI (or URI template) dsh://S/<upstream URI>:
//     "test://static/resource/1" of server "ev" is
//     "dsh://ev/test://static/resource/1"; a read of a dsh://S/… URI is a
//     read of the rest of it on S;
//   - a prompt is served as mcp__S__<name>; a get of it is a get of <name>
//     on S.
//
// Visibility: Config.Hidden is asked with the namespaced name (so a bare
// deny rule "mcp__S", "mcp__S__*" or "mcp__S__<name>" hides it); a hidden
// resource or prompt is not listed and its read or get is refused. A read
// of a URI that is not a listed resource (one made from a template) is
// refused when any of S's templates is hidden.
//
// Rules: Config.Access decides a read or get by the rules that name it,
// with arguments {"uri": <upstream URI>} for a read and the prompt's
// arguments for a get: a deny refuses, an ask asks (as a tool call's ask)
// and refuses unless allowed once. A read of a URI no resource lists is
// decided under every one of S's template names and mcp__S__*, the
// strongest verdict winning (which template made the URI is not known).
const uriScheme = "dsh://"

// maxProxyPages bounds the upstream pages one list gathers.
const maxProxyPages = 64

func nsName(server, name string) string { return "mcp__" + server + "__" + name }

func nsURI(server, uri string) string { return uriScheme + server + "/" + uri }

// splitURI undoes nsURI.
func splitURI(uri string) (server, rest string, ok bool) {
	s, ok := strings.CutPrefix(uri, uriScheme)
	if !ok {
		return "", "", false
	}
	server, rest, ok = strings.Cut(s, "/")
	return server, rest, ok && server != "" && rest != ""
}

// splitName undoes nsName for a server of up.
func (s *Server) splitName(name string) (server, rest string, ok bool) {
	for _, sv := range s.cfg.Upstream.Servers() {
		if r, ok := strings.CutPrefix(name, "mcp__"+sv+"__"); ok && r != "" {
			return sv, r, true
		}
	}
	return "", "", false
}

func (s *Server) hidden(name string) bool {
	return s.cfg.Hidden != nil && s.cfg.Hidden(name)
}

// hiddenIn is hidden for session x: its own Hidden (Config.SessionRules)
// when it has one.
func (s *Server) hiddenIn(x *session, name string) bool {
	if x != nil && x.rules.Hidden != nil {
		return x.rules.Hidden(name)
	}
	return s.hidden(name)
}

// hiddenFunc is the session's hidden predicate (nil: none).
func (x *session) hiddenFunc() func(string) bool {
	if x.rules.Hidden != nil {
		return x.rules.Hidden
	}
	return x.srv.cfg.Hidden
}

// proxy answers the resources and prompts methods; ok is false for any
// other method.
func (s *Server) proxy(ctx context.Context, x *session, method string, req mcp.Request) (r mcp.Result, ok bool, err error) {
	up := s.cfg.Upstream
	switch method {
	case "resources/list":
		out := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
		for _, sv := range up.Servers() {
			for _, res := range first(s.upstreamResources(ctx, sv)) {
				c := *res
				c.Name, c.URI = nsName(sv, res.Name), nsURI(sv, res.URI)
				if !s.hiddenIn(x, c.Name) {
					out.Resources = append(out.Resources, &c)
				}
			}
		}
		return out, true, nil
	case "resources/templates/list":
		out := &mcp.ListResourceTemplatesResult{ResourceTemplates: []*mcp.ResourceTemplate{}}
		for _, sv := range up.Servers() {
			for _, t := range first(s.upstreamTemplates(ctx, sv)) {
				c := *t
				c.Name, c.URITemplate = nsName(sv, t.Name), nsURI(sv, t.URITemplate)
				if !s.hiddenIn(x, c.Name) {
					out.ResourceTemplates = append(out.ResourceTemplates, &c)
				}
			}
		}
		return out, true, nil
	case "resources/read":
		p, _ := req.GetParams().(*mcp.ReadResourceParams)
		if p == nil {
			return nil, false, nil
		}
		sv, uri, ok := splitURI(p.URI)
		cs := s.known(sv)
		if !ok || cs == nil {
			return nil, true, fmt.Errorf("resource %q: not found", p.URI)
		}
		names, sure := s.readNames(ctx, sv, uri)
		if !sure || s.anyHiddenIn(x, names) {
			return nil, true, fmt.Errorf("resource %q: denied by a permission rule", p.URI)
		}
		args, _ := json.Marshal(map[string]string{"uri": uri})
		if err := s.access(ctx, x, names, args, "read the resource "+p.URI); err != nil {
			return nil, true, fmt.Errorf("resource %q: %w", p.URI, err)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		if err != nil {
			return nil, true, fmt.Errorf("resource %q: %w", p.URI, err)
		}
		for _, c := range res.Contents {
			if c != nil && c.URI != "" {
				c.URI = nsURI(sv, c.URI)
			}
		}
		return res, true, nil
	case "prompts/list":
		out := &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{}}
		for _, sv := range up.Servers() {
			for _, pr := range s.upstreamPrompts(ctx, sv) {
				c := *pr
				c.Name = nsName(sv, pr.Name)
				if !s.hiddenIn(x, c.Name) {
					out.Prompts = append(out.Prompts, &c)
				}
			}
		}
		return out, true, nil
	case "prompts/get":
		p, _ := req.GetParams().(*mcp.GetPromptParams)
		if p == nil {
			return nil, false, nil
		}
		sv, name, ok := s.splitName(p.Name)
		cs := s.known(sv)
		if !ok || cs == nil {
			return nil, true, fmt.Errorf("prompt %q: not found", p.Name)
		}
		if s.hiddenIn(x, p.Name) {
			return nil, true, fmt.Errorf("prompt %q: denied by a permission rule", p.Name)
		}
		args, err := json.Marshal(p.Arguments)
		if err != nil || p.Arguments == nil {
			args = []byte("{}")
		}
		if err := s.access(ctx, x, []string{p.Name}, args, "get the prompt "+p.Name+" with the arguments "+string(args)); err != nil {
			return nil, true, fmt.Errorf("prompt %q: %w", p.Name, err)
		}
		res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: p.Arguments})
		if err != nil {
			return nil, true, fmt.Errorf("prompt %q: %w", p.Name, err)
		}
		return res, true, nil
	case "completion/complete":
		p, _ := req.GetParams().(*mcp.CompleteParams)
		if p == nil {
			return nil, false, nil
		}
		r, err := s.complete(ctx, x, p)
		if err != nil {
			return nil, true, err
		}
		return r, true, nil
	case "resources/subscribe", "resources/unsubscribe":
		// Decided and done upstream here; the go-sdk then records (or
		// drops) the session's subscription, through which
		// ResourceUpdated reaches it.
		if err := s.subscription(ctx, x, method, req); err != nil {
			return nil, true, err
		}
		return nil, false, nil
	}
	return nil, false, nil
}

// known is server sv's session when sv is mounted and connected.
func (s *Server) known(sv string) *mcp.ClientSession {
	if sv == "" {
		return nil
	}
	return s.cfg.Upstream.Session(sv)
}

// readable reports whether uri of sv may be read: the listed resource's
// namespaced name is not hidden; a URI no resource lists (a template's)
// only when none of sv's templates is hidden. Unsure means no.
// A listing that failed or was cut short is unsure: the read is refused
// (a denied resource could be the one not listed).
func (s *Server) readable(ctx context.Context, sv, uri string) bool {
	names, sure := s.readNames(ctx, sv, uri)
	return sure && !s.anyHidden(names)
}

// readNames returns the namespaced names whose rules decide a read of
// uri of sv: the listed resource's name, or, for a URI no resource lists,
// the name of every one of sv's templates and mcp__sv__*. sure is false
// when a listing failed or was cut short.
func (s *Server) readNames(ctx context.Context, sv, uri string) (names []string, sure bool) {
	resources, complete := s.upstreamResources(ctx, sv)
	if !complete {
		return nil, false
	}
	for _, r := range resources {
		if r.URI == uri {
			return []string{nsName(sv, r.Name)}, true
		}
	}
	templates, complete := s.upstreamTemplates(ctx, sv)
	if !complete {
		return nil, false
	}
	for _, t := range templates {
		names = append(names, nsName(sv, t.Name))
	}
	return append(names, nsName(sv, "*")), true
}

func (s *Server) anyHiddenIn(x *session, names []string) bool {
	for _, n := range names {
		if s.hiddenIn(x, n) {
			return true
		}
	}
	return false
}

func (s *Server) anyHidden(names []string) bool {
	for _, n := range names {
		if s.hidden(n) {
			return true
		}
	}
	return false
}

// access applies Config.Access to a read or get decided by names (the
// strongest verdict wins): nil to proceed, else why not. An ask goes to
// the approval service with the session's agent, the first asking name as
// the tool and what is asked for in the message; only allowed-once,
// answered while ctx is live, proceeds.
func (s *Server) access(ctx context.Context, x *session, names []string, args []byte, what string) error {
	acc := s.cfg.Access
	if x != nil && x.rules.Access != nil {
		acc = x.rules.Access
	}
	if acc == nil {
		return nil
	}
	var d AccessDecision
	name := ""
	for _, n := range names {
		if a := acc(n, args); name == "" || a.Verdict > d.Verdict {
			d, name = a, n
		}
	}
	switch d.Verdict {
	case AccessAllow:
		return nil
	case AccessAsk:
	default:
		return fmt.Errorf("denied by a permission rule (%s)", d.Reason)
	}
	ap, ok := tools.ApprovalService.Lookup(s.c)
	if !ok || ap == nil || x == nil {
		return fmt.Errorf("approval is required (%s), but no one can answer", d.Reason)
	}
	// The reason says what is asked for, so that an approver without the
	// elicitation's message (the console, Config.Approver) shows it too.
	req := tools.ApprovalRequest{Agent: x.key, Tool: name, CallID: "access:" + strconv.FormatUint(x.callSeq.Add(1), 10), Reason: what + "; " + d.Reason}
	o, err := tools.SafeApprove(context.WithValue(ctx, accessKey{}, what), ap, req)
	if ctx.Err() != nil {
		return fmt.Errorf("approval is required (%s): %w", d.Reason, ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("approval is required (%s), and asking failed: %w", d.Reason, err)
	}
	if o != tools.AllowedOnce {
		return fmt.Errorf("approval is required (%s), and the answer was %q", d.Reason, o)
	}
	return nil
}

// accessKey is the context key of what an access ask is for ("read the
// resource …"), which the approval message shows.
type accessKey struct{}

// upstreamResources lists sv's resources (every page, bounded); a server
// that is down or fails lists none.
//
// complete is false when the listing failed or was cut at maxProxyPages:
// a permission decision must not rest on it (see readable).
func (s *Server) upstreamResources(ctx context.Context, sv string) (out []*mcp.Resource, complete bool) {
	cs := s.known(sv)
	if cs == nil || cs.InitializeResult() == nil || cs.InitializeResult().Capabilities.Resources == nil {
		return nil, cs != nil
	}
	cursor := ""
	for range maxProxyPages {
		r, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			s.log.Warn().Err(err).Str("server", sv).Msg("resources/list")
			return out, false
		}
		out = append(out, r.Resources...)
		if cursor = r.NextCursor; cursor == "" {
			return out, true
		}
	}
	return out, false
}

// upstreamTemplates lists sv's resource templates; complete as for
// upstreamResources.
func (s *Server) upstreamTemplates(ctx context.Context, sv string) (out []*mcp.ResourceTemplate, complete bool) {
	cs := s.known(sv)
	if cs == nil || cs.InitializeResult() == nil || cs.InitializeResult().Capabilities.Resources == nil {
		return nil, cs != nil
	}
	cursor := ""
	for range maxProxyPages {
		r, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			s.log.Warn().Err(err).Str("server", sv).Msg("resources/templates/list")
			return out, false
		}
		out = append(out, r.ResourceTemplates...)
		if cursor = r.NextCursor; cursor == "" {
			return out, true
		}
	}
	return out, false
}

func (s *Server) upstreamPrompts(ctx context.Context, sv string) []*mcp.Prompt {
	cs := s.known(sv)
	if cs == nil || cs.InitializeResult() == nil || cs.InitializeResult().Capabilities.Prompts == nil {
		return nil
	}
	var out []*mcp.Prompt
	cursor := ""
	for range maxProxyPages {
		r, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			s.log.Warn().Err(err).Str("server", sv).Msg("prompts/list")
			return out
		}
		out = append(out, r.Prompts...)
		if cursor = r.NextCursor; cursor == "" {
			break
		}
	}
	return out
}

// first is the listing of an upstream list call, whether complete or not
// (what is listed to a client may be partial; what decides may not).
func first[T any](v T, _ bool) T { return v }
