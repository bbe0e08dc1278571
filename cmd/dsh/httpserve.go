package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/internal/redact"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// The network face's defaults (each overridable in dsh.json "http.limits").
const (
	defaultMaxBodyBytes           = 4 << 20
	defaultBodyTimeout            = 30 * time.Second
	defaultHeaderTimeout          = 10 * time.Second
	defaultMaxConnections         = 512
	defaultMaxSessions            = 256
	defaultMaxSessionsPerIdentity = 64
	defaultMaxCallsPerSession     = 32
	defaultMaxCalls               = 512
	defaultSessionIdleTimeout     = 30 * time.Minute
)

// tokenEnv is the environment variable read for the bearer token when
// dsh.json configures no authentication.
const tokenEnv = "DSH_TOKEN"

// minTokenLen is the shortest bearer token accepted.
const minTokenLen = 16

// maxTokenFile bounds a token file.
const maxTokenFile = 4096

// listenAddr interprets --http: a bare port (":8080" or "8080") means
// loopback only (127.0.0.1:8080), said in note; a host of "localhost" or a
// loopback IP is loopback; anything else (0.0.0.0, a LAN address, a name)
// is not, and needs authentication.
func listenAddr(s string) (addr string, loopback bool, note string, err error) {
	if regexp.MustCompile(`^[0-9]+$`).MatchString(s) {
		s = ":" + s
	}
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return "", false, "", fmt.Errorf("--http %q: want host:port, such as 127.0.0.1:8080 (%v)", s, err)
	}
	if port == "" {
		return "", false, "", fmt.Errorf("--http %q: no port", s)
	}
	if host == "" {
		addr = net.JoinHostPort("127.0.0.1", port)
		return addr, true, fmt.Sprintf("--http %s listens on %s only (loopback); to listen on every interface give 0.0.0.0:%s, which needs authentication", s, addr, port), nil
	}
	if host == "localhost" {
		return net.JoinHostPort("127.0.0.1", port), true, "", nil
	}
	if ip, err := netip.ParseAddr(host); err == nil && ip.IsLoopback() {
		return s, true, "", nil
	}
	return s, false, "", nil
}

// authSetup is how the HTTP face authenticates.
type authSetup struct {
	verifier auth.TokenVerifier // nil: no authentication (--no-auth, loopback only)
	opts     *auth.RequireBearerTokenOptions
	metadata *oauthex.ProtectedResourceMetadata
	// metadataPaths are where the protected-resource metadata is served.
	metadataPaths []string
	// generated is a token made for this run (none configured, loopback).
	generated string
	// summary says what is accepted, for the startup line.
	summary string
	// stop ends the JWKS refresher.
	stop func()
}

