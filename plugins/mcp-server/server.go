package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "mcp-server"

// ProtocolVersions are the MCP protocol versions served, newest first:
// the session-based ones. Each session is an agent scope and its asks are
// elicitations sent mid-call, which the sessionless 2026-07-28 protocol
// does not have; a client offering it is answered with 2025-11-25 (the
// go-sdk client falls back by itself).
var ProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// MetaError is the _meta key of an isError result's error class, its
// error code and name: {"code": "DENIED", "name": "ToolDenied"} for a call
// a tools/pre-execute listener (a permission rule) denied.
const MetaError = "dsh/error"

// MetaAdditionalContext is the _meta key of a result's additional context
// (an array of strings), when it has some.
const MetaAdditionalContext = "dsh/additionalContext"

// MetaAnnotations is the _meta key of a served tool with behaviour hints
// (annotations): {"trusted": false} when they are what an untrusted
// server claims, true when its server is configured as trusted.
const MetaAnnotations = "dsh/annotations"

// MetaApproval is the _meta key of an approval elicitation: {"tool",
// "callId", "reason"}.
const MetaApproval = "dsh/approval"

// Config configures a [Server].
type Config struct {
	// Implementation is the name and version announced to clients;
	// empty means "dsh".
	Implementation mcp.Implementation
	// Instructions are sent to clients on initialize.
	Instructions string
	// Approver answers the asks of sessions whose client cannot take an
	// elicitation. Nil means the approval service provided when the server
	// was created (tools.ApprovalService), if any; with none, such an ask
	// is answered unavailable and the call denied.
	Approver tools.Approver
	// NoClientApproval keeps asks away from the calling client: an ask is
	// never sent as an elicitation to the session that made the call, but
	// goes to Approver (or the approval service found at New), or is
	// answered unavailable (the call denied). By default a client that
	// takes elicitations answers its own session's asks, which is that
	// client's own consent: right for a person's own client, not for an
	// agent that should not approve itself.
	NoClientApproval bool
	// ElicitationTimeout bounds how long an approval elicitation waits for
	// the client's answer; past it the ask is answered unavailable and
	// the call denied (APPROVAL_UNAVAILABLE). Zero means no bound other
	// than the call's own context. Negative is invalid.
	ElicitationTimeout time.Duration
	// OnSession, when set, is called with each new session's agent scope
	// before its tools are listed: register session-only tools, guards,
	// restrictions or listeners through scope (they end with the session).
	// An error refuses the session ([ErrSessionRefused]; over HTTP, 403
	// with a JSON-RPC error).
	OnSession func(scope *host.Context, info SessionInfo) error
	// Logger receives the server's log lines; nil means the creating
	// context's logger.
	Logger *zerolog.Logger
	// Hidden, when set, names tools not listed in tools/list (such as the
	// tools a permission rule denies without condition,
	// permissions.Policy.DeniesTool); a call to one is still decided by
	// the pipeline as any other.
	Hidden func(tool string) bool
	// Upstream, when set, serves the mounted servers' resources, resource
	// templates and prompts under the tools' namespacing (see proxy.go and
	// the package doc); Hidden applies to their namespaced names.
	Upstream Upstream
	// Access, when set, decides each resources/read and prompts/get of an
	// Upstream resource or prompt by the rules that name it: name is the
	// namespaced name, args {"uri": <the upstream URI>} for a read and the
	// prompt's arguments for a get. AccessDeny refuses; AccessAsk asks as
	// a tool call's ask does (the approval service: the session's client
	// or the Approver) and refuses unless the answer is allowed-once, so
	// it fails closed when no one can answer.
	Access func(name string, args json.RawMessage) AccessDecision
	// SessionRules, when set, is asked once per new session (after
	// OnSession) for that session's own Hidden and Access, which replace
	// the server-wide ones for it (the dsh gateway's per-identity
	// permission profiles); a nil field of its answer keeps the
	// server-wide one.
	SessionRules func(info SessionInfo) SessionRules

	// MaxSessions bounds the sessions open at once; a session past it is
	// refused ([ErrTooManySessions], HTTP 503 with a JSON-RPC error).
	// MaxSessionsPerIdentity bounds them per authenticated identity
	// ([SessionInfo].Identity; sessions without one count together).
	// Zero means no bound.
	MaxSessions, MaxSessionsPerIdentity int
	// MaxCallsPerSession bounds one session's tools/call requests in
	// flight, MaxCalls those of every session together; a call past
	// either is answered with a JSON-RPC error (code [CodeLimit]) and does
	// not run. Zero means no bound.
	MaxCallsPerSession, MaxCalls int
}

