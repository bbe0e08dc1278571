package dshconfig

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// HTTP is the "http" object of dsh.json: the network face of
// `dsh mcp serve --http`.
//
//	"http": {
//	  "tokens": {"alice": {"env": "ALICE_TOKEN"}, "ci": {"file": "/run/secrets/dsh-ci"}},
//	  "jwt": {"jwksUrl": "https://id.example/jwks.json", "issuer": "https://id.example",
//	          "audience": "https://dsh.example/mcp"},
//	  "resource": "https://dsh.example/mcp",
//	  "allowedOrigins": ["https://app.example"],
//	  "allowedHosts": ["dsh.example"],
//	  "limits": {"maxBodyBytes": 4194304, "maxSessions": 256, "maxCallsPerSession": 32}
//	}
//
// Secrets are never written in the file: a token is named by the
// environment variable or the file that holds it.
type HTTP struct {
	// Tokens are the bearer tokens accepted, by identity name, in file
	// order.
	Tokens []Token
	// JWT, when set, accepts JWT access tokens (OAuth 2.1 resource-server
	// mode) validated against an issuer's JWKS.
	JWT *JWT
	// Resource is this gateway's own URL as clients reach it (the
	// protected-resource metadata's "resource"); needed with JWT.
	Resource string
	// AllowedOrigins are the browser origins (scheme://host[:port])
	// accepted besides loopback ones; a request with any other Origin is
	// refused (403).
	AllowedOrigins []string
	// AllowedHosts are the Host header names accepted besides loopback
	// names, IP literals and this machine's host name (a DNS rebinding
	// defence).
	AllowedHosts []string
	// Limits bound what clients can make the gateway hold.
	Limits Limits
	// Unmapped is what an authenticated identity no profile matches gets
	// ("unmapped"): "default", the top-level permissions (the default
	// when empty), or "refuse": its sessions are refused.
	Unmapped string
	// Key is "http" when the object was present (for messages).
	Key string
}

// Token is one entry of "http.tokens": the identity Name authenticates
// with the token held by environment variable Env or in File (exactly
// one).
type Token struct {
	Name string
	Env  string
	File string
	// Key is the entry's key path ("http.tokens.alice").
	Key string
}

// JWT is "http.jwt": access tokens signed by a key of JWKSURL, with
// Issuer as "iss" and Audience among "aud", unexpired.
type JWT struct {
	JWKSURL  string
	Issuer   string
	Audience string
	// IdentityClaim names the claim that identifies the caller; empty
	// means "sub".
	IdentityClaim string
	// Scopes are required, each, in the token's "scope" claim.
	Scopes []string
}

// Limits is "http.limits". Zero fields take the gateway's defaults.
type Limits struct {
	MaxBodyBytes           int64
	BodyTimeout            time.Duration
	HeaderTimeout          time.Duration
	MaxConnections         int
	MaxSessions            int
	MaxSessionsPerIdentity int
	MaxCallsPerSession     int
	MaxCalls               int
	SessionIdleTimeout     time.Duration
}

var identityName = regexp.MustCompile(`^[A-Za-z0-9_.@-]{1,64}$`)

func (p *parser) http(v value, cfg *Config) {
	o, ok := p.object("http", v, "tokens", "jwt", "resource", "allowedOrigins", "allowedHosts", "limits", "unmapped")
	if !ok {
		return
	}
	h := HTTP{Key: "http"}
	if tv, ok := o.get("tokens"); ok {
		h.Tokens = p.tokens("http.tokens", tv)
	}
	if jv, ok := o.get("jwt"); ok {
		if jo, ok := p.object("http.jwt", jv, "jwksUrl", "issuer", "audience", "identityClaim", "scopes"); ok {
			j := &JWT{}
			for _, f := range []struct {
				k    string
				into *string
				url  bool
			}{{"jwksUrl", &j.JWKSURL, true}, {"issuer", &j.Issuer, false}, {"audience", &j.Audience, false}, {"identityClaim", &j.IdentityClaim, false}} {
				fv, ok := jo.get(f.k)
				if !ok {
					if f.k != "identityClaim" {
						p.fail("http.jwt."+f.k, "is required")
					}
					continue
				}
				if s, ok := p.str("http.jwt."+f.k, fv); ok {
					*f.into = p.expand("http.jwt."+f.k, s)
					if *f.into == "" {
						p.fail("http.jwt."+f.k, "must be non-empty")
					}
					if f.url {
						p.httpURL("http.jwt."+f.k, *f.into)
					}
				}
			}
			if sv, ok := jo.get("scopes"); ok {
				j.Scopes = p.strListX("http.jwt.scopes", sv, false)
			}
			h.JWT = j
		}
	}
	if rv, ok := o.get("resource"); ok {
		if s, ok := p.str("http.resource", rv); ok {
			h.Resource = p.expand("http.resource", s)
			p.httpURL("http.resource", h.Resource)
		}
	}
	if h.JWT != nil && h.Resource == "" {
		p.fail("http.resource", "is required with http.jwt: this gateway's URL as clients reach it (the protected-resource metadata names it)")
	}
	if ov, ok := o.get("allowedOrigins"); ok {
		for i, s := range p.strListX("http.allowedOrigins", ov, false) {
			k := "http.allowedOrigins[" + strconv.Itoa(i) + "]"
			u, err := url.Parse(s)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
				p.fail(k, "must be an origin such as \"https://app.example\" or \"http://localhost:3000\", not %q", s)
				continue
			}
			h.AllowedOrigins = append(h.AllowedOrigins, strings.ToLower(s))
		}
	}
	if hv, ok := o.get("allowedHosts"); ok {
		for i, s := range p.strListX("http.allowedHosts", hv, false) {
			if s == "" || strings.ContainsAny(s, "/ @*") {
				p.fail("http.allowedHosts["+strconv.Itoa(i)+"]", "must be a host name, optionally with :port, not %q", s)
				continue
			}
			h.AllowedHosts = append(h.AllowedHosts, strings.ToLower(s))
		}
	}
	if lv, ok := o.get("limits"); ok {
		h.Limits = p.limits(lv)
	}
	if uv, ok := o.get("unmapped"); ok {
		if s, ok := p.str("http.unmapped", uv); ok {
			switch s {
			case UnmappedDefault, UnmappedRefuse:
				h.Unmapped = s
			default:
				p.fail("http.unmapped", "must be %q (the top-level permissions) or %q, not %q", UnmappedDefault, UnmappedRefuse, s)
			}
		}
	}
	cfg.HTTP = h
}

