package acp

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Peer is the part of an ACP agent-side connection the bridge uses:
// *acpsdk.AgentSideConnection implements it. SessionUpdate may block (a
// peer that stops reading blocks the write); the bridge calls it from its
// own goroutine, never from a tool call. RequestPermission must return
// once ctx is done or the connection is closed, as the SDK's does.
type Peer interface {
	SessionUpdate(ctx context.Context, n acpsdk.SessionNotification) error
	RequestPermission(ctx context.Context, r acpsdk.RequestPermissionRequest) (acpsdk.RequestPermissionResponse, error)
}

var _ Peer = (*acpsdk.AgentSideConnection)(nil)

// Errors of [Bridge.Attach] and of a session.
var (
	// ErrScopeBound: the agent scope is already attached to a session.
	ErrScopeBound = errors.New("acp: the agent scope is already attached to a session")
	// ErrSessionClosed: the session was closed (or its bridge disposed).
	ErrSessionClosed = errors.New("acp: session closed")
	// ErrSessionBroken: an update could not be delivered (the peer read
	// nothing for Config.StallTimeout while the queue was full, or the
	// connection failed); the session sends nothing more and answers asks
	// unavailable.
	ErrSessionBroken = errors.New("acp: session broken: an update could not be delivered")
)

// Defaults of [Config].
const (
	DefaultMaxQueued    = 1024
	DefaultMaxRawBytes  = 64 << 10
	DefaultStallTimeout = 30 * time.Second
	// MaxRules bounds the allow_always / reject_always rules one session
	// remembers; an answer beyond it applies once and is not remembered.
	MaxRules = 1024
	// recentIDs is how many tool call ids a session remembers to keep
	// them unique.
	recentIDs = 4096
)

// Bridge turns the tool calls of attached agent scopes into ACP session
// updates and answers their asks through session/request_permission. It
// is safe for concurrent use. Make one with [Plugin] (which installs its
// listeners and provides it through [Service]) or with [Install].
type Bridge struct {
	cfg  Config
	log  zerolog.Logger
	life context.Context // the run of the plugin that installed the bridge

	mu       sync.RWMutex
	sessions map[host.ScopeKey]*Session
	closed   bool

	// The listeners are registered through c while a session is attached
	// (listening holds their disposers), and unregistered when the last
	// one detaches: a bridge without sessions adds nothing to a call (no
	// listener makes the pipeline take its wrapper and observer paths).
	// lmu serializes the changes; each makes the registration match the
	// sessions present at that moment.
	c         *host.Context
	lmu       sync.Mutex
	listening []host.Disposer
}

// SessionOptions configure one attached session.
type SessionOptions struct {
	// Cwd is the session's working directory (ACP's session/new cwd). When
	// set, relative card paths (locations and diffs) are sent resolved
	// against it, as ACP wants absolute paths. It must be absolute.
	Cwd string
}

// Attach binds an agent scope to an ACP session: from now on every call
// whose Call.Agent is scope is reported to peer as tool_call /
// tool_call_update notifications of sessionID, and its asks go to peer as
// session/request_permission. A scope has at most one session
// ([ErrScopeBound]). The session starts one goroutine that writes its
// updates in order; [Session.Close] stops it.
func (b *Bridge) Attach(scope host.ScopeKey, peer Peer, sessionID acpsdk.SessionId, opts SessionOptions) (*Session, error) {
	if peer == nil {
		return nil, errors.New("acp: Attach: nil peer")
	}
	if sessionID == "" {
		return nil, errors.New("acp: Attach: empty session id")
	}
	if scope == "" {
		return nil, fmt.Errorf("acp: Attach: %w: empty (calls without an agent have no session)", host.ErrInvalidScopeKey)
	}
	if err := host.ValidateScopeKey(string(scope)); err != nil {
		return nil, fmt.Errorf("acp: Attach: %w", err)
	}
	if opts.Cwd != "" && !filepath.IsAbs(opts.Cwd) {
		return nil, fmt.Errorf("acp: Attach: SessionOptions.Cwd %q is not absolute", opts.Cwd)
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrSessionClosed
	}
	if _, ok := b.sessions[scope]; ok {
		b.mu.Unlock()
		return nil, fmt.Errorf("%w: %q", ErrScopeBound, scope)
	}
	s := newSession(b, scope, peer, sessionID, opts)
	b.sessions[scope] = s
	b.mu.Unlock()
	if err := b.listen(); err != nil {
		// The plugin is going away (its fiber accepts no registration).
		s.Close()
		return nil, fmt.Errorf("acp: Attach: %w", err)
	}
	return s, nil
}