// CodeLimit is the JSON-RPC error code of a request refused by a limit of
// [Config] (too many sessions, too many calls in flight).
const CodeLimit = -32000

// ErrSessionRefused refuses a session [Config].OnSession refused (HTTP
// 403 with a JSON-RPC error).
var ErrSessionRefused = errors.New("mcpserver: session refused")

// ErrTooManySessions refuses a session past [Config].MaxSessions or
// MaxSessionsPerIdentity.
var ErrTooManySessions = errors.New("mcpserver: too many sessions")

// SessionRules are one session's own [Config].Hidden and Access.
type SessionRules struct {
	Hidden func(name string) bool
	Access func(name string, args json.RawMessage) AccessDecision
}

// SessionInfo describes a session to [Config.OnSession].
type SessionInfo struct {
	// Scope is the session's agent scope key.
	Scope host.ScopeKey
	// Transport is "stdio", "http" or "custom".
	Transport string
	// Identity is the authenticated caller that opened the session over
	// HTTP (the go-sdk auth.TokenInfo's UserID), or "". Only requests
	// of the same identity reach the session afterwards.
	Identity string
	// Token is the authenticated token's information (its UserID is
	// Identity; Extra holds what the authentication middleware put
	// there, such as a JWT's claims), or nil.
	Token *auth.TokenInfo
}

// Server serves a tool registry to MCP clients. Create it with [New]; it
// is safe for concurrent use. Every session it accepts is an agent scope
// that ends with the session.
type Server struct {
	c    *host.Context
	reg  *tools.Registry
	cfg  Config
	log  *zerolog.Logger
	impl mcp.Implementation

	fallback tools.Approver

	mu       sync.Mutex
	sessions map[host.ScopeKey]*session
	reserved map[string]int // sessions being set up, by identity (counted by the limits)
	closed   bool
	wg       sync.WaitGroup // session goroutines

	probe *mcp.Server // answers the HTTP handler's per-request version lookups

	calls atomic.Int64 // tools/call requests in flight, every session

	// requests maps the private request-tag header of each HTTP POST
	// being served to that request's context, so that a request's calls
	// end when the request goes away (see httpHandler.ServeHTTP).
	requests sync.Map // string → context.Context

	// The forwarding of the upstream's notifications (subscribe.go).
	notices     chan notice
	noticesDone chan struct{}
	stopWatch   func()
	endOnce     sync.Once
	bg          context.Context // cancelled by Close
	bgCancel    context.CancelFunc
	bgWG        sync.WaitGroup
	subMu       sync.Mutex
	subs        map[string]*upSub // namespaced URI → its subscription
	bgClosed    bool              // no more background releases (subMu)
}

var sessionSeq atomic.Uint64

