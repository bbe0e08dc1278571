package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/redact"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// Plugin mounts one MCP server's tools into the tool registry: load it once
// per server, with a [Config] (or *Config):
//
//	f, err := root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "fs", Command: "mcp-server-filesystem", Args: []string{dir}})
//
// It injects [tools.Service], so it waits (pending) for a registry and
// restarts, reconnecting, when the registry is replaced. Its Apply makes the
// first connection attempt (bounded by ConnectTimeout) before returning, so
// on success the server's tools are registered when Plugin returns. A failed
// first attempt fails the plugin when FailOnStartError is set; otherwise the
// plugin is active without tools and retries as after a lost session.
//
// Everything it does is an effect of its fiber: the tools (registered
// through its context), the session, the child process and the goroutine
// that watches them. Disposing the fiber removes every tool, closes the
// session and ends the process group of a stdio server (stdin closed, then
// SIGTERM, then SIGKILL, each after a short grace), and returns once all
// of that is done.
//
// The plugin is named "mcp-client"; its log lines carry the server name
// (field "server"), and every change of its connection is a [StatusChanged]
// event.
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string              { return "mcp-client" }
func (plugin) Inject() []host.ServiceKey { return []host.ServiceKey{tools.Service} }

var (
	_ host.Named    = plugin{}
	_ host.Injector = plugin{}
)

// State is a mounted server's connection state.
type State string

// The states a [Status] reports.
const (
	// StateConnected: a session is open and the tools are in sync with it.
	StateConnected State = "connected"
	// StateDisconnected: the session ended; calls fail with
	// MCP_SERVER_UNAVAILABLE until a reconnection succeeds. The tools stay
	// registered meanwhile.
	StateDisconnected State = "disconnected"
	// StateReconnecting: waiting before, or making, connection attempt
	// Status.Attempt.
	StateReconnecting State = "reconnecting"
	// StateFailed: the attempts are exhausted (or the first one failed
	// with FailOnStartError); the tools are removed and the plugin stays
	// idle until it is disposed or restarted.
	StateFailed State = "failed"
)

// Status is a mounted server's connection state, reported by [StatusChanged].
type Status struct {
	// Server is Config.Name.
	Server string `json:"server"`
	// State is the new state.
	State State `json:"state"`
	// Attempt is the retry about to be made (reconnecting: 1, 2, ...) or
	// the number of retries made (failed); zero otherwise.
	Attempt int `json:"attempt,omitempty"`
	// Tools is the number of tools registered now.
	Tools int `json:"tools"`
	// Err describes the last failure, if any.
	Err string `json:"error,omitempty"`
}

// StatusChanged is emitted (globally, not scope-filtered) each time a
// mounted server's connection state changes, and after each re-sync of its
// tool list (State connected, the new Tools count). A listener failure is
// logged and skipped. Listeners must not block: they run on the plugin's
// supervising goroutine.
var StatusChanged = events.NewEvent[Status](events.Descriptor{
	Name:    "mcp-client/status",
	Mode:    events.ModeEmit,
	Doc:     "A mounted MCP server connected, re-synced its tools, lost its session, is retrying, or gave up.",
	Failure: events.Contain,
})

// maxTools bounds the tools one server may mount; maxPages the pages of one
// tools/list.
const (
	maxTools = 4096
	maxPages = 256
)

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	cfg = cfg.withDefaults()
	reg, err := tools.Service.Get(c)
	if err != nil {
		return err
	}
	if err := c.Host().Declare(StatusChanged); err != nil {
		return err
	}
	log := c.Logger().With().Str("server", cfg.Name).Logger()
	s := &server{c: c, reg: reg, cfg: cfg, log: &log,
		listChanged: make(chan struct{}, 1), mounted: map[string]*mounted{},
		done: make(chan struct{})}
	copts := &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{}, // no roots
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.listChanged <- struct{}{}:
			default:
			}
		},
		ElicitationHandler: s.elicit,
	}
	if up := cfg.Upstreams; up != nil {
		copts.ResourceUpdatedHandler = func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			if req != nil && req.Params != nil {
				up.notify(cfg.Name, "notifications/resources/updated", req.Params.URI)
			}
		}
		copts.ResourceListChangedHandler = func(context.Context, *mcp.ResourceListChangedRequest) {
			up.notify(cfg.Name, "notifications/resources/list_changed", "")
		}
		copts.PromptListChangedHandler = func(context.Context, *mcp.PromptListChangedRequest) {
			up.notify(cfg.Name, "notifications/prompts/list_changed", "")
		}
	}
	if cfg.Sampler != nil {
		//lint:ignore SA1019 sampling is deprecated (SEP-2577) but still in use; issue 21 asks to forward it
		copts.CreateMessageHandler = s.sample
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "dsh", Version: "1"}, copts)
	first := make(chan error, 1)
	if _, err := c.Effect("mcp session "+cfg.Name, func() (func() error, error) {
		// Ends with the plugin's run (cancelled before this cleanup
		// runs), or when stop cancels it.
		s.ctx, s.cancel = context.WithCancel(c.Lifetime())
		go s.run(first)
		if cfg.Upstreams != nil {
			cfg.Upstreams.add(s)
			return func() error { cfg.Upstreams.remove(s); return s.stop() }, nil
		}
		return s.stop, nil
	}); err != nil {
		return err
	}
	// run reports its first attempt before anything else.
	if err := <-first; err != nil && cfg.FailOnStartError {
		return fmt.Errorf("mcpclient: server %q: %w", cfg.Name, err)
	}
	return nil
}