func (p *parser) httpURL(key, s string) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.fail(key, "must be an http:// or https:// URL")
	}
}

func (p *parser) limits(v value) Limits {
	var l Limits
	o, ok := p.object("http.limits", v, "maxBodyBytes", "bodyTimeout", "headerTimeout", "maxConnections",
		"maxSessions", "maxSessionsPerIdentity", "maxCallsPerSession", "maxCalls", "sessionIdleTimeout")
	if !ok {
		return l
	}
	for _, f := range []struct {
		k    string
		into *time.Duration
	}{{"bodyTimeout", &l.BodyTimeout}, {"headerTimeout", &l.HeaderTimeout}, {"sessionIdleTimeout", &l.SessionIdleTimeout}} {
		if fv, ok := o.get(f.k); ok {
			*f.into = p.duration("http.limits."+f.k, fv)
		}
	}
	for _, f := range []struct {
		k    string
		into *int
	}{{"maxConnections", &l.MaxConnections}, {"maxSessions", &l.MaxSessions}, {"maxSessionsPerIdentity", &l.MaxSessionsPerIdentity},
		{"maxCallsPerSession", &l.MaxCallsPerSession}, {"maxCalls", &l.MaxCalls}} {
		if fv, ok := o.get(f.k); ok {
			*f.into = int(p.count("http.limits."+f.k, fv, 1<<20))
		}
	}
	if fv, ok := o.get("maxBodyBytes"); ok {
		l.MaxBodyBytes = p.count("http.limits.maxBodyBytes", fv, 1<<30)
	}
	return l
}

// count decodes a positive integer no greater than limit.
func (p *parser) count(key string, v value, limit int64) int64 {
	n, ok := v.(json.Number)
	if !ok {
		p.fail(key, "must be a positive integer, not %s", kindOf(v))
		return 0
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || i <= 0 || i > limit {
		p.fail(key, "must be an integer from 1 to %d, not %s", limit, n)
		return 0
	}
	return i
}

// reconnect decodes a server's "reconnect" object.
func (p *parser) reconnect(key string, v value) Reconnect {
	var r Reconnect
	o, ok := p.object(key, v, "maxAttempts", "initialDelay", "maxDelay")
	if !ok {
		return r
	}
	if mv, ok := o.get("maxAttempts"); ok {
		n, isNum := mv.(json.Number)
		i, err := strconv.ParseInt(string(n), 10, 32)
		switch {
		case !isNum:
			p.fail(key+".maxAttempts", "must be an integer, not %s", kindOf(mv))
		case err != nil || i == 0:
			p.fail(key+".maxAttempts", "must be a positive integer, or -1 for no retry, not %s", n)
		case i < 0:
			r.MaxAttempts = -1
		default:
			r.MaxAttempts = int(i)
		}
	}
	if dv, ok := o.get("initialDelay"); ok {
		r.InitialDelay = p.duration(key+".initialDelay", dv)
	}
	if dv, ok := o.get("maxDelay"); ok {
		r.MaxDelay = p.duration(key+".maxDelay", dv)
	}
	return r
}

// topLevelUnknown reports the top-level keys dsh does not read: a warning
// for another client's setting, an error for what looks like a misspelt
// key of dsh's own (a misspelt "permissions" ignored would drop the
// rules, so it refuses the file).
func (p *parser) topLevelUnknown(o *object, cfg *Config) {
	for _, m := range o.members {
		if containsString(topLevelKeys, m.key) {
			continue
		}
		if near := nearKey(m.key, topLevelKeys); near != "" {
			p.fail(m.key, "unknown key (did you mean %q? known here: %s)", near, strings.Join(topLevelKeys, ", "))
			continue
		}
		cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("%s: %s: ignored (not a dsh setting; dsh reads %s)", p.file, m.key, strings.Join(topLevelKeys, ", ")))
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// nearKey returns the known key k resembles (same letters ignoring case,
// punctuation and a plural s, or at most two edits away), or "".
func nearKey(k string, known []string) string {
	norm := func(s string) string {
		s = strings.ToLower(s)
		s = strings.Map(func(r rune) rune {
			if r == '_' || r == '-' || r == ' ' || r == '.' {
				return -1
			}
			return r
		}, s)
		return strings.TrimSuffix(s, "s")
	}
	nk := norm(k)
	for _, w := range known {
		nw := norm(w)
		if nk == nw || editDistance(nk, nw, 2) <= 2 {
			return w
		}
	}
	return ""
}

// editDistance is the Levenshtein distance of a and b, or max+1 when it is
// larger than max (long inputs are cut short).
func editDistance(a, b string, max int) int {
	if len(a) > 64 || len(b) > 64 {
		return max + 1
	}
	if d := len(a) - len(b); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := prev[j-1]
			if a[i-1] != b[j-1] {
				c++
			}
			cur[j] = min(c, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	if prev[len(b)] > max {
		return max + 1
	}
	return prev[len(b)]
}