// listen makes the bridge's listeners registered exactly while a session
// is attached (see Bridge.listening).
func (b *Bridge) listen() error {
	b.lmu.Lock()
	defer b.lmu.Unlock()
	b.mu.RLock()
	want := len(b.sessions) > 0
	b.mu.RUnlock()
	switch {
	case want && b.listening == nil:
		ds, err := b.install(b.c)
		if err != nil {
			for _, d := range ds {
				_ = d()
			}
			return err
		}
		b.listening = ds
	case !want && b.listening != nil:
		var errs []error
		for _, d := range b.listening {
			errs = append(errs, d())
		}
		b.listening = nil
		return errors.Join(errs...)
	}
	return nil
}

// Session returns the session attached to scope, if any.
func (b *Bridge) Session(scope host.ScopeKey) (*Session, bool) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	s, ok := b.sessions[scope]
	return s, ok
}

func (b *Bridge) session(scope host.ScopeKey) *Session {
	if scope == "" {
		return nil
	}
	s, _ := b.Session(scope)
	return s
}

func (b *Bridge) detach(s *Session) {
	b.mu.Lock()
	if b.sessions[s.scope] == s {
		delete(b.sessions, s.scope)
	}
	b.mu.Unlock()
	if err := b.listen(); err != nil {
		b.log.Error().Str("error", safeerr.Text(err)).Msg("acp: unregistering the bridge's listeners failed")
	}
}

// Close closes every attached session and refuses new ones. Disposing the
// plugin's fiber calls it. It does not wait for writes a stuck peer holds
// (see [Session.Done]).
func (b *Bridge) Close() error {
	b.mu.Lock()
	b.closed = true
	all := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		all = append(all, s)
	}
	b.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
	return nil
}

// install registers the bridge's three listeners on c and returns their
// disposers (those registered so far, on an error).
func (b *Bridge) install(c *host.Context) (ds []host.Disposer, err error) {
	add := func(d host.Disposer, err error) error {
		if err == nil {
			ds = append(ds, d)
		}
		return err
	}
	if err := add(host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		if s := b.session(e.Agent()); s != nil {
			s.started(ctx, e)
		}
		return next(ctx)
	}, host.Prepend())); err != nil {
		return ds, err
	}
	if err := add(host.OnWaterfall(c, tools.ExecuteEvent, func(ctx context.Context, e *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		if s := b.session(e.Agent()); s != nil && e.Tool() != nil { // an unknown tool has no body to run
			s.running(ctx, e)
		}
		return next(ctx)
	}, host.Prepend())); err != nil {
		return ds, err
	}
	err = add(host.On(c, tools.ResultEvent, func(ctx context.Context, n tools.ResultNotice) error {
		e := n.Execution()
		if s := b.session(e.Agent()); s != nil {
			s.finished(ctx, e, n.Result())
		}
		return nil
	}))
	return ds, err
}