// setupAuth builds the authentication of the HTTP face from the config's
// "http" section: its tokens (read from their variables and files), its
// JWT issuer; with neither, $DSH_TOKEN; with none of these, a token
// generated for this run on a loopback address, and a refusal on any
// other. --no-auth (noAuth) is refused off loopback.
func setupAuth(ctx context.Context, h dshconfig.HTTP, file string, loopback, noAuth bool, getenv func(string) string, log zerolog.Logger) (*authSetup, error) {
	configured := len(h.Tokens) > 0 || h.JWT != nil
	if noAuth {
		if !loopback {
			return nil, errors.New("--no-auth is refused on a non-loopback address: anyone who can reach it could call every tool")
		}
		if configured {
			return nil, fmt.Errorf("--no-auth conflicts with the authentication %s configures (http.tokens, http.jwt)", file)
		}
		return &authSetup{summary: "no authentication (--no-auth, loopback only)", stop: func() {}}, nil
	}
	st := &tokenSet{}
	configuredTokens := map[string]string{} // identity → http.tokens name
	var summary []string
	for _, t := range h.Tokens {
		tok, err := readToken(t, getenv)
		if err != nil {
			return nil, &dshconfig.Error{File: file, Key: t.Key, Msg: err.Error()}
		}
		st.add("token:"+t.Name, tok)
		configuredTokens["token:"+t.Name] = t.Name
	}
	if len(h.Tokens) > 0 {
		summary = append(summary, fmt.Sprintf("%d bearer token(s) of http.tokens", len(h.Tokens)))
	}
	a := &authSetup{stop: func() {}, opts: &auth.RequireBearerTokenOptions{AllowMissingExpiration: true}}
	var jv *jwtVerifier
	if h.JWT != nil {
		var err error
		jv, err = newJWTVerifier(ctx, h.JWT, log)
		if err != nil {
			return nil, &dshconfig.Error{File: file, Key: "http.jwt", Msg: err.Error()}
		}
		a.stop = jv.stop
		a.metadata = &oauthex.ProtectedResourceMetadata{
			Resource:               h.Resource,
			AuthorizationServers:   []string{h.JWT.Issuer},
			ScopesSupported:        h.JWT.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "dsh MCP gateway",
		}
		a.metadataPaths = metadataPaths(h.Resource)
		a.opts.ResourceMetadataURL = metadataURL(h.Resource)
		summary = append(summary, "JWT access tokens of "+h.JWT.Issuer)
	}
	if !configured {
		if tok := getenv(tokenEnv); tok != "" {
			if len(tok) < minTokenLen {
				return nil, fmt.Errorf("$%s is %d characters; use at least %d (openssl rand -hex 32)", tokenEnv, len(tok), minTokenLen)
			}
			st.add("token:default", tok)
			summary = append(summary, "the bearer token of $"+tokenEnv)
		} else if loopback {
			b := make([]byte, 32)
			if _, err := rand.Read(b); err != nil {
				return nil, err
			}
			a.generated = base64.RawURLEncoding.EncodeToString(b)
			st.add("token:default", a.generated)
			summary = append(summary, "a bearer token generated for this run")
		} else {
			return nil, fmt.Errorf("a non-loopback address needs authentication: export %s=$(openssl rand -hex 32), or configure http.tokens or http.jwt in %s", tokenEnv, file)
		}
	}
	a.summary = strings.Join(summary, " and ")
	a.verifier = func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		if id, ok := st.match(token); ok {
			ti := &auth.TokenInfo{UserID: id}
			if name, ok := configuredTokens[id]; ok {
				ti.Extra = map[string]any{extraToken: name}
			}
			return ti, nil
		}
		if jv != nil {
			ti, err := jv.verify(ctx, token)
			if err == nil {
				return ti, nil
			}
			log.Debug().Str("reason", err.Error()).Msg("JWT refused")
		}
		return nil, auth.ErrInvalidToken
	}
	return a, nil
}

// readToken reads a token from its variable or file.
func readToken(t dshconfig.Token, getenv func(string) string) (string, error) {
	var tok string
	if t.Env != "" {
		tok = getenv(t.Env)
		if tok == "" {
			return "", fmt.Errorf("environment variable %s is not set or empty", t.Env)
		}
	} else {
		f, err := os.Open(t.File)
		if err != nil {
			return "", fmt.Errorf("token file: %v", err)
		}
		defer f.Close()
		b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
		if err != nil {
			return "", fmt.Errorf("token file: %v", err)
		}
		if len(b) > maxTokenFile {
			return "", fmt.Errorf("token file %s is larger than %d bytes", t.File, maxTokenFile)
		}
		tok = strings.TrimSpace(string(b))
	}
	if len(tok) < minTokenLen {
		return "", fmt.Errorf("the token is %d characters; use at least %d (openssl rand -hex 32)", len(tok), minTokenLen)
	}
	if strings.ContainsAny(tok, " \t\r\n") {
		return "", errors.New("the token contains white space")
	}
	return tok, nil
}

// tokenSet holds the SHA-256 of each accepted token; a match compares
// every one in constant time.
type tokenSet struct {
	ids    []string
	hashes [][32]byte
}

func (s *tokenSet) add(id, tok string) {
	s.ids = append(s.ids, id)
	s.hashes = append(s.hashes, sha256.Sum256([]byte(tok)))
}