// New creates a server for reg, owned by c's fiber: when that fiber is
// disposed the server is closed (every session ends, its scope with it).
// It provides tools.ApprovalService through c, routing each ask to the
// client of the asking session when that client accepts elicitations and
// to cfg.Approver (or the approval service found at New) otherwise. An
// approval service provided after New replaces the router (the newest
// provider wins): load it before New, or pass it as cfg.Approver.
func New(c *host.Context, reg *tools.Registry, cfg Config) (*Server, error) {
	if c == nil || reg == nil {
		return nil, errors.New("mcpserver: New needs a context and a registry")
	}
	if cfg.ElicitationTimeout < 0 {
		return nil, fmt.Errorf("mcpserver: negative ElicitationTimeout %v", cfg.ElicitationTimeout)
	}
	s := &Server{c: c, reg: reg, cfg: cfg, sessions: map[host.ScopeKey]*session{}, reserved: map[string]int{}, subs: map[string]*upSub{}}
	s.log = cfg.Logger
	if s.log == nil {
		s.log = c.Logger()
	}
	s.impl = cfg.Implementation
	if s.impl.Name == "" {
		s.impl.Name = "dsh"
	}
	s.fallback = cfg.Approver
	if s.fallback == nil {
		if ap, ok := tools.ApprovalService.Lookup(c); ok {
			s.fallback = ap
		}
	}
	s.probe = mcp.NewServer(&s.impl, s.serverOptions())
	if _, err := c.Track(host.EffectKind("mcp-server"), "mcp server", s.Close); err != nil {
		return nil, err
	}
	if _, err := host.On(c, tools.Change, func(context.Context, tools.ChangeNotice) error {
		s.mu.Lock()
		for _, ss := range s.sessions {
			ss.markDirty()
		}
		s.mu.Unlock()
		return nil
	}); err != nil {
		return nil, err
	}
	if _, err := tools.ApprovalService.Provide(c, tools.ApproverFunc(s.approve)); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if !s.closed {
		s.startWatch()
	}
	s.mu.Unlock()
	return s, nil
}

// Refresh makes every session recompute its tool list (and tell its
// client, list_changed, when the list changed), as a registry change
// does: call it when what Config.Hidden reports has changed.
func (s *Server) Refresh() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		ss.markDirty()
	}
}

// serverOptions are the options of a session's server. With an
// Upstream, resources and prompts are offered (with list_changed when the
// upstream reports its notifications); completions and resource
// subscriptions when a mounted server connected now offers them.
func (s *Server) serverOptions() *mcp.ServerOptions {
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	o := &mcp.ServerOptions{
		Instructions:              s.cfg.Instructions,
		Capabilities:              caps,
		SupportedProtocolVersions: ProtocolVersions,
	}
	if s.cfg.Upstream == nil {
		return o
	}
	_, watched := s.cfg.Upstream.(UpstreamWatcher)
	caps.Resources = &mcp.ResourceCapabilities{ListChanged: watched}
	caps.Prompts = &mcp.PromptCapabilities{ListChanged: watched}
	for _, sv := range s.cfg.Upstream.Servers() {
		cs := s.known(sv)
		if cs == nil || cs.InitializeResult() == nil || cs.InitializeResult().Capabilities == nil {
			continue
		}
		c := cs.InitializeResult().Capabilities
		if c.Completions != nil {
			caps.Completions = &mcp.CompletionCapabilities{}
		}
		if c.Resources != nil && c.Resources.Subscribe && watched {
			caps.Resources.Subscribe = true
		}
	}
	if caps.Resources.Subscribe {
		// The proxy decides and subscribes upstream first (the session
		// middleware); these only let the go-sdk record the session's
		// subscriptions, through which ResourceUpdated reaches it.
		o.SubscribeHandler = func(context.Context, *mcp.SubscribeRequest) error { return nil }
		o.UnsubscribeHandler = func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	}
	return o
}

// Run serves one session over t (mcp.StdioTransport for stdio) until the
// client disconnects, ctx is done, or the server is closed; the session's
// scope is gone when it returns.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	sess, err := s.Connect(ctx, t)
	if err != nil {
		return err
	}
	select {
	case <-ctx.Done():
	case <-sess.s.done:
	}
	return sess.Close()
}

// Session is one connected MCP session.
type Session struct{ s *session }

// Scope is the session's agent scope key.
func (x *Session) Scope() host.ScopeKey { return x.s.key }

// Close ends the session and waits until its scope is disposed and its
// calls have returned. It is idempotent.
func (x *Session) Close() error { return x.s.close() }

