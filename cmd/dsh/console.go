package main

import (
	"context"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	stdlog "log"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/audit"
)

//go:embed consoleui
var consoleFS embed.FS

// consoleTokenEnv is the variable holding the console's token when
// dsh.json's "console.tokens" names none.
const consoleTokenEnv = "DSH_CONSOLE_TOKEN"

// consoleCookie is the console's session cookie.
const consoleCookie = "dsh_console"

// consoleSessionTTL is how long a console login lasts.
const consoleSessionTTL = 12 * time.Hour

// consoleAuth is who may open the console: its own tokens, never the MCP
// clients' (a console token cannot call tools, an MCP token cannot answer
// asks).
type consoleAuth struct {
	tokens    *tokenSet
	generated string
	summary   string
}

// setupConsoleAuth reads the console's tokens: "console.tokens", else
// $DSH_CONSOLE_TOKEN, else (loopback only) one generated for this run.
// mcpAccepts, when set, reports whether the MCP face accepts a token: a
// console token it accepts is refused (the two must differ).
func setupConsoleAuth(c dshconfig.Console, file string, loopback bool, getenv func(string) string, mcpAccepts func(string) bool) (*consoleAuth, error) {
	a := &consoleAuth{tokens: &tokenSet{}}
	var toks []string
	for _, t := range c.Tokens {
		tok, err := readToken(t, getenv)
		if err != nil {
			return nil, &dshconfig.Error{File: file, Key: t.Key, Msg: err.Error()}
		}
		a.tokens.add(t.Name, tok)
		toks = append(toks, tok)
	}
	switch {
	case len(c.Tokens) > 0:
		a.summary = fmt.Sprintf("%d token(s) of console.tokens", len(c.Tokens))
	case getenv(consoleTokenEnv) != "":
		tok := getenv(consoleTokenEnv)
		if len(tok) < minTokenLen {
			return nil, fmt.Errorf("$%s is %d characters; use at least %d (openssl rand -hex 32)", consoleTokenEnv, len(tok), minTokenLen)
		}
		a.tokens.add("console", tok)
		toks = append(toks, tok)
		a.summary = "the token of $" + consoleTokenEnv
	case loopback:
		b := make([]byte, 32)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		a.generated = base64.RawURLEncoding.EncodeToString(b)
		a.tokens.add("console", a.generated)
		a.summary = "a token generated for this run"
	default:
		return nil, fmt.Errorf("a console on a non-loopback address needs a configured token: export %s=$(openssl rand -hex 32), or set console.tokens in %s", consoleTokenEnv, file)
	}
	if mcpAccepts != nil {
		for _, tok := range toks {
			if mcpAccepts(tok) {
				return nil, errors.New("a console token is also accepted as an MCP token: use different tokens (a console token must not call tools, nor an MCP client answer asks)")
			}
		}
	}
	return a, nil
}

type consoleSession struct {
	identity string
	csrf     string
	expires  time.Time
}

// consoleServer serves the console: the approval inbox, the live
// timeline and the search over the record, as server-rendered pages with
// a little JavaScript (embedded), plus a JSON API and a server-sent event
// stream.
type consoleServer struct {
	store    audit.Store
	auth     *consoleAuth
	live     *liveHub
	hosts    *hostGuard
	origins  []string
	tmpl     *template.Template
	static   http.Handler
	instance string // the serving gateway's instance ("" standalone)

	mu       sync.Mutex
	sessions map[string]consoleSession
}

func newConsoleServer(store audit.Store, a *consoleAuth, live *liveHub, c dshconfig.Console, instance string) (*consoleServer, error) {
	funcs := template.FuncMap{
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		},
		"ms":        func(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) },
		"waterfall": waterfall,
		"unix":      func(t time.Time) int64 { return t.UnixMilli() },
		"summary":   decisionSummary,
	}
	t, err := template.New("").Funcs(funcs).ParseFS(consoleFS, "consoleui/*.html")
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(consoleFS, "consoleui")
	if err != nil {
		return nil, err
	}
	origins := make([]string, len(c.AllowedOrigins))
	for i, o := range c.AllowedOrigins {
		origins[i] = strings.ToLower(o)
	}
	return &consoleServer{store: store, auth: a, live: live, hosts: newHostGuard(c.AllowedHosts), origins: origins,
		tmpl: t, static: http.StripPrefix("/static/", http.FileServerFS(sub)), instance: instance, sessions: map[string]consoleSession{}}, nil
}

