package dshconfig

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Profile is one entry of "profiles": a named permission profile that the
// authenticated identities its Match names get instead of the top-level
// "permissions".
//
//	"profiles": {
//	  "ci": {
//	    "match": [{"token": "ci"}, {"claim": "groups", "value": "ci-bots"}],
//	    "permissions": {"allow": ["mcp__fs__read_*"], "defaultMode": "deny"},
//	    "tools": {"mode": "code"}
//	  },
//	  "alice": {"match": [{"sub": "alice@example.com"}], "permissions": {"defaultMode": "ask"}}
//	}
//
// "permissions" is required and has the grammar, and the parser, of the
// top-level object (its errors name their place: "profiles.ci.permissions.allow[2]").
// A match entry is one of {"token": NAME} (the bearer token of
// http.tokens NAME; a token belongs to one profile at most), {"sub":
// VALUE} (a JWT whose "sub" claim is VALUE) or {"claim": NAME, "value":
// VALUE} (a JWT whose claim NAME is VALUE, or is an array holding VALUE;
// a "scope" claim is read as its space-separated scopes). An identity
// gets the first profile, in file order, with a matching entry; one that
// none matches gets the top-level permissions, or is refused when
// "http.unmapped" is "refuse".
type Profile struct {
	// Name is the profile's key.
	Name string
	// Permissions is its "permissions" object, already checked with
	// permissions.Compile.
	Permissions permissions.Config
	// Mode is "tools.mode": how its sessions are presented the tools
	// (empty: the top-level "mode").
	Mode tools.Mode
	// Match lists the identities it applies to.
	Match []Match
	// Key is its key path ("profiles.ci").
	Key string
}

// Match is one entry of a profile's "match": Token names an http.tokens
// entry; otherwise Claim (which is "sub" for {"sub": …}) must hold Value
// in a JWT.
type Match struct {
	Token        string
	Claim, Value string
}

// The values of "http.unmapped".
const (
	UnmappedDefault = "default"
	UnmappedRefuse  = "refuse"
)

// DefaultProfile is the name the top-level permissions go by in records
// (a profile cannot take it).
const DefaultProfile = "default"

var profileName = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func (p *parser) profiles(v value, cfg *Config) {
	o, ok := v.(*object)
	if !ok {
		p.fail("profiles", "must be an object of permission profiles by name, not %s", kindOf(v))
		return
	}
	tokens := map[string]bool{}
	for _, t := range cfg.HTTP.Tokens {
		tokens[t.Name] = true
	}
	owner := map[string]string{} // token name → the profile it maps to
	for _, m := range o.members {
		key := "profiles." + m.key
		if !profileName.MatchString(m.key) {
			p.fail(key, "a profile name must be 1 to 64 of [A-Za-z0-9_.-]")
			continue
		}
		if m.key == DefaultProfile {
			p.fail(key, "%q is the name of the top-level permissions; name the profile otherwise", DefaultProfile)
			continue
		}
		po, ok := p.object(key, m.val, "match", "permissions", "tools")
		if !ok {
			continue
		}
		pr := Profile{Name: m.key, Key: key}
		good := true
		if pv, ok := po.get("permissions"); ok {
			pr.Permissions, good = p.permissionsAt(key+".permissions", pv)
		} else {
			p.fail(key+".permissions", "is required: the profile's allow, ask and deny rules and defaultMode")
			good = false
		}
		if tv, ok := po.get("tools"); ok {
			if to, ok := p.object(key+".tools", tv, "mode"); ok {
				if mv, ok := to.get("mode"); ok {
					if s, ok := p.str(key+".tools.mode", mv); ok {
						switch md := tools.Mode(s); md {
						case tools.Native, tools.Code, tools.Both:
							pr.Mode = md
						default:
							p.fail(key+".tools.mode", "must be \"native\", \"code\" or \"both\", not %q", s)
						}
					}
				}
			}
		}
		mv, ok := po.get("match")
		if !ok {
			p.fail(key+".match", "is required: the identities the profile applies to ([{\"token\": NAME}, {\"sub\": VALUE}, {\"claim\": NAME, \"value\": VALUE}])")
			continue
		}
		arr, ok := mv.([]value)
		if !ok || len(arr) == 0 {
			p.fail(key+".match", "must be a non-empty array of matches, not %s", kindOf(mv))
			continue
		}
		for i, e := range arr {
			mk := key + ".match[" + strconv.Itoa(i) + "]"
			mt, ok := p.match(mk, e, cfg)
			if !ok {
				continue
			}
			if mt.Token != "" {
				if !tokens[mt.Token] {
					p.fail(mk+".token", "%q is not a token of http.tokens", mt.Token)
					continue
				}
				if prev, dup := owner[mt.Token]; dup {
					p.fail(mk+".token", "token %q is already mapped to profile %q; a token has one profile", mt.Token, prev)
					continue
				}
				owner[mt.Token] = m.key
			}
			pr.Match = append(pr.Match, mt)
		}
		if good {
			cfg.Profiles = append(cfg.Profiles, pr)
		}
	}
}