// Session is one agent scope's ACP session. It is safe for concurrent use.
//
// Updates are queued and written in order by the session's goroutine, so
// a tool call does not wait on the peer while the queue has room
// (Config.MaxQueued). When it is full, a call's pending and in_progress
// updates wait for room (a burst of calls goes at the pace of the peer),
// until the call's context is done; final updates never wait (they may
// exceed the bound, up to twice it). A peer that reads nothing for
// Config.StallTimeout while calls wait breaks the session, releasing them. For
// every call the client sees, in order: tool_call (pending), then
// tool_call_update (in_progress) when the body is about to run, then
// tool_call_update (completed or failed). A call denied before its body
// goes from pending to failed. Parallel calls of a batch interleave, but
// each call's own updates keep that order.
type Session struct {
	bridge *Bridge
	scope  host.ScopeKey
	peer   Peer
	id     acpsdk.SessionId
	m      mapper
	log    zerolog.Logger

	life     context.Context // cancelled by Close, or when the bridge's run ends
	stopLife context.CancelFunc
	done     chan struct{}
	wg       sync.WaitGroup // the writer and in-flight permission requests

	mu       sync.Mutex
	closed   bool
	broken   error
	queue    []acpsdk.SessionUpdate
	enqueued uint64
	written  uint64
	progress chan struct{} // closed (and replaced) when written advances or the session stops
	wake     chan struct{}
	calls    map[tools.Token]*callState
	live     map[acpsdk.ToolCallId]bool // ids of calls in flight
	used     map[acpsdk.ToolCallId]bool // the last recentIDs ids sent
	usedFIFO []acpsdk.ToolCallId
	seq      uint64
	turn     context.Context
	endTurn  context.CancelFunc
	rules    []rule
}

type callState struct {
	id      acpsdk.ToolCallId
	start   acpsdk.SessionUpdateToolCall
	running bool
}

func newSession(b *Bridge, scope host.ScopeKey, peer Peer, id acpsdk.SessionId, opts SessionOptions) *Session {
	s := &Session{
		bridge: b, scope: scope, peer: peer, id: id,
		m:        mapper{cwd: filepath.Clean(opts.Cwd), maxRaw: b.cfg.MaxRawBytes},
		log:      b.log.With().Str("acp_session", string(id)).Str("agent", string(scope)).Logger(),
		done:     make(chan struct{}),
		progress: make(chan struct{}),
		wake:     make(chan struct{}, 1),
		calls:    map[tools.Token]*callState{},
		live:     map[acpsdk.ToolCallId]bool{},
		used:     map[acpsdk.ToolCallId]bool{},
	}
	if opts.Cwd == "" {
		s.m.cwd = ""
	}
	s.life, s.stopLife = context.WithCancel(b.life) // ends with the bridge's plugin run at the latest
	s.turn, s.endTurn = context.WithCancel(context.Background())
	s.wg.Add(1)
	go s.writer()
	go func() {
		<-s.life.Done()
		s.wg.Wait()
		close(s.done)
	}()
	return s
}

// ID returns the ACP session id.
func (s *Session) ID() acpsdk.SessionId { return s.id }

// Scope returns the agent scope the session is attached to.
func (s *Session) Scope() host.ScopeKey { return s.scope }

// Close detaches the session: its calls are no longer reported, its
// permission requests in flight are withdrawn (the asks answer
// unavailable) and updates still queued are dropped (call [Session.Flush]
// first to deliver them). Close does not wait for the writer; see Done.
// Close is idempotent.
func (s *Session) Close() {
	s.bridge.detach(s)
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.queue = nil
		s.signalLocked()
	}
	endTurn := s.endTurn
	s.mu.Unlock()
	endTurn()
	s.stopLife()
}

// Done is closed once a closed session's goroutines have all returned. A
// write the peer never reads holds it open until the transport is closed.
func (s *Session) Done() <-chan struct{} { return s.done }

// Cancel cancels the session's current turn (call it from the agent's
// session/cancel handler): every permission request in flight answers
// cancelled, and the client is sent a $/cancel_request for it. Asks made
// after Cancel start a new turn.
func (s *Session) Cancel() {
	s.mu.Lock()
	end := s.endTurn
	s.turn, s.endTurn = context.WithCancel(context.Background())
	s.mu.Unlock()
	end()
}