// Wait blocks until the session has ended and been cleaned up.
func (x *Session) Wait() { <-x.s.cleaned }

// Connect accepts one session over t and returns once the transport is
// connected (the client's initialize is served afterwards, as it
// arrives). The session lasts until the client disconnects, [Session.Close]
// or [Server.Close]; ctx only bounds the connection step.
func (s *Server) Connect(ctx context.Context, t mcp.Transport) (*Session, error) {
	sess, err := s.newSession("custom", "", nil)
	if err != nil {
		return nil, err
	}
	if _, ok := t.(*mcp.StdioTransport); ok {
		sess.info.Transport = "stdio"
	}
	ss, err := sess.mcp.Connect(ctx, t, nil)
	if err != nil {
		sess.cleanup()
		return nil, fmt.Errorf("mcpserver: connect: %w", err)
	}
	sess.start(ss)
	return &Session{sess}, nil
}

// Handler returns an http.Handler serving streamable HTTP: each session
// (each initialize without an Mcp-Session-Id) is its own agent scope.
// opts may be nil; Stateless is refused (sessions are the unit of scope
// and approval).
func (s *Server) Handler(opts *mcp.StreamableHTTPOptions) (http.Handler, error) {
	var o mcp.StreamableHTTPOptions
	if opts != nil {
		o = *opts
	}
	if o.Stateless {
		return nil, errors.New("mcpserver: stateless streamable HTTP has no sessions to scope; leave Stateless false")
	}
	h := &httpHandler{s: s}
	h.inner = mcp.NewStreamableHTTPHandler(h.getServer, &o)
	return h, nil
}

type holderKey struct{}

// AccessVerdict is what [Config].Access decides for a resource read or a
// prompt get.
type AccessVerdict int

// The access verdicts, weakest first.
const (
	AccessAllow AccessVerdict = iota
	AccessAsk
	AccessDeny
)

// AccessDecision is [Config].Access's answer: the verdict and a one-line
// reason (the rule that decided), shown when asking or refusing.
type AccessDecision struct {
	Verdict AccessVerdict
	Reason  string
}

// requestTagHeader is the header through which a handler finds the HTTP
// request that carried its call. A client's own value is removed.
const requestTagHeader = "Dsh-Internal-Request-Tag"

// requestContext returns the context of the HTTP request that carried
// req, and whether req came over HTTP. A tagged request whose HTTP
// request has already ended gets a cancelled context: it was abandoned.
func (s *Server) requestContext(req mcp.Request) (context.Context, bool) {
	if req == nil {
		return nil, false
	}
	ex := req.GetExtra()
	if ex == nil || ex.Header == nil {
		return nil, false
	}
	tag := ex.Header.Get(requestTagHeader)
	if tag == "" {
		return nil, false
	}
	if v, ok := s.requests.Load(tag); ok {
		return v.(context.Context), true
	}
	return canceledContext, true
}

var canceledContext = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

type holder struct {
	sess *session
}

type httpHandler struct {
	s     *Server
	inner *mcp.StreamableHTTPHandler
}

