package dshconfig

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Audit is the "audit" object of dsh.json: where `dsh mcp serve` records
// every call, and how.
//
//	"audit": {
//	  "store": "sqlite",                 // or "postgres"
//	  "path": "dsh-audit.db",            // sqlite: beside this file by default
//	  "dsn": "${DSH_AUDIT_DSN}",         // postgres: from the environment
//	  "instance": "gw-eu-1",             // this gateway's name in the record
//	  "queue": 4096, "onFull": "block", "blockTimeout": "2s",
//	  "maxArgBytes": 4096, "maxPreviewBytes": 512,
//	  "redact": ["*ssn*", "card_number"]
//	}
//
// An empty object, `"audit": {}`, records to dsh-audit.db beside the
// config file.
type Audit struct {
	// Store is "sqlite" (default) or "postgres".
	Store string
	// Path is the SQLite file (absolute, resolved against the config
	// file's directory).
	Path string
	// DSN is the PostgreSQL connection string (${VAR} expanded; never
	// printed).
	DSN string
	// Instance names this gateway in the record.
	Instance string
	// Queue, OnFull ("block" or "fail") and BlockTimeout bound the write
	// queue (see plugins/audit WriterConfig).
	Queue        int
	OnFull       string
	BlockTimeout time.Duration
	// MaxArgBytes and MaxPreviewBytes bound what is kept of the
	// arguments and of the result.
	MaxArgBytes, MaxPreviewBytes int
	// Redact are argument-name globs whose values are recorded as "***",
	// besides the built-in ones (password, token, secret, ...).
	Redact []string
	// Key is "audit" (for messages).
	Key string
}

// Approval is the "approval" object: where asks go.
//
//	"approval": {
//	  "approver": "client",                                // every ask by default
//	  "rules": {"mcp__fs__write_file(path:/srv/**)": "console"},
//	  "timeout": "10m"
//	}
//
// "approver" is "client" (the calling MCP client, as an elicitation: the
// client's own consent) or "console" (the approval inbox of `dsh console`
// and `dsh mcp serve --console`, which the client cannot answer). "rules"
// routes the asks of particular permissions.ask rules (each key must be
// one of them, character for character) or "defaultMode" (asks no rule
// made). "identities" routes every ask of a caller ("token:ci", a JWT
// subject): an untrusted agent's asks go to a person. An ask goes to the
// console when any of the three says so: a call that any console-routed
// rule matches goes there even when an earlier rule asked.
type Approval struct {
	// Approver is the default channel: "client" (or "") or "console".
	Approver string
	// Rules maps ask rules (and "defaultMode") to a channel.
	Rules map[string]string
	// Timeout bounds a console ask's wait (0: as long as the call).
	Timeout time.Duration
	// Identities maps caller identities, as the record names them
	// ("token:ci" for http.tokens.ci, a JWT's subject), to a channel:
	// every ask of a caller mapped to "console" goes there.
	Identities map[string]string
}

// Console is the "console" object: who may open the console.
//
//	"console": {"tokens": {"ops": {"env": "DSH_CONSOLE_TOKEN"}}, "allowedOrigins": [], "allowedHosts": []}
//
// Console tokens are separate from "http.tokens": one cannot call tools,
// the other cannot answer asks.
type Console struct {
	Tokens         []Token
	AllowedOrigins []string
	AllowedHosts   []string
}

// Approvers are the approval channels.
var Approvers = []string{"client", "console"}

