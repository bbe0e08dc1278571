package permissions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tidwall/gjson"
	"golang.org/x/text/unicode/norm"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name (its fiber and log name).
const Name = "permissions"

// Verdict is what the rules say about a call.
type Verdict string

// The verdicts, strongest first: a matching deny rule beats a matching ask
// rule, which beats a matching allow rule.
const (
	Deny  Verdict = "deny"
	Ask   Verdict = "ask"
	Allow Verdict = "allow"
)

// Config is the rule set: Claude Code style permission rules (see
// [ParseRule]) in three lists, and what happens to a call no rule
// matches. The JSON form is the "permissions" object of a dsh.json:
//
//	{"allow": ["mcp__fs__read_file"], "ask": ["mcp__fs__write_file"],
//	 "deny": ["mcp__fs__write_file(path:/etc/**)"], "defaultMode": "allow"}
type Config struct {
	// Allow, Ask and Deny are the rules of each verdict.
	Allow []string `json:"allow,omitempty"`
	Ask   []string `json:"ask,omitempty"`
	Deny  []string `json:"deny,omitempty"`
	// DefaultMode is the verdict for a call no rule matches: allow (the
	// default when empty), ask or deny.
	DefaultMode Verdict `json:"defaultMode,omitempty"`
	// WorkDir places relative path values for absolute path patterns
	// ("notes.txt" against "/tmp/**" is "/tmp/work/notes.txt" when WorkDir
	// is "/tmp/work"). When empty, a relative value cannot be placed: a
	// deny or ask rule's absolute pattern then matches it (fail closed) and
	// an allow rule's does not. Must be absolute when set.
	WorkDir string `json:"workDir,omitempty"`
	// ConfigDir is the directory of the file the rules come from: Claude
	// Code's "/path" in Read(…) and Edit(…) rules is relative to it (dsh.json's
	// directory when loaded by dshconfig). A rule of that form is refused
	// when it is empty. Must be absolute when set.
	ConfigDir string `json:"-"`
	// Home is the home directory "~/" stands for; empty: the process's
	// (os.UserHomeDir). Must be absolute when set.
	Home string `json:"-"`
	// PrimaryArgs names, per tool, the argument a condition without a key
	// applies to (Claude Code's `Bash(npm run test:*)` with
	// PrimaryArgs{"Bash": "command"}). A rule with such a condition must
	// name a tool listed here, without "*".
	PrimaryArgs map[string]string `json:"primaryArgs,omitempty"`
	// PostBlock are rules read after a call ran (tools/post-execute, and
	// the PostToolUse hook): the result of a call a rule matches (in the
	// cautious direction, as a deny rule) is blocked, and the model is
	// told which rule blocked it.
	PostBlock []string `json:"postBlock,omitempty"`
	// PostContext is text added to every result that is not blocked, as
	// additional context for the model (PostToolUse's additionalContext).
	PostContext string `json:"postContext,omitempty"`
}

// Policy is a compiled [Config]. It is immutable and safe for concurrent
// use.
type Policy struct {
	deny, ask, allow []compiled
	post             []compiled
	postContext      string
	def              Verdict
	env              env
	keys             *keyTrie // every key path the rules read
	nkeys            int
	keyShell         int   // the Bash tool's command argument
	keyURL, keyAgent int   // WebFetch's url, Agent's subagent_type
	keyPaths         []int // file_path, notebook_path, path
	keyGlob          int   // Glob's pattern
	lines            lineCache
	// allowShell indexes the Bash allow rules (positions in allow) by the
	// literal first word of their pattern; allowShellWild holds those
	// whose first word has a wildcard. A command is matched only against
	// the rules that could match its first word.
	allowShell     map[string][]int
	allowShellWild []int
}

type compiled struct {
	Rule
	where   string // "deny[2]"
	primary string // for bare conditions
	keyIDs  []int  // per condition, its key path's id in Policy.keys
}

// Decision is the outcome of [Policy.Decide].
type Decision struct {
	// Verdict is the strongest matching rule's verdict, or the default.
	Verdict Verdict
	// Rule is the matching rule's text ("" when the default applied) and
	// Where its position in the Config ("deny[2]").
	Rule, Where string
}