// bar is one stage of a call's waterfall, as percentages of the call.
type bar struct {
	Name, Title string
	Left, Width float64
	Failed      bool
}

func waterfall(c audit.Call) []bar {
	total := c.Duration
	if total <= 0 {
		for _, s := range c.Stages {
			total = max(total, s.Start+s.Duration)
		}
	}
	if total <= 0 {
		return nil
	}
	out := make([]bar, 0, len(c.Stages))
	for _, s := range c.Stages {
		b := bar{Name: s.Name, Left: 100 * float64(s.Start) / float64(total), Width: max(0.5, 100*float64(s.Duration)/float64(total)), Failed: s.Code != ""}
		b.Title = fmt.Sprintf("%s: %.3f ms", s.Name, float64(s.Duration)/float64(time.Millisecond))
		if s.Outcome != "" {
			b.Title += " (" + s.Outcome + ")"
		}
		if s.Code != "" {
			b.Title += " " + s.Code
		}
		out = append(out, b)
	}
	return out
}

func decisionSummary(ds []audit.Decision) string {
	parts := make([]string, 0, len(ds))
	for _, d := range ds {
		p := d.Stage + ": " + d.Outcome
		switch {
		case d.Rule != "":
			p += " by rule " + d.Rule
		case d.Approver != "":
			p += " by " + d.Approver + " (" + d.Channel + ")"
		case d.Channel != "":
			p += " (" + d.Channel + ")"
		case d.By != "":
			p += " by " + d.By
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, "; ")
}

// ServeHTTP applies the checks every request passes, in order: Host
// (DNS rebinding, 403), Origin (cross-origin, 403), then the routes.
func (s *consoleServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin") // no-referrer would make a form's Origin "null"
	h.Set("Cache-Control", "no-store")
	if !s.hosts.ok(r.Host) {
		http.Error(w, "Host header not allowed (list it in console.allowedHosts)", http.StatusForbidden)
		return
	}
	if !s.sameOrigin(r) {
		http.Error(w, "cross-origin request refused", http.StatusForbidden)
		return
	}
	path := r.URL.Path
	switch {
	case strings.HasPrefix(path, "/static/"):
		s.static.ServeHTTP(w, r)
	case path == "/login":
		s.login(w, r)
	case path == "/logout":
		s.withAuth(s.logout)(w, r)
	case path == "/":
		s.withAuth(s.inboxPage)(w, r)
	case path == "/timeline":
		s.withAuth(s.timelinePage)(w, r)
	case path == "/search":
		s.withAuth(s.searchPage)(w, r)
	case path == "/events":
		s.withAuth(s.events)(w, r)
	case path == "/api/asks":
		s.withAuth(s.apiAsks)(w, r)
	case strings.HasPrefix(path, "/api/asks/"):
		s.withAuth(s.apiAnswer)(w, r)
	case path == "/api/calls":
		s.withAuth(s.apiCalls)(w, r)
	default:
		http.NotFound(w, r)
	}
}

// sameOrigin refuses a request a browser sent from another origin: an
// Origin header that is not this console's own origin (or one of
// console.allowedOrigins), an opaque origin ("null") unless Sec-Fetch-Site
// says same-origin, or, without Origin, Sec-Fetch-Site cross-site.
func (s *consoleServer) sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" {
		if o == "null" { // an opaque origin: only the browser's own word counts
			return r.Header.Get("Sec-Fetch-Site") == "same-origin"
		}
		lo := strings.ToLower(o)
		for _, a := range s.origins {
			if lo == a {
				return true
			}
		}
		u, err := url.Parse(lo)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Path == "" && u.Host == strings.ToLower(r.Host)
	}
	return r.Header.Get("Sec-Fetch-Site") != "cross-site"
}

type authed struct {
	identity string
	csrf     string // "" for bearer requests (no cookie, no CSRF)
}