// server is one plugin run: the supervisor goroutine (run) owns mounted
// and every (re)connection; tool bodies read conn.
type server struct {
	c      *host.Context
	reg    *tools.Registry
	cfg    Config
	log    *zerolog.Logger
	client *mcp.Client

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned

	listChanged chan struct{}
	conn        atomic.Pointer[conn]

	mounted map[string]*mounted // registry name → tool; run's goroutine only

	mu       sync.Mutex
	inflight inflightList
}

// conn is one session.
type conn struct {
	// ctx is cancelled (cause errSessionClosed) when the session is being
	// closed: calls in flight and elicitations end first, because the
	// SDK's Close waits for them. It is derived from context.Background
	// and holds no values: a call without a context of its own is this
	// context with the caller's values (see inflight).
	ctx    context.Context
	cancel context.CancelCauseFunc
	cs     *mcp.ClientSession
	proc   *proc         // nil unless stdio
	idle   func()        // nil unless HTTP
	ended  chan struct{} // closed when the session ended
	wg     sync.WaitGroup

	// meta is the request _meta the SDK put in the first call's params on
	// this session, encoded (see encodedMeta), given to the calls after
	// it; nil until then. Under server.mu.
	meta mcp.Meta
}

// inflight is a call in progress, for attributing an elicitation; it is
// also the call's context (the one CallTool gets): its Value answers
// inflightKey with the call itself, every other key as the caller's
// context does. It ends with the caller's context, with the session
// (closeConn cancels the session's context, cause errSessionClosed, then
// each call's own) and when CallTimeout expires.
//
// When the caller's context can never be cancelled (its Done is nil) and
// there is no CallTimeout, nothing but the session can end the call, so
// the call has no context of its own (own is nil): it is the session's
// context (Done, Err, and through Value the context package's own key,
// so context.Cause and derived contexts see the session's cancellation)
// with the caller's values, and costs no allocation beyond the inflight.
// Otherwise own is derived from the caller's and cancel ends it.
//
// One allocation also holds what the call hands the SDK (params, whose
// Arguments points at args, and the arguments' copy when they fit in
// argBuf), its links in the server's list of calls in flight, and the
// result's first content block. None of it is ever reused: an inflight
// belongs to one call, and whatever the SDK or the pipeline keeps of it
// stays as it was.
type inflight struct {
	parent context.Context // the caller's
	own    context.Context // nil: the session's context is the call's
	cancel context.CancelCauseFunc
	exec   *tools.Execution
	cur    *conn // the session the call is on

	prev, next *inflight // in server.inflight, under server.mu

	params  mcp.CallToolParams
	args    json.RawMessage // params.Arguments is &args: no boxing
	content [1]tools.Content
	argBuf  [argBufLen]byte
}

// argBufLen is the length of arguments copied into the inflight itself
// (inflight is then 416 bytes, a size class of its own).
const argBufLen = 128

// inflightList is the calls in flight, linked through the calls
// themselves: adding and removing one allocates nothing and hashes
// nothing. Its zero value is empty; it is used under server.mu.
type inflightList struct {
	head *inflight
}

// add puts in, which is in no list, first.
func (l *inflightList) add(in *inflight) {
	in.prev, in.next = nil, l.head
	if l.head != nil {
		l.head.prev = in
	}
	l.head = in
}

// remove takes in, which add put in l, out of it.
func (l *inflightList) remove(in *inflight) {
	if in.prev != nil {
		in.prev.next = in.next
	} else {
		l.head = in.next
	}
	if in.next != nil {
		in.next.prev = in.prev
	}
	in.prev, in.next = nil, nil
}

// all yields the calls in l; the loop must not add or remove any.
func (l *inflightList) all(yield func(*inflight) bool) {
	for in := l.head; in != nil; in = in.next {
		if !yield(in) {
			return
		}
	}
}