func (p *parser) match(key string, v value, cfg *Config) (Match, bool) {
	o, ok := p.object(key, v, "token", "sub", "claim", "value")
	if !ok {
		return Match{}, false
	}
	get := func(k string) (string, bool) {
		x, ok := o.get(k)
		if !ok {
			return "", false
		}
		s, ok := p.str(key+"."+k, x)
		if ok && s == "" {
			p.fail(key+"."+k, "must be non-empty")
			return "", false
		}
		return s, ok
	}
	_, hasTok := o.get("token")
	_, hasSub := o.get("sub")
	_, hasClaim := o.get("claim")
	_, hasValue := o.get("value")
	n := 0
	for _, b := range []bool{hasTok, hasSub, hasClaim} {
		if b {
			n++
		}
	}
	if n != 1 || hasValue != hasClaim {
		p.fail(key, "must be one of {\"token\": NAME}, {\"sub\": VALUE} or {\"claim\": NAME, \"value\": VALUE}")
		return Match{}, false
	}
	var m Match
	switch {
	case hasTok:
		s, ok := get("token")
		if !ok {
			return Match{}, false
		}
		m.Token = s
		return m, true
	case hasSub:
		s, ok := get("sub")
		if !ok {
			return Match{}, false
		}
		m.Claim, m.Value = "sub", s
	default:
		c, ok1 := get("claim")
		val, ok2 := get("value")
		if !ok1 || !ok2 {
			return Match{}, false
		}
		m.Claim, m.Value = c, val
	}
	if cfg.HTTP.JWT == nil {
		p.fail(key, "matches a JWT claim, but http.jwt is not configured")
		return Match{}, false
	}
	return m, true
}

// Caller is what a profile is chosen by: the http.tokens entry that
// authenticated the caller (Token), or the claims of its JWT (Claims).
type Caller struct {
	Token  string
	Claims map[string]any
}

// ResolveProfile returns the profile of c: the first of profiles, in
// order, with a matching entry (its index), or -1 when none matches.
func ResolveProfile(profiles []Profile, c Caller) int {
	for i := range profiles {
		for _, m := range profiles[i].Match {
			if m.Matches(c) {
				return i
			}
		}
	}
	return -1
}

// Matches reports whether m names c: the same token, or a claim holding
// m.Value (equal to it, or an array with an element equal to it; a
// "scope" claim's space-separated scopes count as its elements). A value
// of any other type matches nothing.
func (m Match) Matches(c Caller) bool {
	if m.Token != "" {
		return c.Token == m.Token
	}
	if c.Token != "" || m.Claim == "" || c.Claims == nil {
		return false
	}
	switch x := c.Claims[m.Claim].(type) {
	case string:
		if m.Claim == "scope" {
			for _, s := range strings.Fields(x) {
				if s == m.Value {
					return true
				}
			}
			return false
		}
		return x == m.Value
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s == m.Value {
				return true
			}
		}
	case []string:
		for _, s := range x {
			if s == m.Value {
				return true
			}
		}
	}
	return false
}