func (s *consoleServer) who(r *http.Request) (authed, bool) {
	if h := r.Header.Get("Authorization"); h != "" {
		tok, ok := strings.CutPrefix(h, "Bearer ")
		if !ok {
			return authed{}, false
		}
		id, ok := s.auth.tokens.match(strings.TrimSpace(tok))
		return authed{identity: id}, ok
	}
	c, err := r.Cookie(consoleCookie)
	if err != nil {
		return authed{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs, ok := s.sessions[c.Value]
	if !ok || time.Now().After(cs.expires) {
		delete(s.sessions, c.Value)
		return authed{}, false
	}
	return authed{identity: cs.identity, csrf: cs.csrf}, true
}

// withAuth requires a console login (or a console bearer token); a
// state-changing request with a cookie must carry its CSRF token.
func (s *consoleServer) withAuth(h func(http.ResponseWriter, *http.Request, authed)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		a, ok := s.who(r)
		if !ok {
			if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") && r.URL.Path != "/events" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			w.Header().Set("WWW-Authenticate", `Bearer realm="dsh console"`)
			http.Error(w, "console login required", http.StatusUnauthorized)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && a.csrf != "" {
			got := r.Header.Get("X-CSRF-Token")
			if got == "" {
				got = r.PostFormValue("csrf")
			}
			if !constEq(got, a.csrf) {
				http.Error(w, "missing or wrong CSRF token", http.StatusForbidden)
				return
			}
		}
		h(w, r, a)
	}
}

func constEq(a, b string) bool {
	if len(a) != len(b) || a == "" {
		return false
	}
	var v byte
	for i := range len(a) {
		v |= a[i] ^ b[i]
	}
	return v == 0
}

func randToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (s *consoleServer) login(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		s.render(w, "login.html", map[string]any{"Page": "login"})
	case http.MethodPost:
		r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
		id, ok := s.auth.tokens.match(strings.TrimSpace(r.PostFormValue("token")))
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			s.render(w, "login.html", map[string]any{"Page": "login", "Error": "That token is not accepted."})
			return
		}
		sid := randToken()
		s.mu.Lock()
		now := time.Now()
		for k, v := range s.sessions { // drop expired logins
			if now.After(v.expires) {
				delete(s.sessions, k)
			}
		}
		s.sessions[sid] = consoleSession{identity: id, csrf: randToken(), expires: now.Add(consoleSessionTTL)}
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode,
			Secure: r.TLS != nil, MaxAge: int(consoleSessionTTL / time.Second)})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	default:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

func (s *consoleServer) logout(w http.ResponseWriter, r *http.Request, _ authed) {
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if c, err := r.Cookie(consoleCookie); err == nil {
		s.mu.Lock()
		delete(s.sessions, c.Value)
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: consoleCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

func (s *consoleServer) render(w http.ResponseWriter, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := s.tmpl.ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
	}
}

// askView is an ask as the inbox shows it.
type askView struct {
	audit.Ask
	DeadlineMs int64
}

func (s *consoleServer) pending(ctx context.Context) ([]askView, []audit.Ask, error) {
	pend, err := s.store.Asks(ctx, audit.AskPending, 200)
	if err != nil {
		return nil, nil, err
	}
	recent, err := s.store.Asks(ctx, "", 20)
	if err != nil {
		return nil, nil, err
	}
	views := make([]askView, len(pend))
	for i, a := range pend {
		views[i] = askView{Ask: a}
		if !a.Deadline.IsZero() {
			views[i].DeadlineMs = a.Deadline.UnixMilli()
		}
	}
	var done []audit.Ask
	for _, a := range recent {
		if a.State != audit.AskPending {
			done = append(done, a)
		}
	}
	return views, done, nil
}

func (s *consoleServer) inboxPage(w http.ResponseWriter, r *http.Request, a authed) {
	pend, done, err := s.pending(r.Context())
	if err != nil {
		http.Error(w, "store: "+safeerr.Text(err), http.StatusInternalServerError)
		return
	}
	name := "inbox.html"
	if r.URL.Query().Get("fragment") == "1" {
		name = "inbox-fragment"
	}
	s.render(w, name, map[string]any{"Page": "inbox", "Who": a.identity, "CSRF": a.csrf, "Pending": pend, "Done": done})
}

func (s *consoleServer) timelinePage(w http.ResponseWriter, r *http.Request, a authed) {
	calls, err := s.store.Calls(r.Context(), audit.Query{Limit: 50})
	if err != nil {
		http.Error(w, "store: "+safeerr.Text(err), http.StatusInternalServerError)
		return
	}
	name := "timeline.html"
	if r.URL.Query().Get("fragment") == "1" {
		name = "timeline-fragment"
	}
	s.render(w, name, map[string]any{"Page": "timeline", "Who": a.identity, "CSRF": a.csrf, "Calls": calls})
}

// queryOf reads a search from URL parameters: tool, identity, session,
// code, since, until (RFC 3339 or 2006-01-02T15:04), unfinished, limit.
func queryOf(v url.Values) (audit.Query, error) {
	q := audit.Query{Tool: v.Get("tool"), Identity: v.Get("identity"), Session: v.Get("session"), Code: v.Get("code"),
		Unfinished: v.Get("unfinished") == "1" || v.Get("unfinished") == "true"}
	for _, f := range []struct {
		k    string
		into *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		if s := v.Get(f.k); s != "" {
			t, err := parseTime(s)
			if err != nil {
				return q, fmt.Errorf("%s: %v", f.k, err)
			}
			*f.into = t
		}
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return q, fmt.Errorf("limit: want a positive number")
		}
		q.Limit = n
	}
	return q, nil
}

