package dshconfig

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/redact"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/internal/toolpat"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// MaxFileSize is the largest config file accepted, in bytes.
const MaxFileSize = 1 << 20

// Config is a decoded dsh.json.
type Config struct {
	// File is the name the config was loaded from (for messages).
	File string
	// Servers are the entries of mcpServers, in file order.
	Servers []Server
	// Permissions is the "permissions" object, already checked with
	// permissions.Compile.
	Permissions permissions.Config
	// Timeouts are the per-tool time budgets of "timeouts", in file order:
	// the first whose pattern matches a tool's name applies.
	Timeouts []Timeout
	// Mode is the tools mode the gateway serves ("native", "code", "both";
	// empty means native).
	Mode tools.Mode
	// HTTP is the "http" object: how `dsh mcp serve --http` authenticates,
	// which origins and hosts it accepts, and its limits.
	HTTP HTTP
	// Audit is the "audit" object: where calls are recorded (nil: not
	// recorded unless `dsh mcp serve --audit` or --console asks, with
	// the defaults).
	Audit *Audit
	// CallLog is the "callLog" object: a JSON line per call (nil: none).
	CallLog *CallLog
	// Approval is the "approval" object: where asks go.
	Approval Approval
	// Console is the "console" object: who may open the console.
	Console Console
	// Profiles are the named permission profiles of "profiles", in file
	// order: each authenticated identity a profile's match names gets
	// that profile's rules (and tools mode) instead of Permissions.
	Profiles []Profile
	// Warnings are problems that did not refuse the file: top-level keys
	// dsh does not use (other clients' settings, such as
	// "globalShortcut"), each naming file and key.
	Warnings []string
}

// Server is one entry of mcpServers: a stdio server (Command, Args, Env,
// Cwd) or a streamable HTTP server (URL, Headers).
type Server struct {
	// Name is the entry's key: tools are mounted as mcp__<Name>__<tool>.
	Name string
	// Command, Args, Env and Cwd start a stdio server.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// URL and Headers reach a streamable HTTP server, or a legacy
	// HTTP+SSE one when SSE ("type": "sse").
	URL     string
	Headers map[string]string
	SSE     bool
	// Timeout bounds each tool call to this server (0 = none): the
	// entry's "callTimeout", or its older spelling "timeout".
	Timeout time.Duration
	// ConnectTimeout bounds each connection attempt: start, handshake and
	// the first tools/list ("connectTimeout"; 0 = the client's default,
	// 30s).
	ConnectTimeout time.Duration
	// Reconnect is the retry schedule after a failed start or a lost
	// session ("reconnect").
	Reconnect Reconnect
	// Required makes a server that cannot start refuse the whole gateway
	// ("required": true). By default such a server is reported, left out
	// and retried while the others serve.
	Required bool
	// Trusted lets the server's tool annotations inform policy and
	// concurrency.
	Trusted bool
}

// Reconnect is a server's "reconnect" object: retry n waits
// min(InitialDelay·2^(n-1), MaxDelay).
type Reconnect struct {
	// MaxAttempts is the number of attempts before giving up: 0 means
	// the gateway's default (retry for as long as it runs), negative
	// never retries.
	MaxAttempts int
	// InitialDelay and MaxDelay bound the backoff (0: the client's
	// defaults, 500ms and 30s).
	InitialDelay, MaxDelay time.Duration
}

// Stdio reports whether s is a stdio server (else an HTTP one).
func (s Server) Stdio() bool { return s.Command != "" }

// Timeout is one entry of "timeouts": tools whose name matches Tool (a
// tool-name pattern, as in permission rules: "*" matches any run,
// "mcp__fs" every tool of the server fs) get Budget.
type Timeout struct {
	Tool   string
	Budget time.Duration
	// Key is the entry's key path, for messages ("timeouts.mcp__fs__*").
	Key string
}

// Matches reports whether the pattern t.Tool names name, in the grammar
// of the tool-name part of permission rules (package internal/toolpat:
// "mcp__fs" names every tool of the server fs). An invalid pattern (which
// Load refuses) names nothing.
func (t Timeout) Matches(name string) bool {
	p, err := toolpat.Parse(t.Tool)
	return err == nil && p.Match(name)
}

// Error is one problem in a config file: File, the key path (Key,
// "mcpServers.fs.command"; empty for a syntax error), and Msg.
type Error struct {
	File string
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return e.File + ": " + e.Msg
	}
	return e.File + ": " + e.Key + ": " + e.Msg
}