// Deadline is the caller's (or CallTimeout's, when sooner).
func (in *inflight) Deadline() (time.Time, bool) {
	if in.own != nil {
		return in.own.Deadline()
	}
	return in.parent.Deadline()
}

// Done is closed when the call is cancelled.
func (in *inflight) Done() <-chan struct{} {
	if in.own != nil {
		return in.own.Done()
	}
	return in.cur.ctx.Done()
}

// Err is non-nil once Done is closed.
func (in *inflight) Err() error {
	if in.own != nil {
		return in.own.Err()
	}
	return in.cur.ctx.Err()
}

// Value answers inflightKey with the call, every other key as the
// caller's context (own is derived from it). Without a context of its
// own, a key the caller's context does not know is the session's, which
// holds no values (see conn.ctx) but the context package's own: what
// context.Cause reads, and what a context derived from the call registers
// with.
func (in *inflight) Value(key any) any {
	if key == (inflightKey{}) {
		return in
	}
	if in.own != nil {
		return in.own.Value(key)
	}
	if v := in.parent.Value(key); v != nil {
		return v
	}
	return in.cur.ctx.Value(key)
}

// String names the context (fmt).
func (in *inflight) String() string { return "mcpclient.call" }

// stop cancels the call's own context with cause; a call without one ends
// with its session, whose cancellation closeConn does first.
func (in *inflight) stop(cause error) {
	if in.cancel != nil {
		in.cancel(cause)
	}
}

// stop is the effect's cleanup: it stops run and waits for it (run closes
// the session and ends the process on its way out).
func (s *server) stop() error {
	s.cancel()
	<-s.done
	return nil
}

// run supervises the server: it connects, keeps the tools in sync with
// the server's list, and reconnects with backoff after a loss.
func (s *server) run(first chan<- error) {
	defer close(s.done)
	defer func() {
		if cur := s.conn.Swap(nil); cur != nil {
			s.closeConn(cur)
		}
	}()
	reported := false
	defer func() {
		// A panic (in the SDK, say) ends supervision, never the process;
		// Apply still gets its answer.
		if v := recover(); v != nil {
			err := fmt.Errorf("the MCP client panicked: %s", safeerr.Sprint(v))
			s.log.Error().Err(err).Msg("MCP server: supervision ended")
			if !reported {
				first <- err
			}
		}
	}()
	err := s.connect()
	if err != nil && s.cfg.URL != "" {
		err = redactedError{err, s.cfg.URL}
	}
	first <- err
	reported = true
	if err != nil && s.cfg.FailOnStartError {
		s.status(StateFailed, 1, err)
		return
	}
	attempt := 0
	if err != nil {
		attempt = 1
		s.log.Warn().Err(err).Msg("MCP server: first connection failed; retrying")
	}
	for {
		cur := s.conn.Load()
		if cur == nil {
			if s.cfg.Reconnect.MaxAttempts < 0 || attempt > s.cfg.Reconnect.MaxAttempts {
				s.giveUp(attempt-1, err)
				return
			}
			s.status(StateReconnecting, attempt, err)
			t := time.NewTimer(s.cfg.Reconnect.backoff(attempt))
			select {
			case <-s.ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
			if err = s.connect(); err != nil {
				if s.cfg.URL != "" {
					err = redactedError{err, s.cfg.URL}
				}
				attempt++
				s.log.Debug().Err(err).Int("attempt", attempt).Msg("MCP server: reconnection failed")
				continue
			}
			attempt = 0
			continue
		}
		select {
		case <-s.ctx.Done():
			return
		case <-cur.ended:
			s.conn.CompareAndSwap(cur, nil)
			s.closeConn(cur)
			err = errors.New("the session ended")
			if cur.proc != nil {
				err = fmt.Errorf("the session ended (server process: %s)", cur.proc.exitReport())
			}
			s.log.Warn().Err(err).Msg("MCP server: session lost; reconnecting")
			attempt = 1
			s.status(StateDisconnected, 0, err)
		case <-s.listChanged:
			if err := s.sync(cur); err != nil {
				s.log.Warn().Err(err).Msg("MCP server: re-listing tools after list_changed failed")
				continue
			}
			s.status(StateConnected, 0, nil)
		}
	}
}

// giveUp removes every tool, reports failed and idles until stopped.
func (s *server) giveUp(attempt int, err error) {
	for name, m := range s.mounted {
		_ = m.dispose()
		delete(s.mounted, name)
	}
	s.log.Error().Err(err).Int("attempts", attempt).Msg("MCP server: giving up")
	s.status(StateFailed, attempt, err)
	<-s.ctx.Done()
}

func (s *server) status(st State, attempt int, err error) {
	ev := Status{Server: s.cfg.Name, State: st, Attempt: attempt, Tools: len(s.mounted)}
	if err != nil {
		ev.Err = err.Error()
	}
	_ = host.Emit(context.Background(), s.c.Emitter(), StatusChanged, ev)
}

// connect opens a session, lists the tools and syncs them; on success the
// session is s.conn. Bounded by ConnectTimeout and s.ctx.
func (s *server) connect() error {
	ctx, cancel := context.WithTimeout(s.ctx, time.Duration(s.cfg.ConnectTimeout))
	defer cancel()
	var (
		t    mcp.Transport
		p    *proc
		idle func() // closes an HTTP transport's idle connections
		err  error
	)
	switch {
	case s.cfg.Dial != nil:
		t, err = safeDial(ctx, s.cfg.Dial)
	case s.cfg.Command != "":
		p, t, err = startProcess(s.cfg, s.log)
	default:
		// A transport of the session's own, so that closing the session
		// leaves no idle connection (and no goroutine) behind.
		ht := http.DefaultTransport.(*http.Transport).Clone()
		hc := &http.Client{
			Transport: boundTransport{limit: int64(s.cfg.MaxMessageBytes),
				base:     headerTransport{headers: s.cfg.Headers, base: ht},
				exceeded: func(err error) { s.log.Warn().Err(err).Msg("MCP server: message refused") }}}
		if s.cfg.SSE {
			t = sseTransport{inner: &mcp.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: s.cfg.MaxMessageBytes}, life: s.ctx}
		} else {
			t = &mcp.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc}
		}
		idle = ht.CloseIdleConnections
	}
	if err != nil {
		return fmt.Errorf("connecting: %w", err)
	}
	if t == nil {
		return errors.New("connecting: Dial returned no transport")
	}
	cs, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		if p != nil {
			p.kill()
			return fmt.Errorf("initializing the session: %w (server process: %s)", err, p.exitReport())
		}
		if idle != nil {
			idle()
		}
		return fmt.Errorf("initializing the session: %w", err)
	}
	cur := &conn{cs: cs, proc: p, idle: idle, ended: make(chan struct{})}
	cur.ctx, cur.cancel = context.WithCancelCause(context.Background())
	cur.wg.Add(1)
	go func() {
		defer cur.wg.Done()
		_ = cs.Wait()
		close(cur.ended)
	}()
	if p != nil {
		// A server that exits ends its session even if something holds
		// its stdout open.
		cur.wg.Add(1)
		go func() {
			defer cur.wg.Done()
			select {
			case <-p.exited:
				_ = cs.Close()
			case <-cur.ended:
			}
		}()
	}
	if err := s.syncCtx(ctx, cur); err != nil {
		s.closeConn(cur)
		return err
	}
	s.conn.Store(cur)
	s.cfg.Upstreams.notify(s.cfg.Name, NoticeConnected, "")
	s.status(StateConnected, 0, nil)
	return nil
}

