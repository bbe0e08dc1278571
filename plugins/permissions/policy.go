package permissions

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

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
	// PrimaryArgs names, per tool, the argument a condition without a key
	// applies to (Claude Code's `Bash(npm run test:*)` with
	// PrimaryArgs{"Bash": "command"}). A rule with such a condition must
	// name a tool listed here, without "*".
	PrimaryArgs map[string]string `json:"primaryArgs,omitempty"`
}

// Policy is a compiled [Config]. It is immutable and safe for concurrent
// use.
type Policy struct {
	deny, ask, allow []compiled
	def              Verdict
	workDir          string
}

type compiled struct {
	Rule
	where   string // "deny[2]"
	primary string // for bare conditions
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
	p := &Policy{def: c.DefaultMode, workDir: c.WorkDir}
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
	for tool, arg := range c.PrimaryArgs {
		if !validKey(arg) {
			errs = append(errs, &ConfigError{"primaryArgs." + tool, fmt.Errorf("%q is not a key path (segments of [A-Za-z0-9_-] joined by \".\")", arg)})
		}
	}
	for _, list := range []struct {
		name  string
		rules []string
		into  *[]compiled
	}{{"deny", c.Deny, &p.deny}, {"ask", c.Ask, &p.ask}, {"allow", c.Allow, &p.allow}} {
		for i, text := range list.rules {
			where := list.name + "[" + strconv.Itoa(i) + "]"
			r, err := ParseRule(text)
			if err != nil {
				errs = append(errs, &ConfigError{where, err})
				continue
			}
			cr := compiled{Rule: r, where: where}
			if r.hasBare() {
				name, _, _ := strings.Cut(text, "(")
				arg, ok := c.PrimaryArgs[name]
				if !ok || strings.Contains(name, "*") {
					errs = append(errs, &ConfigError{where, fmt.Errorf("%w %q: a condition without a key needs a tool named in primaryArgs; write key:pattern (and key:** for any value)", ErrInvalidRule, truncate(text))})
					continue
				}
				cr.primary = arg
			}
			*list.into = append(*list.into, cr)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
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
// argument object args (JSON; invalid JSON matches no rule that has
// conditions, but still rules without). Deny rules are checked first, then
// ask, then allow; the first match decides.
//
// A condition holds when the argument at its key (each segment matched to
// an object member case-insensitively, since Go's JSON decoding and many
// servers match keys that way) matches its pattern. Strings are matched as
// they are, numbers, booleans and null as their JSON text; an array is
// matched element by element. The direction is always the cautious one:
// for a deny or ask rule a condition holds when ANY value found matches; for
// an allow rule it holds only when at least one value is found and ALL
// values match. So a call cannot dodge a deny rule, nor borrow an allow
// rule, by hiding a second value under a differently cased key or in an
// array.
func (p *Policy) Decide(tool string, args json.RawMessage) Decision {
	var doc any
	decoded := false
	get := func() any {
		if !decoded {
			decoded = true
			d := json.NewDecoder(bytes.NewReader(args))
			d.UseNumber()
			if d.Decode(&doc) != nil {
				doc = nil
			}
		}
		return doc
	}
	for _, l := range []struct {
		v     Verdict
		rules []compiled
	}{{Deny, p.deny}, {Ask, p.ask}, {Allow, p.allow}} {
		for i := range l.rules {
			if p.matches(&l.rules[i], tool, l.v != Allow, get) {
				return Decision{Verdict: l.v, Rule: l.rules[i].text, Where: l.rules[i].where}
			}
		}
	}
	return Decision{Verdict: p.def}
}

func (p *Policy) matches(r *compiled, tool string, cautious bool, doc func() any) bool {
	if !r.tool.MatchString(tool) && (r.server == "" || !strings.HasPrefix(tool, r.server)) {
		return false
	}
	for i := range r.conds {
		c := &r.conds[i]
		key := c.key
		if c.bare {
			key = strings.Split(r.primary, ".")
		}
		var vals []string
		collect(doc(), key, &vals)
		if len(vals) == 0 {
			return false
		}
		any, all := false, true
		for _, v := range vals {
			m, unknown := c.matchValue(v, p.workDir)
			if unknown {
				m = cautious
			}
			any = any || m
			all = all && m
		}
		if cautious && !any || !cautious && !all {
			return false
		}
	}
	return true
}

// collect appends the scalar values found at key in v: object members
// whose name equals the segment case-insensitively, arrays element by
// element, at every level.
func collect(v any, key []string, out *[]string) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			collect(e, key, out)
		}
		return
	case map[string]any:
		if len(key) == 0 {
			return // an object is no scalar value
		}
		for k, e := range x {
			if strings.EqualFold(k, key[0]) {
				collect(e, key[1:], out)
			}
		}
		return
	}
	if len(key) > 0 {
		return
	}
	switch x := v.(type) {
	case string:
		*out = append(*out, x)
	case json.Number:
		*out = append(*out, x.String())
	case bool:
		*out = append(*out, strconv.FormatBool(x))
	case nil:
		*out = append(*out, "null")
	}
}

// Plugin is the permissions policy. Its configuration is a [Config] (or
// *Config); an invalid one fails the plugin with the errors of [Compile].
// It registers, through its own context (so loaded through an agent's
// scoped context it applies to that agent only):
//
//   - a tools/pre-execute listener: a deny verdict denies the call (code
//     DENIED, the rule in the message) before any ask; an ask verdict asks
//     the approval service with the rule as the reason, unless a later
//     listener denies; allow passes the call on to the other policies;
//   - a guard with the deny rules, so a deny holds however other
//     tools/pre-execute listeners decide (guards are monotonic).
//
// The plugin never allows what another policy denies or asks about.
var Plugin host.Plugin = tools.DefinePlugin(Name, func(c *host.Context, reg *tools.Registry) error {
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

// Install registers the policy's tools/pre-execute listener and guard
// through c (see [Plugin]); both are undone when c's fiber is disposed.
func (p *Policy) Install(c *host.Context, reg *tools.Registry) error {
	if _, err := host.OnWaterfall(c, tools.PreExecute, p.PreExecute); err != nil {
		return err
	}
	_, err := reg.Guard(c, p.Guard)
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

// Guard is the policy's guard: the deny verdicts only.
func (p *Policy) Guard(e *tools.Execution) error {
	if d := p.Decide(e.Name(), e.Args()); d.Verdict == Deny {
		return tools.NewError(tools.CodeDenied, ErrorName, d.Reason())
	}
	return nil
}