func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.UTC); err == nil {
			return t, nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return time.Now().Add(-d), nil // "1h": an hour ago
	}
	return time.Time{}, fmt.Errorf("%q is not a time (RFC 3339, 2006-01-02T15:04, or a duration ago such as 1h)", s)
}

func (s *consoleServer) searchPage(w http.ResponseWriter, r *http.Request, a authed) {
	v := r.URL.Query()
	data := map[string]any{"Page": "search", "Who": a.identity, "CSRF": a.csrf, "Q": v}
	if len(v) > 0 {
		q, err := queryOf(v)
		if err != nil {
			data["Error"] = err.Error()
		} else {
			calls, err := s.store.Calls(r.Context(), q)
			if err != nil {
				data["Error"] = "store: " + safeerr.Text(err)
			}
			data["Calls"], data["Searched"] = calls, true
		}
	}
	s.render(w, "search.html", data)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *consoleServer) apiAsks(w http.ResponseWriter, r *http.Request, _ authed) {
	state := audit.AskState(r.URL.Query().Get("state"))
	asks, err := s.store.Asks(r.Context(), state, 200)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": safeerr.Text(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"asks": asks})
}

// apiAnswer takes a person's answer: POST /api/asks/{id} with answer=allow|reject|always.
func (s *consoleServer) apiAnswer(w http.ResponseWriter, r *http.Request, a authed) {
	id := strings.TrimPrefix(r.URL.Path, "/api/asks/")
	if r.Method == http.MethodGet {
		ask, err := s.store.Ask(r.Context(), id)
		if err != nil {
			writeJSON(w, http.StatusNotFound, map[string]string{"error": safeerr.Text(err)})
			return
		}
		writeJSON(w, http.StatusOK, ask)
		return
	}
	if r.Method != http.MethodPost {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	answer := r.PostFormValue("answer")
	ask, err := s.store.AnswerAsk(r.Context(), id, answer, a.identity)
	status := http.StatusOK
	switch {
	case err == nil:
	case safeerr.Is(err, audit.ErrNotFound):
		status = http.StatusNotFound
	case safeerr.Is(err, audit.ErrNotPending), safeerr.Is(err, audit.ErrAbandoned):
		status = http.StatusConflict
	default:
		status = http.StatusBadRequest
	}
	if r.Header.Get("Accept") == "application/json" || a.csrf == "" {
		body := map[string]any{"ask": ask}
		if err != nil {
			body["error"] = safeerr.Text(err)
		}
		writeJSON(w, status, body)
		return
	}
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

func (s *consoleServer) apiCalls(w http.ResponseWriter, r *http.Request, _ authed) {
	q, err := queryOf(r.URL.Query())
	if err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	calls, err := s.store.Calls(r.Context(), q)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, map[string]string{"error": safeerr.Text(err)})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"calls": calls})
}