// Reason is a one-line explanation for a person or a model.
func (d Decision) Reason() string {
	if d.Rule == "" {
		return fmt.Sprintf("no permission rule matches; the default is %s", d.Verdict)
	}
	return fmt.Sprintf("permission rule %s %q", d.Where, d.Rule)
}

// ConfigError is a problem in one entry of a [Config]: Key is its position
// ("deny[2]", "defaultMode", "workDir").
type ConfigError struct {
	Key string
	Err error
}

func (e *ConfigError) Error() string { return e.Key + ": " + e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// Compile checks and compiles c. Every problem is reported, each as a
// [*ConfigError] naming its entry, joined with errors.Join.
func Compile(c Config) (*Policy, error) {
	p := &Policy{def: c.DefaultMode, postContext: c.PostContext, env: env{cwd: path.Clean(c.WorkDir), home: c.Home, configDir: c.ConfigDir}}
	p.keys = newKeyTrie()
	shellKey := []string{"command"}
	if c.WorkDir == "" {
		p.env.cwd = ""
	}
	if p.env.home == "" {
		if h, err := os.UserHomeDir(); err == nil && strings.HasPrefix(h, "/") {
			p.env.home = path.Clean(h)
		}
	} else {
		p.env.home = path.Clean(p.env.home)
	}
	if p.env.configDir != "" {
		p.env.configDir = path.Clean(p.env.configDir)
	}
	var errs []error
	switch c.DefaultMode {
	case "":
		p.def = Allow
	case Allow, Ask, Deny:
	default:
		errs = append(errs, &ConfigError{"defaultMode", fmt.Errorf("must be \"allow\", \"ask\" or \"deny\", not %q", string(c.DefaultMode))})
	}
	if c.WorkDir != "" && !strings.HasPrefix(c.WorkDir, "/") {
		errs = append(errs, &ConfigError{"workDir", fmt.Errorf("must be an absolute path, not %q", c.WorkDir)})
	}
	if c.ConfigDir != "" && !strings.HasPrefix(c.ConfigDir, "/") {
		errs = append(errs, &ConfigError{"configDir", fmt.Errorf("must be an absolute path, not %q", c.ConfigDir)})
	}
	if c.Home != "" && !strings.HasPrefix(c.Home, "/") {
		errs = append(errs, &ConfigError{"home", fmt.Errorf("must be an absolute path, not %q", c.Home)})
	}
	if k, ok := c.PrimaryArgs["Bash"]; ok && validKey(k) {
		shellKey = strings.Split(k, ".")
	}
	for tool, arg := range c.PrimaryArgs {
		if !validKey(arg) {
			errs = append(errs, &ConfigError{"primaryArgs." + tool, fmt.Errorf("%q is not a key path (segments of [A-Za-z0-9_-] joined by \".\")", arg)})
		}
	}
	for _, list := range []struct {
		name  string
		rules []string
		into  *[]compiled
	}{{"deny", c.Deny, &p.deny}, {"ask", c.Ask, &p.ask}, {"allow", c.Allow, &p.allow}, {"postBlock", c.PostBlock, &p.post}} {
		for i, text := range list.rules {
			where := list.name + "[" + strconv.Itoa(i) + "]"
			r, err := ParseRule(text)
			if err != nil {
				errs = append(errs, &ConfigError{where, err})
				continue
			}
			cr := compiled{Rule: r, where: where}
			if r.kind == kindPath && r.path.base == baseConfig && p.env.configDir == "" {
				errs = append(errs, &ConfigError{where, fmt.Errorf("%w %q: \"/path\" is relative to the config file's directory, which is not known here; write //path for an absolute path", ErrInvalidRule, truncate(text))})
				continue
			}
			if r.hasBare() {
				name, _, _ := strings.Cut(text, "(")
				arg, ok := c.PrimaryArgs[name]
				if !ok || strings.Contains(name, "*") {
					errs = append(errs, &ConfigError{where, fmt.Errorf("%w %q: a condition without a key needs a tool named in primaryArgs; write key:pattern (and key:** for any value)", ErrInvalidRule, truncate(text))})
					continue
				}
				cr.primary = arg
			}
			for _, cd := range r.conds {
				key := cd.key
				if cd.bare {
					key = strings.Split(cr.primary, ".")
				}
				cr.keyIDs = append(cr.keyIDs, p.keys.add(key, &p.nkeys))
			}
			*list.into = append(*list.into, cr)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	p.keyShell = p.keys.add(shellKey, &p.nkeys)
	p.keyURL = p.keys.add([]string{"url"}, &p.nkeys)
	p.keyAgent = p.keys.add([]string{"subagent_type"}, &p.nkeys)
	for _, k := range []string{"file_path", "notebook_path", "path"} {
		p.keyPaths = append(p.keyPaths, p.keys.add([]string{k}, &p.nkeys))
	}
	p.keyGlob = p.keys.add([]string{"pattern"}, &p.nkeys)
	p.allowShell = map[string][]int{}
	for i := range p.allow {
		if sp := p.allow[i].shell; p.allow[i].kind == kindShell {
			if sp.first == "" {
				p.allowShellWild = append(p.allowShellWild, i)
			} else {
				p.allowShell[sp.first] = append(p.allowShell[sp.first], i)
			}
		}
	}
	return p, nil
}

func (r Rule) hasBare() bool {
	for _, c := range r.conds {
		if c.bare {
			return true
		}
	}
	return false
}

// Decide returns the verdict of the rules for a call of tool with the
// argument object args (JSON). Deny rules are checked first, then ask,
// then allow; the first match decides.
//
// Values are read cautiously: for a deny or ask rule a test holds when
// ANY value found holds it (or when a value cannot be judged: args that
// are not JSON, a value longer than [MaxValueLen], a relative path
// without a current directory, a URL without a host, a command line that
// cannot be parsed); for an allow rule only when values are found and ALL
// of them hold it. A key is matched to an object member
// case-insensitively, since Go's JSON decoding and many servers match
// keys that way; strings are matched as they are, numbers, booleans and
// null as their JSON text; an array is matched element by element. So a
// call cannot dodge a deny rule, nor borrow an allow rule, by hiding a
// second value under a differently cased key or in an array.
//
// A Bash call's command line is split into its simple commands (see the
// package documentation): a deny or ask rule that matches any of them
// applies to the call; allow rules allow it only when each command is
// allowed by one of them.
func (p *Policy) Decide(tool string, args json.RawMessage) Decision {
	c := &call{p: p, tool: tool, args: args}
	for _, l := range []struct {
		v     Verdict
		rules []compiled
	}{{Deny, p.deny}, {Ask, p.ask}} {
		for i := range l.rules {
			if c.match(&l.rules[i], true) {
				return Decision{Verdict: l.v, Rule: l.rules[i].text, Where: l.rules[i].where}
			}
		}
	}
	shellRules := false
	for i := range p.allow {
		r := &p.allow[i]
		if r.kind == kindShell {
			shellRules = shellRules || r.appliesTo(tool)
			continue
		}
		if c.match(r, false) {
			return Decision{Verdict: Allow, Rule: r.text, Where: r.where}
		}
	}
	if !shellRules {
		return Decision{Verdict: p.def}
	}
	if r := c.shellAllowedIndexed(); r != nil {
		return Decision{Verdict: Allow, Rule: r.text, Where: r.where}
	}
	return Decision{Verdict: p.def}
}

// appliesTo reports whether the rule's tool part names tool.
func (r *Rule) appliesTo(tool string) bool { return r.tool.Match(tool) }

// call is one call being decided: its arguments read once, and what was
// read from them, shared by every rule.
type call struct {
	p        *Policy
	tool     string
	args     json.RawMessage
	gathered bool
	bad      bool // the arguments are not JSON
	nodes    [][]gjson.Result
	vals     [][]string
	valsDone []bool
	shellOK  bool
	cmds     []shellCmd
	shellIn  bool // shell() ran
	firsts   map[string]bool
	forms    map[string][]string
}

func (c *call) gather() bool {
	if !c.gathered {
		c.gathered = true
		c.nodes, c.bad = nil, true
		if nodes, ok := c.p.keys.gather(c.args, c.p.nkeys); ok {
			c.nodes, c.bad = nodes, false
			c.vals = make([][]string, c.p.nkeys)
			c.valsDone = make([]bool, c.p.nkeys)
		}
	}
	return !c.bad
}

// values returns the scalar values at the key path with the given id, and
// false when the arguments are not JSON.
func (c *call) values(id int) ([]string, bool) {
	if !c.gather() {
		return nil, false
	}
	if !c.valsDone[id] {
		c.valsDone[id] = true
		for _, n := range c.nodes[id] {
			c.vals[id] = scalars(n, c.vals[id], 0)
		}
	}
	return c.vals[id], true
}

// judge applies m to every value: for a cautious rule it holds when any
// value matches or cannot be judged, else when every value matches and
// at least one was found.
func judge(vals []string, ok, cautious bool, m func(string) (match, unknown bool)) bool {
	if !ok {
		return cautious
	}
	if len(vals) == 0 {
		return false
	}
	for _, v := range vals {
		match, unknown := false, len(v) > MaxValueLen
		if !unknown {
			match, unknown = m(v)
		}
		if unknown {
			match = cautious
		}
		if cautious && match {
			return true
		}
		if !cautious && !match {
			return false
		}
	}
	return !cautious
}

// match reports whether rule r holds for the call, in the cautious
// (deny, ask) or the strict (allow) direction.
func (c *call) match(r *compiled, cautious bool) bool {
	if !r.appliesTo(c.tool) {
		return false
	}
	switch r.kind {
	case kindName:
		return true
	case kindShell:
		cmds, ok := c.shell()
		if !ok {
			return cautious
		}
		if cautious {
			if r.shell.first != "" && !c.firstWords()[r.shell.first] {
				return false // no command starts with the rule's first word
			}
			return r.shell.matchAny(cmds)
		}
		return c.shellAllowed([]*compiled{r}) != nil
	case kindPath:
		vals, ok := c.pathValues()
		return judge(vals, ok, cautious, func(v string) (bool, bool) {
			return c.matchPath(&r.path, v, cautious)
		})
	case kindDomain:
		vals, ok := c.values(c.p.keyURL)
		return judge(vals, ok, cautious, func(v string) (bool, bool) { return matchDomain(r.domain, v, cautious) })
	case kindAgent:
		vals, ok := c.values(c.p.keyAgent)
		return judge(vals, ok, cautious, func(v string) (bool, bool) { return r.agent.MatchString(v), false })
	}
	for i := range r.conds {
		cd := &r.conds[i]
		vals, ok := c.values(r.keyIDs[i])
		held := judge(vals, ok, cautious, func(v string) (bool, bool) {
			if cd.path != nil {
				return c.matchPath(cd.path, v, cautious)
			}
			return cd.pattern.MatchString(norm.NFC.String(v)), false
		})
		if !held {
			return false
		}
	}
	return true
}

// matchPath matches one path value in every form it could take (see
// pathForms): for a cautious rule any form matching is a match, for
// another every form must match.
func (c *call) matchPath(pp *pathPat, v string, cautious bool) (match, unknown bool) {
	forms, ok := c.pathForms(v)
	if !ok {
		return false, true
	}
	for _, f := range forms {
		m := pp.match(f, &c.p.env, cautious)
		if cautious && m {
			return true, false
		}
		if !cautious && !m {
			return false, false
		}
	}
	return !cautious, false
}

// maxPathValues bounds the path values resolved on the file system per
// call; the others cannot be judged (deny and ask match them).
const maxPathValues = 1024

func (c *call) pathForms(v string) ([]string, bool) {
	if f, ok := c.forms[v]; ok {
		return f, f != nil
	}
	if c.forms == nil {
		c.forms = map[string][]string{}
	}
	if len(c.forms) >= maxPathValues {
		return nil, false
	}
	f, ok := pathForms(v, &c.p.env)
	if !ok {
		f = nil
	}
	c.forms[v] = f
	return f, ok
}

// pathValues returns the paths a call of one of Claude Code's file tools
// names: file_path, notebook_path and path (Grep, Glob and LS without a
// path search the current directory).
func (c *call) pathValues() ([]string, bool) {
	var all []string
	for _, k := range c.p.keyPaths {
		v, ok := c.values(k)
		if !ok {
			return nil, false
		}
		all = append(all, v...)
	}
	if len(all) == 0 && (c.tool == "Grep" || c.tool == "Glob" || c.tool == "LS") {
		all = []string{"."}
	}
	if c.tool == "Glob" {
		// An absolute or home pattern (Glob(/etc/**)) names its directory.
		pats, _ := c.values(c.p.keyGlob)
		for _, g := range pats {
			if !strings.HasPrefix(g, "/") && !strings.HasPrefix(g, "~/") {
				continue
			}
			if i := strings.IndexAny(g, "*?[{"); i >= 0 {
				g = g[:i]
			}
			if i := strings.LastIndexByte(g, '/'); i > 0 {
				g = g[:i]
			} else if i == 0 {
				g = "/"
			}
			all = append(all, g)
		}
	}
	return all, true
}

// shell returns the simple commands of a Bash call's command line(s);
// false when the call holds none that can be read (a missing or non-text
// command, arguments that are not JSON).
func (c *call) shell() ([]shellCmd, bool) {
	if c.shellIn {
		return c.cmds, c.shellOK
	}
	c.shellIn = true
	if !c.gather() {
		return nil, false
	}
	nodes := c.nodes[c.p.keyShell]
	if len(nodes) == 0 {
		return nil, false
	}
	for _, n := range nodes {
		switch {
		case n.Type == gjson.String:
			pl := c.p.lines.parse(n.String())
			if len(nodes) == 1 {
				// The cached commands, shared: never appended to nor
				// modified (their slice is clipped).
				c.cmds, c.firsts = pl.cmds, pl.firsts
			} else {
				c.cmds = append(c.cmds, pl.cmds...)
			}
		case n.IsArray():
			// An argument vector (["bash", "-lc", "…"]).
			var words []string
			bad := false
			n.ForEach(func(_, e gjson.Result) bool {
				if e.Type != gjson.String {
					bad = true
					return false
				}
				words = append(words, e.String())
				return true
			})
			if bad {
				return nil, false
			}
			if len(words) == 0 {
				return nil, false
			}
			lit := make([]bool, len(words))
			for i := range lit {
				lit[i] = true
			}
			j := &shellJudge{}
			j.words(words, lit, 0)
			c.cmds = append(c.cmds, j.cmds...)
		default:
			return nil, false
		}
	}
	c.shellOK = true
	return c.cmds, true
}

// firstWords returns the first words of every form of the call's
// commands (and every word of a line that could not be parsed): a rule
// whose literal first word is not among them cannot match.
func (c *call) firstWords() map[string]bool {
	if c.firsts == nil {
		c.firsts = firstWordsOf(c.cmds)
	}
	return c.firsts
}

func firstWordsOf(cmds []shellCmd) map[string]bool {
	n := 0
	for i := range cmds {
		n += len(cmds[i].forms) + len(cmds[i].rough)
	}
	firsts := make(map[string]bool, n)
	for i := range cmds {
		for w := range cmds[i].rough {
			firsts[w] = true
		}
		for _, f := range cmds[i].forms {
			w, _, _ := strings.Cut(f, " ")
			firsts[w] = true
		}
	}
	return firsts
}

// shellAllowedIndexed is shellAllowed over the policy's Bash allow rules
// that name the call's tool, each command matched only against the rules
// whose literal first word is the command's (and those whose first word
// has a wildcard), in the rules' order.
func (c *call) shellAllowedIndexed() *compiled {
	cmds, ok := c.shell()
	if !ok || len(cmds) == 0 {
		return nil
	}
	var first *compiled
	for i := range cmds {
		cm := &cmds[i]
		if cm.opaque || cm.rough != nil {
			return nil
		}
		w, _, _ := strings.Cut(cm.canon, " ")
		byName, wild := c.p.allowShell[w], c.p.allowShellWild
		var hit *compiled
		for len(byName) > 0 || len(wild) > 0 {
			var k int
			if len(wild) == 0 || len(byName) > 0 && byName[0] < wild[0] {
				k, byName = byName[0], byName[1:]
			} else {
				k, wild = wild[0], wild[1:]
			}
			if r := &c.p.allow[k]; r.appliesTo(c.tool) && r.shell.match(cm.canon) {
				hit = r
				break
			}
		}
		if hit == nil {
			return nil
		}
		if first == nil {
			first = hit
		}
	}
	return first
}

// shellAllowed returns the first of the allow rules that allows a
// command of the call when every command is allowed by one of them; nil
// when one is not, or cannot be (an opaque or unparseable command).
func (c *call) shellAllowed(rules []*compiled) *compiled {
	if len(rules) == 0 {
		return nil
	}
	cmds, ok := c.shell()
	if !ok || len(cmds) == 0 {
		return nil
	}
	var first *compiled
	for i := range cmds {
		cm := &cmds[i]
		if cm.opaque || cm.rough != nil {
			return nil
		}
		var hit *compiled
		for _, r := range rules {
			if r.shell.match(cm.canon) {
				hit = r
				break
			}
		}
		if hit == nil {
			return nil
		}
		if first == nil {
			first = hit
		}
	}
	return first
}

// matchDomain matches a URL's host against a WebFetch domain: pattern.
// For an allow rule (cautious false) domain:example.com is that host
// only; for a deny or ask rule (cautious true) it also covers every
// subdomain, since whoever controls example.com controls them too and a
// deny must not be passed by naming one.
func matchDomain(pat, raw string, cautious bool) (match, unknown bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return false, true
	}
	h := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if h == "" {
		return false, true
	}
	switch {
	case pat == "*":
		return true, false
	case strings.HasPrefix(pat, "*."):
		return strings.HasSuffix(h, pat[1:]), false
	}
	return h == pat || (cautious && strings.HasSuffix(h, "."+pat)), false
}

// Plugin is the permissions policy. Its configuration is a [Config] (or
// *Config), or a [*Live] holding a compiled policy that may be replaced
// while the plugin runs; an invalid Config fails the plugin with the
// errors of [Compile]. It registers, through its own context (so loaded
// through an agent's scoped context it applies to that agent only):
//
//   - a tools/pre-execute listener: a deny verdict denies the call (code
//     DENIED, the rule in the message) before any ask; an ask verdict asks
//     the approval service with the rule as the reason, unless a later
//     listener denies; allow passes the call on to the other policies;
//   - a tools/post-execute listener when the policy has post rules or
//     post context (always for a *Live, whose next policy may);
//   - a guard with the deny rules, so a deny holds however other
//     tools/pre-execute listeners decide (guards are monotonic; they run
//     before the approval prompt, so nobody is asked about a denied call).
//
// The plugin never allows what another policy denies or asks about.
var Plugin host.Plugin = tools.DefinePlugin(Name, func(c *host.Context, reg *tools.Registry) error {
	switch x := c.Config().(type) {
	case *Live:
		return x.Install(c, reg)
	case PerCall:
		if x == nil {
			return errors.New("permissions: a nil PerCall")
		}
		return install(c, reg, x, true)
	}
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	pol, err := Compile(cfg)
	if err != nil {
		return fmt.Errorf("permissions: %w", err)
	}
	return pol.Install(c, reg)
})

// Install registers the policy's tools/pre-execute listener, its
// tools/post-execute listener (when it has post rules or post context) and
// its guard through c (see [Plugin]); all are undone when c's fiber is
// disposed.
func (p *Policy) Install(c *host.Context, reg *tools.Registry) error {
	return install(c, reg, func(*tools.Execution) *Policy { return p }, len(p.post) > 0 || p.postContext != "")
}

// Live is a compiled policy that can be replaced while it is installed:
// a configuration reload swaps the rules with no moment in which none
// apply, since each of the installed listeners and the guard reads the
// current policy once per call. The zero value holds no policy; Install
// refuses it. Safe for concurrent use.
type Live struct{ cur atomic.Pointer[Policy] }

// NewLive returns a Live holding p.
func NewLive(p *Policy) *Live {
	l := &Live{}
	l.cur.Store(p)
	return l
}

// Load returns the current policy.
func (l *Live) Load() *Policy { return l.cur.Load() }

// Store makes p (not nil) the current policy for every call that starts
// its stage after Store returns.
func (l *Live) Store(p *Policy) {
	if p != nil {
		l.cur.Store(p)
	}
}

// Install registers, through c, the listeners and guard of the policy l
// holds at each call (as [Policy.Install] does for a fixed policy); the
// tools/post-execute listener is always registered, since a later policy
// may have post rules.
func (l *Live) Install(c *host.Context, reg *tools.Registry) error {
	if l == nil || l.Load() == nil {
		return errors.New("permissions: a Live with no policy")
	}
	return install(c, reg, func(*tools.Execution) *Policy { return l.Load() }, true)
}

// PerCall chooses the policy of each call, read once per stage (the dsh
// gateway's per-identity permission profiles: the policy of the calling
// session's profile). Loaded as [Plugin]'s configuration it installs as a
// [*Live] does; a call it gives no policy (nil) is denied at every stage
// (fail closed) with [ErrNoPolicy]'s text as the reason.
type PerCall func(e *tools.Execution) *Policy

// ErrNoPolicy is the reason a call [PerCall] gives no policy is denied.
var ErrNoPolicy = errors.New("permissions: no permission profile applies to this caller (fail closed)")

// install is the one installation of a policy: cur gives the policy a
// call is decided by (read once per stage); a nil policy denies.
func install(c *host.Context, reg *tools.Registry, cur func(*tools.Execution) *Policy, post bool) error {
	if _, err := host.OnWaterfall(c, tools.PreExecute, func(ctx context.Context, e *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
		p := cur(e)
		if p == nil {
			return tools.Denied(ErrNoPolicy.Error()), nil
		}
		return p.PreExecute(ctx, e, next)
	}); err != nil {
		return err
	}
	if post {
		if _, err := host.OnWaterfall(c, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
			p := cur(in.Execution())
			if p == nil {
				if in.Result().IsError {
					return next(ctx) // denied before it ran, or failed: keep its code
				}
				return tools.PostDecision{Kind: tools.Block, Feedback: ErrNoPolicy.Error()}, nil
			}
			return p.PostExecute(ctx, in, next)
		}); err != nil {
			return err
		}
	}
	_, err := reg.Guard(c, func(e *tools.Execution) error {
		p := cur(e)
		if p == nil {
			return tools.NewError(tools.CodeDenied, ErrorName, ErrNoPolicy.Error())
		}
		return p.Guard(e)
	})
	return err
}

// ErrorName is the error.name of a call denied by a rule.
const ErrorName = "PermissionDenied"

// PreExecute is the policy's tools/pre-execute listener.
func (p *Policy) PreExecute(ctx context.Context, e *tools.Execution, next events.Next[tools.PreDecision]) (tools.PreDecision, error) {
	d := p.Decide(e.Name(), e.Args())
	switch d.Verdict {
	case Deny:
		return tools.Denied(d.Reason()), nil
	case Ask:
		after, err := next(ctx)
		if err != nil || after.Kind == tools.Deny {
			return after, err
		}
		if after.Kind == tools.Ask && after.Reason != "" {
			return tools.Asked(d.Reason() + "; " + after.Reason), nil
		}
		return tools.Asked(d.Reason()), nil
	}
	return next(ctx)
}

// PostDecide returns the first postBlock rule matching a call that ran
// (read as a deny rule is), and false when none does.
func (p *Policy) PostDecide(tool string, args json.RawMessage) (Decision, bool) {
	c := &call{p: p, tool: tool, args: args}
	for i := range p.post {
		if c.match(&p.post[i], true) {
			return Decision{Verdict: Deny, Rule: p.post[i].text, Where: p.post[i].where}, true
		}
	}
	return Decision{}, false
}

// PostExecute is the policy's tools/post-execute listener: a result of a
// call a postBlock rule matches is blocked with the rule as feedback;
// PostContext is added to the others.
func (p *Policy) PostExecute(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
	e := in.Execution()
	if d, ok := p.PostDecide(e.Name(), e.Args()); ok {
		return tools.PostDecision{Kind: tools.Block, Feedback: "dsh policy blocked the result: " + d.Reason()}, nil
	}
	out, err := next(ctx)
	if err != nil || out.Kind == tools.Block || p.postContext == "" {
		return out, err
	}
	if out.AdditionalContext != "" {
		out.AdditionalContext = p.postContext + "\n\n" + out.AdditionalContext
	} else {
		out.AdditionalContext = p.postContext
	}
	return out, nil
}

// Guard is the policy's guard: the deny verdicts only.
func (p *Policy) Guard(e *tools.Execution) error {
	if d := p.Decide(e.Name(), e.Args()); d.Verdict == Deny {
		return tools.NewError(tools.CodeDenied, ErrorName, d.Reason())
	}
	return nil
}