func (h *httpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	identity := ""
	ti := auth.TokenInfoFromContext(r.Context())
	if ti != nil {
		identity = ti.UserID
	}
	if id := r.Header.Get("Mcp-Session-Id"); id != "" && r.Method == http.MethodDelete {
		// Closing a session cancels its calls first, so that the go-sdk's
		// Close, which waits for them, answers at once. Only the identity
		// that owns the session may (the go-sdk refuses the others).
		if x := h.s.sessionByID(id); x != nil && x.info.Identity == identity {
			x.cancel()
		}
	}
	r.Header.Del(requestTagHeader) // only this handler sets it
	if r.Method == http.MethodPost {
		// The go-sdk runs a request's calls on the session's context,
		// not the HTTP request's, so a client that drops the request
		// without a cancel notification would leave them running. The
		// request's context is found again from the header the go-sdk
		// hands to the handlers (RequestExtra.Header); it is cancelled
		// when the client disconnects and when ServeHTTP returns, by
		// which time a request's calls have answered unless the request
		// was abandoned.
		tag := rand.Text()
		r.Header.Set(requestTagHeader, tag)
		h.s.requests.Store(tag, r.Context())
		defer h.s.requests.Delete(tag)
	}
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") != "" {
		h.inner.ServeHTTP(w, r)
		return
	}
	sess, err := h.s.newSession("http", identity, ti)
	if err != nil {
		h.s.log.Warn().Err(err).Str("identity", identity).Msg("mcp session refused")
		status := http.StatusServiceUnavailable // a limit: retry later
		if safeerr.Is(err, ErrSessionRefused) {
			status = http.StatusForbidden // OnSession said no: retrying does not help
		}
		writeJSONRPCError(w, status, err.Error())
		return
	}
	hd := &holder{sess: sess}
	h.inner.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), holderKey{}, hd)))
	if hd.sess == nil {
		return
	}
	var ss *mcp.ServerSession
	for x := range hd.sess.mcp.Sessions() {
		ss = x
	}
	if ss == nil {
		hd.sess.cleanup() // the session never started (or already ended)
		return
	}
	hd.sess.start(ss)
}

// getServer returns a fresh session's server for a POST that opens a
// session, and a shared, never connected server for the handler's other
// lookups.
func (h *httpHandler) getServer(r *http.Request) *mcp.Server {
	hd, ok := r.Context().Value(holderKey{}).(*holder)
	if !ok {
		return h.s.probe
	}
	return hd.sess.mcp
}

// writeJSONRPCError answers an HTTP request with a JSON-RPC error (id
// null, code CodeLimit) and the given HTTP status.
func writeJSONRPCError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": CodeLimit, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// sessionByID returns the live session whose MCP session id is id.
func (s *Server) sessionByID(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.sessions {
		if ss := x.ss.Load(); ss != nil && ss.ID() == id {
			return x
		}
	}
	return nil
}

// Close ends every session and waits until their scopes are disposed and
// their goroutines have returned. Later sessions are refused. It is
// idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	all := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	var errs []error
	for _, ss := range all {
		errs = append(errs, ss.close())
	}
	s.wg.Wait()
	s.endOnce.Do(s.endWatch)
	return errors.Join(errs...)
}

// Sessions returns the scope keys of the live sessions.
func (s *Server) Sessions() []host.ScopeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]host.ScopeKey, 0, len(s.sessions))
	for k := range s.sessions {
		out = append(out, k)
	}
	return out
}

var errElicitationTimeout = errors.New("the client did not answer the elicitation in time")

// ErrClosed is returned for a session offered to a closed server.
var ErrClosed = errors.New("mcpserver: server closed")

func (s *Server) newSession(transport, identity string, tok *auth.TokenInfo) (*session, error) {
	key := host.ScopeKey("mcp-" + strconv.FormatUint(sessionSeq.Add(1), 10))
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	if err := s.roomLocked(identity); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.reserved[identity]++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.reserved[identity]--
		if s.reserved[identity] == 0 {
			delete(s.reserved, identity)
		}
		s.mu.Unlock()
	}()
	scope, err := s.c.Scope(key)
	if err != nil {
		return nil, fmt.Errorf("mcpserver: session scope: %w", err)
	}
	sess := &session{
		srv: s, key: key, scope: scope,
		info:    SessionInfo{Scope: key, Transport: transport, Identity: identity, Token: tok},
		dirty:   make(chan struct{}, 1),
		done:    make(chan struct{}),
		cleaned: make(chan struct{}),
		current: map[string]string{},
	}
	sess.ctx, sess.cancel = context.WithCancel(scope.Lifetime()) // ends with the session's scope at the latest
	if s.cfg.OnSession != nil {
		if err := safeOnSession(s.cfg.OnSession, scope, sess.info); err != nil {
			_ = scope.Fiber().Dispose()
			return nil, fmt.Errorf("%w: %w", ErrSessionRefused, err)
		}
	}
	if s.cfg.SessionRules != nil {
		sess.rules = s.cfg.SessionRules(sess.info)
	}
	sess.mcp = mcp.NewServer(&s.impl, s.serverOptions())
	sess.mcp.AddReceivingMiddleware(sess.middleware)
	sess.sync()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = scope.Fiber().Dispose()
		return nil, ErrClosed
	}
	s.sessions[key] = sess
	s.mu.Unlock()
	return sess, nil
}