// events streams the live feed as server-sent events: "call" (a local
// call began, passed a stage or ended), "ask" (an ask was raised or
// changed, on any instance), "calls" (another instance wrote records),
// "resync" (events were missed: reload).
func (s *consoleServer) events(w http.ResponseWriter, r *http.Request, _ authed) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch, cancel := s.live.subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": dsh console\n\n")
	fl.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case msg, ok := <-ch:
			if !ok {
				return
			}
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", msg.event, msg.data)
			fl.Flush()
		case <-ping.C:
			fmt.Fprint(w, ": ping\n\n")
			fl.Flush()
		}
	}
}

// liveHub fans the live feed out to the console's event streams. A
// stream that falls behind gets "resync" instead of what it missed.
type liveHub struct {
	n     atomic.Int32
	mu    sync.Mutex
	subs  map[*liveSub]struct{}
	unsub func()
}

type liveMsg struct{ event, data string }

type liveSub struct {
	ch     chan liveMsg
	lagged bool
}

func newLiveHub() *liveHub { return &liveHub{subs: map[*liveSub]struct{}{}} }

func (h *liveHub) subscribe() (<-chan liveMsg, func()) {
	s := &liveSub{ch: make(chan liveMsg, 256)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.n.Add(1)
	h.mu.Unlock()
	return s.ch, func() {
		h.mu.Lock()
		if _, ok := h.subs[s]; ok {
			delete(h.subs, s)
			h.n.Add(-1)
		}
		h.mu.Unlock()
	}
}

func (h *liveHub) publish(event, data string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.lagged {
			select {
			case s.ch <- liveMsg{"resync", "{}"}:
				s.lagged = false
			default:
				continue
			}
		}
		select {
		case s.ch <- liveMsg{event, data}:
		default:
			s.lagged = true
		}
	}
}

// call is the recorder's live feed: cheap when nobody watches.
func (h *liveHub) call(ev audit.Event) {
	if h.n.Load() == 0 {
		return
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	h.publish("call", string(b))
}

// watch relays the store's notices (asks of every instance, records
// written by others).
func (h *liveHub) watch(store audit.Store) {
	h.unsub = store.Subscribe(func(n audit.Notice) {
		if h.n.Load() == 0 {
			return
		}
		b, _ := json.Marshal(n)
		h.publish(n.Kind, string(b))
	})
}

// poll tells the streams to look again every interval until ctx is done
// (a store whose writers are other processes and announce nothing).
func (h *liveHub) poll(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if h.n.Load() > 0 {
				h.publish("resync", "{}")
			}
		}
	}
}

func (h *liveHub) close() {
	if h.unsub != nil {
		h.unsub()
	}
}

// serveConsole serves the console on addr until the returned stop is
// called. mcp, when set, is the MCP face's authentication: a console
// token it accepts is refused.
func serveConsole(addr string, store audit.Store, live *liveHub, instance string, cfg *dshconfig.Config, mcp *authSetup, stderr io.Writer) (stop func(), err error) {
	listen, loopback, note, err := listenAddr(addr)
	if err != nil {
		return nil, err
	}
	if note != "" {
		fmt.Fprintln(stderr, "dsh: console:", note)
	}
	var accepts func(string) bool
	if mcp != nil && mcp.verifier != nil {
		accepts = func(tok string) bool {
			_, err := mcp.verifier(context.Background(), tok, nil)
			return err == nil
		}
	}
	ca, err := setupConsoleAuth(cfg.Console, cfg.File, loopback, os.Getenv, accepts)
	if err != nil {
		return nil, err
	}
	cs, err := newConsoleServer(store, ca, live, cfg.Console, instance)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	base, cancel := context.WithCancel(context.Background())
	hs := &http.Server{
		Handler:           cs,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          stdlog.New(io.Discard, "", 0),
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hs.Serve(ln)
	}()
	fmt.Fprintf(stderr, "dsh: console on http://%s/ (accepting %s)\n", ln.Addr(), ca.summary)
	if ca.generated != "" {
		fmt.Fprintf(stderr, "dsh: console token for this run: %s\ndsh: (set $%s, or console.tokens in %s, to choose it)\n", ca.generated, consoleTokenEnv, cfg.File)
	}
	return func() {
		cancel() // ends the event streams
		sctx, c2 := context.WithTimeout(context.Background(), 5*time.Second)
		defer c2()
		_ = hs.Shutdown(sctx)
		<-done
	}, nil
}