func (p *parser) audit(v value, cfg *Config) {
	o, ok := p.object("audit", v, "store", "path", "dsn", "instance", "queue", "onFull", "blockTimeout",
		"maxArgBytes", "maxPreviewBytes", "redact")
	if !ok {
		return
	}
	a := &Audit{Store: "sqlite", Key: "audit"}
	if sv, ok := o.get("store"); ok {
		if s, ok := p.str("audit.store", sv); ok {
			if s != "sqlite" && s != "postgres" {
				p.fail("audit.store", "must be \"sqlite\" or \"postgres\", not %q", s)
			}
			a.Store = s
		}
	}
	if pv, ok := o.get("path"); ok {
		if s, ok := p.str("audit.path", pv); ok {
			a.Path = p.expand("audit.path", s)
		}
	}
	if dv, ok := o.get("dsn"); ok {
		if s, ok := p.str("audit.dsn", dv); ok {
			a.DSN = p.expand("audit.dsn", s)
		}
	}
	if iv, ok := o.get("instance"); ok {
		if s, ok := p.str("audit.instance", iv); ok {
			if !identityName.MatchString(s) {
				p.fail("audit.instance", "must be 1 to 64 of [A-Za-z0-9_.@-]")
			}
			a.Instance = s
		}
	}
	for _, f := range []struct {
		k    string
		into *int
	}{{"queue", &a.Queue}, {"maxArgBytes", &a.MaxArgBytes}, {"maxPreviewBytes", &a.MaxPreviewBytes}} {
		if nv, ok := o.get(f.k); ok {
			*f.into = p.posInt("audit."+f.k, nv)
		}
	}
	if fv, ok := o.get("onFull"); ok {
		if s, ok := p.str("audit.onFull", fv); ok {
			if s != "block" && s != "fail" {
				p.fail("audit.onFull", "must be \"block\" (wait up to blockTimeout, then fail the call) or \"fail\" (fail the call at once), not %q", s)
			}
			a.OnFull = s
		}
	}
	if bv, ok := o.get("blockTimeout"); ok {
		a.BlockTimeout = p.duration("audit.blockTimeout", bv)
	}
	if rv, ok := o.get("redact"); ok {
		a.Redact = p.strListX("audit.redact", rv, false)
		for i, r := range a.Redact {
			if _, err := filepath.Match(strings.ToLower(r), ""); err != nil || r == "" {
				p.fail("audit.redact["+strconv.Itoa(i)+"]", "%q is not a name pattern", r)
			}
		}
	}
	switch a.Store {
	case "sqlite":
		if a.DSN != "" {
			p.fail("audit.dsn", "applies to \"store\": \"postgres\" only")
		}
		if a.Path == "" {
			a.Path = "dsh-audit.db"
		}
		if !filepath.IsAbs(a.Path) {
			if dir, err := filepath.Abs(filepath.Dir(p.file)); err == nil {
				a.Path = filepath.Join(dir, a.Path)
			}
		}
	case "postgres":
		if a.DSN == "" {
			p.fail("audit.dsn", "is required with \"store\": \"postgres\" (a connection URL, e.g. \"${DSH_AUDIT_DSN}\"; keep the password out of the file)")
		}
		if a.Path != "" {
			p.fail("audit.path", "applies to \"store\": \"sqlite\" only")
		}
	}
	cfg.Audit = a
}

func (p *parser) posInt(key string, v value) int {
	n, ok := v.(json.Number)
	if !ok {
		p.fail(key, "must be a positive integer, not %s", kindOf(v))
		return 0
	}
	i, err := strconv.Atoi(string(n))
	if err != nil || i <= 0 || i > 1<<30 {
		p.fail(key, "must be a positive integer, not %s", n)
		return 0
	}
	return i
}