// roomLocked refuses a new session of identity past the session limits,
// counting the sessions being set up. s.mu is held.
func (s *Server) roomLocked(identity string) error {
	all := 0
	for _, n := range s.reserved {
		all += n
	}
	if m := s.cfg.MaxSessions; m > 0 && len(s.sessions)+all >= m {
		return fmt.Errorf("%w: %d open, the limit; close one (HTTP DELETE) or retry later", ErrTooManySessions, m)
	}
	if m := s.cfg.MaxSessionsPerIdentity; m > 0 {
		n := 0
		for _, x := range s.sessions {
			if x.info.Identity == identity {
				n++
			}
		}
		if n+s.reserved[identity] >= m {
			return fmt.Errorf("%w: %d open for this identity, the limit; close one (HTTP DELETE) or retry later", ErrTooManySessions, m)
		}
	}
	return nil
}

func safeOnSession(f func(*host.Context, SessionInfo) error, c *host.Context, info SessionInfo) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("OnSession panicked: %v", v)
		}
	}()
	return f(c, info)
}

func (s *Server) session(key host.ScopeKey) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[key]
}

// ForwardElicitation sends a mounted server's elicitation request to the
// client of the session whose agent is agent, with the server's own
// message (prefixed with who asks) and requested schema, and returns the
// client's answer. It answers decline, never accept, when there is no
// such session, its client does not take form elicitations, the request
// is not a form one, or [Config].NoClientApproval keeps asks from
// clients. Use it as the Elicitor of the mounted servers
// (plugins/mcp-client Config.Elicitor).
func (s *Server) ForwardElicitation(ctx context.Context, agent host.ScopeKey, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	decline := &mcp.ElicitResult{Action: "decline"}
	if p == nil || s.cfg.NoClientApproval || agent == "" || (p.Mode != "" && p.Mode != "form") {
		return decline, nil
	}
	sess := s.session(agent)
	if sess == nil {
		return decline, nil
	}
	ss := sess.elicitable()
	if ss == nil {
		return decline, nil
	}
	fwd := &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("The MCP server %q asks:\n\n%s", server, p.Message),
		RequestedSchema: p.RequestedSchema,
		Meta:            mcp.Meta{MetaElicitation: map[string]string{"server": server}},
	}
	if d := s.cfg.ElicitationTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res, err := ss.Elicit(ctx, fwd)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// MetaElicitation is the _meta key of a forwarded elicitation: {"server"}
// names the mounted server that asks.
const MetaElicitation = "dsh/elicitation"

// approve routes an ask: to the session's client when it takes
// elicitations, else to the fallback.
func (s *Server) approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	if sess := s.session(req.Agent); sess != nil && !s.cfg.NoClientApproval {
		if ss := sess.elicitable(); ss != nil {
			if d := s.cfg.ElicitationTimeout; d > 0 {
				ectx, cancel := context.WithTimeoutCause(ctx, d, errElicitationTimeout)
				defer cancel()
				o, err := elicit(ectx, ss, req)
				if ctx.Err() == nil && safeerr.Is(context.Cause(ectx), errElicitationTimeout) {
					return tools.Unavailable, nil
				}
				return o, err
			}
			return elicit(ctx, ss, req)
		}
	}
	if s.fallback == nil {
		return tools.Unavailable, nil
	}
	return s.fallback.Approve(ctx, req)
}