// Err returns why the session sends nothing more ([ErrSessionClosed],
// an error wrapping [ErrSessionBroken]), or nil.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.broken != nil {
		return s.broken
	}
	if s.closed {
		return ErrSessionClosed
	}
	return nil
}

// Flush waits until every update queued so far has been written to the
// peer, ctx is done, or the session stops sending. It returns the
// session's error whenever the session is closed or broken (some update
// was then not delivered). A peer that reads nothing for
// Config.StallTimeout while Flush waits breaks the session, so Flush
// returns within that time whatever ctx. An agent calls it before answering session/prompt, so the turn's
// updates precede the response.
func (s *Session) Flush(ctx context.Context) error {
	s.mu.Lock()
	target := s.enqueued
	s.mu.Unlock()
	for {
		s.mu.Lock()
		if err := s.stoppedLocked(); err != nil {
			s.mu.Unlock()
			return err
		}
		if s.written >= target {
			s.mu.Unlock()
			return nil
		}
		written, ch := s.written, s.progress
		s.mu.Unlock()
		t := time.NewTimer(s.bridge.cfg.StallTimeout)
		select {
		case <-ch:
			t.Stop()
		case <-ctx.Done():
			t.Stop()
			return context.Cause(ctx)
		case <-t.C:
			s.mu.Lock()
			if s.written == written {
				s.breakLocked(fmt.Errorf("%w: the peer read nothing for %v with %d updates queued", ErrSessionBroken, s.bridge.cfg.StallTimeout, len(s.queue)))
			}
			s.mu.Unlock()
		}
	}
}

func (s *Session) stoppedLocked() error {
	if s.broken != nil {
		return s.broken
	}
	if s.closed {
		return ErrSessionClosed
	}
	return nil
}

// signalLocked wakes Flush waiters.
func (s *Session) signalLocked() {
	close(s.progress)
	s.progress = make(chan struct{})
}

// enqueueLocked queues u. When the queue is full and wait is set (the
// pending and in_progress updates, sent before a body runs), it waits for
// the writer to make room, releasing the lock meanwhile, until ctx is
// done; the session breaks when the writer makes no progress for
// Config.StallTimeout (the peer stopped reading). A final update (wait
// unset), or one whose ctx is done, is queued past the bound instead, up
// to a hard cap of twice it, beyond which the session breaks: each call's
// earlier updates waited for room, so the excess is bounded by the calls
// in flight.
func (s *Session) enqueueLocked(ctx context.Context, u acpsdk.SessionUpdate, wait bool) {
	max := s.bridge.cfg.MaxQueued
	for len(s.queue) >= max && !s.closed && s.broken == nil {
		if !wait || ctx.Err() != nil {
			if len(s.queue) < 2*max {
				break
			}
			s.breakLocked(fmt.Errorf("%w: %d updates queued (the peer is not keeping up)", ErrSessionBroken, len(s.queue)))
			return
		}
		written, ch := s.written, s.progress
		s.mu.Unlock()
		stalled := false
		t := time.NewTimer(s.bridge.cfg.StallTimeout)
		select {
		case <-ch:
		case <-ctx.Done():
		case <-t.C:
			stalled = true
		}
		t.Stop()
		s.mu.Lock()
		if stalled && s.written == written {
			s.breakLocked(fmt.Errorf("%w: the peer read nothing for %v with %d updates queued", ErrSessionBroken, s.bridge.cfg.StallTimeout, len(s.queue)))
		}
	}
	if s.closed || s.broken != nil {
		return
	}
	s.queue = append(s.queue, u)
	s.enqueued++
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Session) breakLocked(err error) {
	if s.broken != nil {
		return
	}
	s.broken = err
	s.queue = nil
	s.signalLocked()
	s.log.Error().Err(err).Msg("acp: session stops sending updates")
}