func (p *parser) approval(v value, cfg *Config) {
	o, ok := p.object("approval", v, "approver", "rules", "timeout", "identities")
	if !ok {
		return
	}
	channel := func(key string, v value) string {
		s, ok := p.str(key, v)
		if ok && s != "client" && s != "console" {
			p.fail(key, "must be \"client\" or \"console\", not %q", s)
		}
		return s
	}
	if av, ok := o.get("approver"); ok {
		cfg.Approval.Approver = channel("approval.approver", av)
	}
	if tv, ok := o.get("timeout"); ok {
		cfg.Approval.Timeout = p.duration("approval.timeout", tv)
	}
	if iv, ok := o.get("identities"); ok {
		io, ok := iv.(*object)
		if !ok {
			p.fail("approval.identities", "must be an object of channels by identity, not %s", kindOf(iv))
		} else {
			cfg.Approval.Identities = map[string]string{}
			for _, m := range io.members {
				if m.key == "" {
					p.fail("approval.identities", "an identity must not be empty")
					continue
				}
				cfg.Approval.Identities[m.key] = channel("approval.identities."+m.key, m.val)
			}
		}
	}
	if rv, ok := o.get("rules"); ok {
		ro, ok := rv.(*object)
		if !ok {
			p.fail("approval.rules", "must be an object of channels by ask rule, not %s", kindOf(rv))
			return
		}
		cfg.Approval.Rules = map[string]string{}
		for _, m := range ro.members {
			cfg.Approval.Rules[m.key] = channel("approval.rules."+m.key, m.val)
		}
	}
}

// checkApproval checks that each routed rule is an ask rule (run after
// "permissions" is read).
func (p *parser) checkApproval(cfg *Config) {
	for r := range cfg.Approval.Rules {
		if r == "defaultMode" {
			continue
		}
		found := false
		for _, a := range cfg.Permissions.Ask {
			if a == r {
				found = true
			}
		}
		for _, pr := range cfg.Profiles {
			for _, a := range pr.Permissions.Ask {
				found = found || a == r
			}
		}
		if !found {
			p.fail("approval.rules."+r, "is not one of permissions.ask nor of a profile's (routing applies to ask rules, written exactly as there)")
		}
	}
}

func (p *parser) console(v value, cfg *Config) {
	o, ok := p.object("console", v, "tokens", "allowedOrigins", "allowedHosts")
	if !ok {
		return
	}
	if tv, ok := o.get("tokens"); ok {
		cfg.Console.Tokens = p.tokens("console.tokens", tv)
	}
	if av, ok := o.get("allowedOrigins"); ok {
		cfg.Console.AllowedOrigins = p.strListX("console.allowedOrigins", av, false)
	}
	if hv, ok := o.get("allowedHosts"); ok {
		cfg.Console.AllowedHosts = p.strListX("console.allowedHosts", hv, false)
	}
}

// tokens reads an object of token sources by identity name ("http.tokens",
// "console.tokens").
func (p *parser) tokens(key0 string, tv value) []Token {
	var out []Token
	to, ok := tv.(*object)
	if !ok {
		p.fail(key0, "must be an object of token sources by identity name, not %s", kindOf(tv))
	} else {
		for _, m := range to.members {
			key := key0 + "." + m.key
			if !identityName.MatchString(m.key) {
				p.fail(key, "an identity name must be 1 to 64 of [A-Za-z0-9_.@-]")
				continue
			}
			so, ok := p.object(key, m.val, "env", "file")
			if !ok {
				continue
			}
			t := Token{Name: m.key, Key: key}
			ev, hasEnv := so.get("env")
			fv, hasFile := so.get("file")
			switch {
			case hasEnv == hasFile:
				p.fail(key, "needs exactly one of \"env\" (a variable holding the token) or \"file\" (a file holding it); a token is never written in dsh.json")
				continue
			case hasEnv:
				if s, ok := p.str(key+".env", ev); ok {
					if !envName.MatchString(s) {
						p.fail(key+".env", "%q is not a variable name", s)
					}
					t.Env = s
				}
			default:
				if s, ok := p.str(key+".file", fv); ok {
					t.File = p.expand(key+".file", s)
					if t.File == "" {
						p.fail(key+".file", "must be a non-empty path")
					}
				}
			}
			out = append(out, t)
		}
	}
	return out
}

// DefaultAudit is what `"audit": {}` in file means: SQLite, in
// dsh-audit.db beside file.
func DefaultAudit(file string) *Audit {
	a := &Audit{Store: "sqlite", Path: "dsh-audit.db", Key: "audit"}
	if dir, err := filepath.Abs(filepath.Dir(file)); err == nil {
		a.Path = filepath.Join(dir, a.Path)
	}
	return a
}