func (s *tokenSet) match(tok string) (string, bool) {
	h := sha256.Sum256([]byte(tok))
	found := -1
	for i := range s.hashes {
		if subtle.ConstantTimeCompare(h[:], s.hashes[i][:]) == 1 && found < 0 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return s.ids[found], true
}

// jwtVerifier validates JWT access tokens with keys of the issuer's JWKS
// (fetched and refreshed by keyfunc), their issuer, audience and expiry
// (github.com/golang-jwt/jwt/v5).
type jwtVerifier struct {
	cfg    *dshconfig.JWT
	kf     keyfunc.Keyfunc
	parser *jwt.Parser
	stop   func()
}

// jwtAlgs are the signature algorithms accepted: asymmetric ones only, so
// a token cannot be "signed" with a public key as an HMAC secret.
var jwtAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

func newJWTVerifier(ctx context.Context, cfg *dshconfig.JWT, log zerolog.Logger) (*jwtVerifier, error) {
	ctx, cancel := context.WithCancel(ctx)
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
		HTTPTimeout: 10 * time.Second,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(_ context.Context, err error) {
				log.Warn().Err(err).Str("jwks", redact.URL(u)).Msg("refreshing the JWKS failed")
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("JWKS %s: %v", redact.URL(cfg.JWKSURL), err)
	}
	p := jwt.NewParser(
		jwt.WithValidMethods(jwtAlgs),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(30*time.Second),
	)
	return &jwtVerifier{cfg: cfg, kf: kf, parser: p, stop: cancel}, nil
}

func (v *jwtVerifier) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	claims := jwt.MapClaims{}
	if _, err := v.parser.ParseWithClaims(token, claims, v.kf.KeyfuncCtx(ctx)); err != nil {
		return nil, err
	}
	claim := v.cfg.IdentityClaim
	if claim == "" {
		claim = "sub"
	}
	id, _ := claims[claim].(string)
	if id == "" {
		return nil, fmt.Errorf("no %q claim", claim)
	}
	exp, err := claims.GetExpirationTime()
	if err != nil || exp == nil {
		return nil, errors.New("no expiry")
	}
	var scopes []string
	switch s := claims["scope"].(type) {
	case string:
		scopes = strings.Fields(s)
	}
	if arr, ok := claims["scp"].([]any); ok {
		for _, x := range arr {
			if s, ok := x.(string); ok {
				scopes = append(scopes, s)
			}
		}
	}
	for _, want := range v.cfg.Scopes {
		found := false
		for _, s := range scopes {
			found = found || s == want
		}
		if !found {
			return nil, fmt.Errorf("scope %q missing", want)
		}
	}
	return &auth.TokenInfo{UserID: "jwt:" + id, Scopes: scopes, Expiration: exp.Time, Extra: map[string]any{extraClaims: map[string]any(claims)}}, nil
}

// metadataURL is the protected-resource metadata URL of resource (RFC
// 9728 §3.1: the well-known path inserted before the resource's path).
func metadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// metadataPaths are the paths the metadata is served at: the RFC 9728
// one for resource, and the bare well-known path.
func metadataPaths(resource string) []string {
	paths := []string{"/.well-known/oauth-protected-resource"}
	if u, err := url.Parse(metadataURL(resource)); err == nil && u.Path != paths[0] {
		paths = append(paths, u.Path)
	}
	return paths
}

// hostGuard accepts a request whose Host is an IP literal, a loopback
// name, this machine's host name or one of allowed; any other is refused
// (403): a DNS rebinding attack reaches the gateway under a name of the
// attacker's. It applies to every connection, loopback or not.
type hostGuard struct {
	allowed map[string]bool // host or host:port, lower case
}

func newHostGuard(allowed []string) *hostGuard {
	g := &hostGuard{allowed: map[string]bool{"localhost": true}}
	if hn, err := os.Hostname(); err == nil && hn != "" {
		g.allowed[strings.ToLower(hn)] = true
	}
	for _, h := range allowed {
		g.allowed[strings.ToLower(h)] = true
	}
	return g
}

func (g *hostGuard) ok(hostport string) bool {
	hostport = strings.ToLower(hostport)
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if host == "" {
		return false
	}
	if _, err := netip.ParseAddr(host); err == nil {
		return true
	}
	return g.allowed[host] || g.allowed[hostport]
}