// safeDial calls dial, turning a panic into an error.
func safeDial(ctx context.Context, dial func(context.Context) (mcp.Transport, error)) (t mcp.Transport, err error) {
	defer func() {
		if v := recover(); v != nil {
			t, err = nil, fmt.Errorf("the Dial function panicked: %s", safeerr.Sprint(v))
		}
	}()
	return dial(ctx)
}

// closeConn ends the session c and its process and waits for the
// watchers. The calls in flight on c are cancelled first (cause
// errSessionClosed): the SDK's Close waits for them.
func (s *server) closeConn(c *conn) {
	c.cancel(errSessionClosed)
	// A call registered after this sweep sees c.ctx done (see call).
	s.mu.Lock()
	var calls []*inflight
	for in := range s.inflight.all {
		if in.cur == c {
			calls = append(calls, in)
		}
	}
	s.mu.Unlock()
	for _, in := range calls {
		in.stop(errSessionClosed)
	}
	_ = c.cs.Close()
	if c.proc != nil {
		c.proc.stop()
	}
	c.wg.Wait()
	if c.idle != nil {
		c.idle()
	}
}

// errSessionClosed is the cancellation cause of the calls in flight when
// the plugin closes their session (disposal, a lost session).
var errSessionClosed = errors.New("the session was closed")

// errCallTimeout is the cause of a call's cancellation by CallTimeout.
var errCallTimeout = errors.New("call timeout")

// redactedError is a connection error of an HTTP server with the
// server's URL (its query values and user info, where API keys go)
// masked wherever the text quotes it.
type redactedError struct {
	err error
	url string
}

func (e redactedError) Error() string { return redact.In(e.err.Error(), e.url) }

func (e redactedError) Unwrap() error { return e.err }

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	return h.base.RoundTrip(r)
}