// Load reads and parses the file at path, expanding ${VAR} from the
// process environment.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	cfg, err := Parse(path, data, os.LookupEnv)
	if err == nil {
		// The rules' current directory: the process's own (the gateway's
		// servers start there too); `dsh hook` sets the payload's cwd.
		if wd, werr := os.Getwd(); werr == nil {
			if cfg.Permissions.WorkDir == "" {
				cfg.Permissions.WorkDir = wd
			}
			for i := range cfg.Profiles {
				if cfg.Profiles[i].Permissions.WorkDir == "" {
					cfg.Profiles[i].Permissions.WorkDir = wd
				}
			}
		}
	}
	return cfg, err
}

// Parse decodes data, naming file in errors and reading ${VAR} through
// lookupEnv (nil: no variables are defined). Every problem found is
// reported, joined; a nil error means every part of the config is valid.
func Parse(file string, data []byte, lookupEnv func(string) (string, bool)) (*Config, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	p := &parser{file: file, env: lookupEnv}
	if len(data) > MaxFileSize {
		return nil, &Error{File: file, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}
	}
	if !utf8.Valid(data) {
		return nil, &Error{File: file, Msg: "not valid UTF-8"}
	}
	root, err := parseJSON(data)
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	cfg := &Config{File: file}
	p.config(root, cfg)
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return cfg, nil
}

type parser struct {
	file string
	env  func(string) (string, bool)
	errs []error
}