// writer writes queued updates in order until the session closes.
func (s *Session) writer() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		if s.closed || s.broken != nil {
			s.mu.Unlock()
			return
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-s.life.Done():
				return
			}
		}
		u := s.queue[0]
		s.queue[0] = acpsdk.SessionUpdate{}
		s.queue = s.queue[1:]
		s.mu.Unlock()
		err := s.send(u)
		s.mu.Lock()
		if err != nil && !s.closed {
			s.breakLocked(fmt.Errorf("%w: session/update: %w", ErrSessionBroken, err))
		}
		s.written++
		s.signalLocked()
		s.mu.Unlock()
	}
}

// send writes one update, a panicking peer being an error.
func (s *Session) send(u acpsdk.SessionUpdate) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("the peer panicked: %v", v)
		}
	}()
	return s.peer.SessionUpdate(s.life, acpsdk.SessionNotification{SessionId: s.id, Update: u})
}

// stateLocked returns the call's state, sending its tool_call (rendered
// from card, which may be nil) when it has none yet.
func (s *Session) stateLocked(ctx context.Context, e *tools.Execution, card tools.CallView, wait bool) *callState {
	if st, ok := s.calls[e.Token()]; ok {
		return st
	}
	id := acpsdk.ToolCallId(e.CallID())
	for id == "" || s.live[id] || s.used[id] {
		s.seq++
		id = acpsdk.ToolCallId(e.CallID() + "#" + strconv.FormatUint(s.seq, 10))
	}
	st := &callState{id: id, start: s.m.start(id, e.Name(), e.Args(), card)}
	s.calls[e.Token()] = st
	s.live[id] = true
	if len(s.usedFIFO) >= recentIDs {
		delete(s.used, s.usedFIFO[0])
		s.usedFIFO = s.usedFIFO[1:]
	}
	s.used[id] = true
	s.usedFIFO = append(s.usedFIFO, id)
	tc := st.start
	s.enqueueLocked(ctx, acpsdk.SessionUpdate{ToolCall: &tc}, wait)
	return st
}

// callCard renders the call's pending card when the session has not sent
// its tool_call yet (outside the lock: a presenter is user code).
func (s *Session) callCard(e *tools.Execution) tools.CallView {
	s.mu.Lock()
	_, known := s.calls[e.Token()]
	s.mu.Unlock()
	if known {
		return nil
	}
	if t := e.Tool(); t != nil {
		return t.PresentCall(e.Args())
	}
	return nil
}

// started reports a call entering policy: its tool_call (pending).
func (s *Session) started(ctx context.Context, e *tools.Execution) *callState {
	card := s.callCard(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	return s.stateLocked(ctx, e, card, true)
}

// running reports a call's body about to start: in_progress.
func (s *Session) running(ctx context.Context, e *tools.Execution) {
	card := s.callCard(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	st := s.stateLocked(ctx, e, card, true)
	if st.running {
		return // a wrapper calling next again
	}
	st.running = true
	status := acpsdk.ToolCallStatusInProgress
	s.enqueueLocked(ctx, acpsdk.SessionUpdate{ToolCallUpdate: &acpsdk.SessionToolCallUpdate{ToolCallId: st.id, Status: &status}}, true)
}

// finished reports a call's final result: completed or failed.
func (s *Session) finished(ctx context.Context, e *tools.Execution, res tools.Result) {
	var card tools.ResultView
	if t := e.Tool(); t != nil {
		card = t.PresentResult(e.Args(), res.Data())
	}
	callCard := s.callCard(e)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	st := s.stateLocked(ctx, e, callCard, false)
	u := s.m.finish(st.id, res, card)
	s.enqueueLocked(ctx, acpsdk.SessionUpdate{ToolCallUpdate: &u}, false)
	delete(s.calls, e.Token())
	delete(s.live, st.id)
}