// originOK accepts a request without Origin (not from a browser), from a
// loopback origin, or from one of allowed (lower-case origins).
func originOK(origin string, allowed []string) bool {
	if origin == "" {
		return true
	}
	o := strings.ToLower(origin)
	for _, a := range allowed {
		if o == a {
			return true
		}
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" {
		return false
	}
	h := u.Hostname()
	if h == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(h)
	return err == nil && ip.IsLoopback()
}

// httpFace wraps the MCP handler with the checks of the network face, in
// order: Host (403), Origin (403), the protected-resource metadata (no
// authentication), the bearer token (401, and 403 for a missing scope),
// then the body's size and read time (413, 408).
func httpFace(mcpH http.Handler, a *authSetup, h dshconfig.HTTP, lim dshconfig.Limits) http.Handler {
	inner := bodyGuard(mcpH, lim.MaxBodyBytes, lim.BodyTimeout)
	if a.verifier != nil {
		inner = auth.RequireBearerToken(a.verifier, a.opts)(inner)
	}
	mux := http.NewServeMux()
	mux.Handle("/", inner)
	if a.metadata != nil {
		meta := auth.ProtectedResourceMetadataHandler(a.metadata)
		for _, p := range a.metadataPaths {
			mux.Handle(p, meta)
		}
	}
	hosts := newHostGuard(h.AllowedHosts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hosts.ok(r.Host) {
			httpError(w, http.StatusForbidden, "Host header not allowed (list it in http.allowedHosts)")
			return
		}
		if !originOK(r.Header.Get("Origin"), h.AllowedOrigins) {
			httpError(w, http.StatusForbidden, "Origin not allowed (list it in http.allowedOrigins)")
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// bodyGuard reads a POST body whole before the handler runs: at most max
// bytes (413 past it) within timeout (408 past it), so that a trickled or
// endless body holds neither a goroutine nor memory for long. A JSON-RPC
// batch is refused (400): MCP 2025-06-18 removed batching, and an older
// client has no need of it.
func bodyGuard(next http.Handler, max int64, timeout time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		if r.ContentLength > max {
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", max))
			return
		}
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
		var mbe *http.MaxBytesError
		switch {
		case safeerr.AsAny(err, &mbe):
			httpError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", max))
			return
		case err != nil:
			w.Header().Set("Connection", "close")
			httpError(w, http.StatusRequestTimeout, "reading the request body failed or took longer than "+timeout.String())
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		if t := bytes.TrimLeft(body, " \t\r\n"); len(t) > 0 && t[0] == '[' {
			httpError(w, http.StatusBadRequest, "JSON-RPC batches are not served (MCP 2025-06-18 removed them); send one message per request")
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// httpError answers with a JSON-RPC error body (id null) and status.
func httpError(w http.ResponseWriter, status int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32000, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// limitListener accepts at most n connections at once; further ones wait
// in the kernel's backlog until one closes.
type limitListener struct {
	net.Listener
	sem       chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func newLimitListener(l net.Listener, n int) net.Listener {
	return &limitListener{Listener: l, sem: make(chan struct{}, n), done: make(chan struct{})}
}

func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.sem <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.sem
		return nil, err
	}
	return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}

// withDefaults fills the zero limits.
func withDefaults(l dshconfig.Limits) dshconfig.Limits {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	if l.MaxBodyBytes == 0 {
		l.MaxBodyBytes = defaultMaxBodyBytes
	}
	defd(&l.BodyTimeout, defaultBodyTimeout)
	defd(&l.HeaderTimeout, defaultHeaderTimeout)
	defd(&l.SessionIdleTimeout, defaultSessionIdleTimeout)
	def(&l.MaxConnections, defaultMaxConnections)
	def(&l.MaxSessions, defaultMaxSessions)
	def(&l.MaxSessionsPerIdentity, defaultMaxSessionsPerIdentity)
	def(&l.MaxCallsPerSession, defaultMaxCallsPerSession)
	def(&l.MaxCalls, defaultMaxCalls)
	return l
}