func (p *parser) fail(key, format string, args ...any) {
	p.errs = append(p.errs, &Error{File: p.file, Key: key, Msg: fmt.Sprintf(format, args...)})
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// object checks that v is an object and that it has only known keys.
func (p *parser) object(key string, v value, known ...string) (*object, bool) {
	o, ok := v.(*object)
	if !ok {
		p.fail(key, "must be an object, not %s", kindOf(v))
		return nil, false
	}
	for _, m := range o.members {
		if !slices.Contains(known, m.key) {
			p.fail(join(key, m.key), "unknown key (known here: %s)", strings.Join(known, ", "))
		}
	}
	return o, true
}

// topLevelKeys are the top-level keys dsh reads; any other is ignored
// with a warning unless it looks like a misspelling of one of these.
var topLevelKeys = []string{"mcpServers", "permissions", "timeouts", "mode", "http", "audit", "approval", "console", "profiles", "callLog"}

func (p *parser) config(root value, cfg *Config) {
	o, ok := root.(*object)
	if !ok {
		p.fail("", "must be an object, not %s", kindOf(root))
		return
	}
	p.topLevelUnknown(o, cfg)
	if v, ok := o.get("http"); ok {
		p.http(v, cfg)
	}
	if v, ok := o.get("mcpServers"); ok {
		p.servers(v, cfg)
	}
	if v, ok := o.get("permissions"); ok {
		p.permissions(v, cfg)
	}
	if v, ok := o.get("timeouts"); ok {
		p.timeouts(v, cfg)
	}
	if v, ok := o.get("audit"); ok {
		p.audit(v, cfg)
	}
	if v, ok := o.get("profiles"); ok {
		p.profiles(v, cfg)
	}
	if v, ok := o.get("callLog"); ok {
		p.callLog(v, cfg)
	}
	if v, ok := o.get("approval"); ok {
		p.approval(v, cfg)
		p.checkApproval(cfg)
	}
	if v, ok := o.get("console"); ok {
		p.console(v, cfg)
	}
	if v, ok := o.get("mode"); ok {
		if s, ok := p.str("mode", v); ok {
			switch m := tools.Mode(s); m {
			case tools.Native, tools.Code, tools.Both:
				cfg.Mode = m
			default:
				p.fail("mode", "must be \"native\", \"code\" or \"both\", not %q", s)
			}
		}
	}
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,47}$`)

func (p *parser) servers(v value, cfg *Config) {
	o, ok := v.(*object)
	if !ok {
		p.fail("mcpServers", "must be an object of servers by name, not %s", kindOf(v))
		return
	}
	for _, m := range o.members {
		key := "mcpServers." + m.key
		if !serverName.MatchString(m.key) {
			p.fail(key, "a server name must be 1 to 47 of [A-Za-z0-9_-] (it becomes part of tool names mcp__<server>__<tool>)")
			continue
		}
		if err := permissions.CheckServerName(m.key); err != nil {
			p.fail(key, "%s", err.Error())
			continue
		}
		so, ok := p.object(key, m.val, "type", "command", "args", "env", "cwd", "url", "headers", "timeout", "callTimeout", "connectTimeout", "reconnect", "required", "trusted", "disabled")
		if !ok {
			continue
		}
		s := Server{Name: m.key}
		typ := ""
		if tv, ok := so.get("type"); ok {
			typ, _ = p.str(key+".type", tv)
			switch typ {
			case "stdio", "http", "streamable-http", "":
			case "sse":
				s.SSE = true
			default:
				p.fail(key+".type", "must be \"stdio\", \"http\" or \"sse\", not %q", typ)
			}
		}
		if dv, ok := so.get("disabled"); ok {
			if d, ok := p.boolean(key+".disabled", dv); ok && d {
				continue
			}
		}
		_, hasCmd := so.get("command")
		_, hasURL := so.get("url")
		switch {
		case hasCmd && hasURL:
			p.fail(key, "has both \"command\" (stdio) and \"url\" (http); keep one")
			continue
		case !hasCmd && !hasURL:
			p.fail(key, "needs \"command\" (a stdio server) or \"url\" (a streamable HTTP server)")
			continue
		case hasCmd && (typ == "http" || typ == "streamable-http" || typ == "sse"):
			p.fail(key+".type", "is %q but the server has a \"command\"", typ)
		case hasURL && typ == "stdio":
			p.fail(key+".type", "is \"stdio\" but the server has a \"url\"")
		}
		if hasCmd {
			for _, k := range []string{"headers"} {
				if _, ok := so.get(k); ok {
					p.fail(key+"."+k, "belongs to an HTTP server (url), not a stdio one")
				}
			}
			cv, _ := so.get("command")
			if c, ok := p.str(key+".command", cv); ok {
				s.Command = p.expand(key+".command", c)
				if strings.TrimSpace(s.Command) == "" {
					p.fail(key+".command", "must be a non-empty string")
				}
			}
			if av, ok := so.get("args"); ok {
				s.Args = p.strList(key+".args", av)
			}
			if ev, ok := so.get("env"); ok {
				s.Env = p.strMap(key+".env", ev, true)
			}
			if wv, ok := so.get("cwd"); ok {
				if c, ok := p.str(key+".cwd", wv); ok {
					s.Cwd = p.expand(key+".cwd", c)
				}
			}
		} else {
			for _, k := range []string{"args", "env", "cwd"} {
				if _, ok := so.get(k); ok {
					p.fail(key+"."+k, "belongs to a stdio server (command), not an HTTP one")
				}
			}
			uv, _ := so.get("url")
			if u, ok := p.str(key+".url", uv); ok {
				s.URL = p.expand(key+".url", u)
				if !strings.HasPrefix(s.URL, "http://") && !strings.HasPrefix(s.URL, "https://") {
					p.fail(key+".url", "must be an http:// or https:// URL, not %q", redact.URL(s.URL))
				}
			}
			if hv, ok := so.get("headers"); ok {
				s.Headers = p.strMap(key+".headers", hv, false)
			}
		}
		_, hasOld := so.get("timeout")
		_, hasNew := so.get("callTimeout")
		if hasOld && hasNew {
			p.fail(key+".timeout", "is the older spelling of \"callTimeout\"; keep one")
		}
		if tv, ok := so.get("timeout"); ok {
			s.Timeout = p.duration(key+".timeout", tv)
		}
		if tv, ok := so.get("callTimeout"); ok {
			s.Timeout = p.duration(key+".callTimeout", tv)
		}
		if tv, ok := so.get("connectTimeout"); ok {
			s.ConnectTimeout = p.duration(key+".connectTimeout", tv)
		}
		if rv, ok := so.get("reconnect"); ok {
			s.Reconnect = p.reconnect(key+".reconnect", rv)
		}
		if rv, ok := so.get("required"); ok {
			s.Required, _ = p.boolean(key+".required", rv)
		}
		if tv, ok := so.get("trusted"); ok {
			s.Trusted, _ = p.boolean(key+".trusted", tv)
		}
		cfg.Servers = append(cfg.Servers, s)
	}
}

// DefaultPrimaryArgs is the argument a rule condition without a key tests
// for tools whose rules have no built-in grammar; Claude Code's own tools
// (Bash, Read, Edit, Write, WebFetch, Agent, ...) have theirs in package
// permissions, and "Bash" here names the argument holding the command
// line. A "primaryArgs" object in the file adds tools or overrides these.
var DefaultPrimaryArgs = map[string]string{
	"Bash": "command",
}

func (p *parser) permissions(v value, cfg *Config) {
	if pc, ok := p.permissionsAt("permissions", v); ok {
		cfg.Permissions = pc
	}
}

// permissionsAt decodes and compiles a permissions object at key
// ("permissions", or a profile's "profiles.<name>.permissions"); every
// error names its place under key.
func (p *parser) permissionsAt(key string, v value) (permissions.Config, bool) {
	o, ok := p.object(key, v, "allow", "ask", "deny", "defaultMode", "workDir", "primaryArgs", "postBlock", "postContext")
	if !ok {
		return permissions.Config{}, false
	}
	pc := permissions.Config{PrimaryArgs: maps.Clone(DefaultPrimaryArgs)}
	// Claude Code's "/path" in Read(…) and Edit(…) rules is relative to
	// the file the rules are in.
	if dir, err := filepath.Abs(filepath.Dir(p.file)); err == nil {
		pc.ConfigDir = dir
	}
	if pv, ok := o.get("primaryArgs"); ok {
		maps.Copy(pc.PrimaryArgs, p.strMap(key+".primaryArgs", pv, false))
	}
	for _, l := range []struct {
		k    string
		into *[]string
	}{{"allow", &pc.Allow}, {"ask", &pc.Ask}, {"deny", &pc.Deny}, {"postBlock", &pc.PostBlock}} {
		if lv, ok := o.get(l.k); ok {
			*l.into = p.strListX(key+"."+l.k, lv, false) // rules are literal
		}
	}
	if dv, ok := o.get("defaultMode"); ok {
		if s, ok := p.str(key+".defaultMode", dv); ok {
			pc.DefaultMode = permissions.Verdict(s)
		}
	}
	if cv, ok := o.get("postContext"); ok {
		pc.PostContext, _ = p.str(key+".postContext", cv)
	}
	if wv, ok := o.get("workDir"); ok {
		if s, ok := p.str(key+".workDir", wv); ok {
			pc.WorkDir = p.expand(key+".workDir", s)
		}
	}
	if _, err := permissions.Compile(pc); err != nil {
		for _, e := range unjoin(err) {
			var ce *permissions.ConfigError
			if safeerr.AsAny(e, &ce) {
				p.fail(key+"."+ce.Key, "%s", ce.Err.Error())
			} else {
				p.fail(key, "%s", e.Error())
			}
		}
		return permissions.Config{}, false
	}
	return pc, true
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

func (p *parser) timeouts(v value, cfg *Config) {
	o, ok := v.(*object)
	if !ok {
		p.fail("timeouts", "must be an object of durations by tool name pattern, not %s", kindOf(v))
		return
	}
	for _, m := range o.members {
		key := "timeouts." + m.key
		if _, err := toolpat.Parse(m.key); err != nil {
			p.fail(key, "%s (a tool name pattern is non-empty, without spaces, control characters, parentheses, commas or backslashes)", err)
			continue
		}
		if d := p.duration(key, m.val); d > 0 {
			cfg.Timeouts = append(cfg.Timeouts, Timeout{Tool: m.key, Budget: d, Key: key})
		}
	}
}

func (p *parser) str(key string, v value) (string, bool) {
	s, ok := v.(string)
	if !ok {
		p.fail(key, "must be a string, not %s", kindOf(v))
	}
	return s, ok
}

func (p *parser) boolean(key string, v value) (bool, bool) {
	b, ok := v.(bool)
	if !ok {
		p.fail(key, "must be true or false, not %s", kindOf(v))
	}
	return b, ok
}

// duration accepts a Go duration string ("30s", "1m30s") or a number of
// milliseconds; it must be positive.
func (p *parser) duration(key string, v value) time.Duration {
	var d time.Duration
	switch x := v.(type) {
	case string:
		var err error
		d, err = time.ParseDuration(x)
		if err != nil {
			p.fail(key, "must be a duration such as \"30s\" or a number of milliseconds, not %q", x)
			return 0
		}
	case json.Number:
		ms, err := strconv.ParseFloat(string(x), 64)
		if err != nil || ms > float64(1<<62)/float64(time.Millisecond) {
			p.fail(key, "%s milliseconds is out of range", x)
			return 0
		}
		d = time.Duration(ms * float64(time.Millisecond))
	default:
		p.fail(key, "must be a duration such as \"30s\" or a number of milliseconds, not %s", kindOf(v))
		return 0
	}
	if d <= 0 {
		p.fail(key, "must be positive")
		return 0
	}
	return d
}

func (p *parser) strList(key string, v value) []string { return p.strListX(key, v, true) }

// strListX decodes an array of strings, expanding ${VAR} when expand.
func (p *parser) strListX(key string, v value, expand bool) []string {
	a, ok := v.([]value)
	if !ok {
		p.fail(key, "must be an array of strings, not %s", kindOf(v))
		return nil
	}
	out := make([]string, 0, len(a))
	for i, e := range a {
		k := key + "[" + strconv.Itoa(i) + "]"
		if s, ok := p.str(k, e); ok {
			if expand {
				s = p.expand(k, s)
			}
			out = append(out, s)
		}
	}
	return out
}

func (p *parser) strMap(key string, v value, envNames bool) map[string]string {
	o, ok := v.(*object)
	if !ok {
		p.fail(key, "must be an object of strings, not %s", kindOf(v))
		return nil
	}
	out := make(map[string]string, len(o.members))
	for _, m := range o.members {
		k := join(key, m.key)
		if m.key == "" || envNames && strings.ContainsAny(m.key, "=\x00") {
			p.fail(k, "is not a valid name")
			continue
		}
		if s, ok := p.str(k, m.val); ok {
			out[m.key] = p.expand(k, s)
		}
	}
	return out
}

// expand replaces ${VAR} and ${VAR:-default}; "$$" is "$". An undefined
// variable without a default is an error.
func (p *parser) expand(key, s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			p.fail(key, "unterminated \"${\" in %q", s)
			return s
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !envName.MatchString(name) {
			p.fail(key, "%q is not a variable name in ${...}", name)
			return s
		}
		val, ok := p.env(name)
		if !ok || val == "" && hasDef {
			if !hasDef {
				p.fail(key, "environment variable %s is not set (write ${%s:-default} for a default)", name, name)
				return s
			}
			val = def
		}
		b.WriteString(val)
		i += end
	}
	return b.String()
}

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// The decoded JSON: *object (members in file order), []value, string,
// json.Number, bool, nil.
type value = any

type member struct {
	key string
	val value
}

type object struct{ members []member }

func (o *object) get(k string) (value, bool) {
	for _, m := range o.members {
		if m.key == k {
			return m.val, true
		}
	}
	return nil, false
}

func kindOf(v value) string {
	switch v.(type) {
	case *object:
		return "an object"
	case []value:
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// maxDepth bounds nesting (a config is shallow).
const maxDepth = 32

// parseJSON decodes one JSON value, keeping member order and refusing
// duplicate keys and trailing data; errors carry line and column.
func parseJSON(data []byte) (value, error) {
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	v, err := decodeValue(d, data, 0)
	if err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: unexpected data after the top-level value", position(data, d.InputOffset()))
	}
	return v, nil
}

func decodeValue(d *json.Decoder, data []byte, depth int) (value, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nested deeper than %d levels", position(data, d.InputOffset()), maxDepth)
	}
	start := d.InputOffset()
	tok, err := d.Token()
	if err != nil {
		if err == io.EOF {
			return nil, errors.New("empty file (expected a JSON object)")
		}
		return nil, fmt.Errorf("%s: %s", position(data, start), syntaxMsg(err))
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			o := &object{}
			for d.More() {
				at := d.InputOffset()
				kt, err := d.Token()
				if err != nil {
					return nil, fmt.Errorf("%s: %s", position(data, at), syntaxMsg(err))
				}
				k := kt.(string)
				if _, dup := o.get(k); dup {
					return nil, fmt.Errorf("%s: duplicate key %q", position(data, at), k)
				}
				v, err := decodeValue(d, data, depth+1)
				if err != nil {
					return nil, err
				}
				o.members = append(o.members, member{k, v})
			}
			if _, err := d.Token(); err != nil {
				return nil, fmt.Errorf("%s: %s", position(data, d.InputOffset()), syntaxMsg(err))
			}
			return o, nil
		case '[':
			a := []value{}
			for d.More() {
				v, err := decodeValue(d, data, depth+1)
				if err != nil {
					return nil, err
				}
				a = append(a, v)
			}
			if _, err := d.Token(); err != nil {
				return nil, fmt.Errorf("%s: %s", position(data, d.InputOffset()), syntaxMsg(err))
			}
			return a, nil
		}
		return nil, fmt.Errorf("%s: unexpected %q", position(data, start), t)
	}
	return tok, nil
}

func syntaxMsg(err error) string {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return "unexpected end of file"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// position renders a byte offset as "line L, column C" (1-based; columns
// count bytes).
func position(data []byte, off int64) string {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	// Skip the separators the decoder has not consumed yet.
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	line := 1 + bytes.Count(data[:off], []byte("\n"))
	col := off - int64(bytes.LastIndexByte(data[:off], '\n'))
	return fmt.Sprintf("line %d, column %d", line, col)
}
