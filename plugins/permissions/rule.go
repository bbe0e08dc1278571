package permissions

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/internal/toolpat"
)

// MaxRuleLen is the longest accepted rule text, in bytes.
const MaxRuleLen = 4096

// MaxWildcards is the most wildcards ("*", "**", "?") one condition's
// pattern may hold; matching costs up to the value's length times the
// pattern's states, and values come from the model or a remote client.
const MaxWildcards = 16

// MaxValueLen is the longest argument value matched against a pattern, in
// bytes. A longer value is not matched: a deny or ask rule's condition on
// it holds and an allow rule's does not (the cautious direction).
const MaxValueLen = 64 << 10

// ErrInvalidRule is wrapped by every error [ParseRule] returns.
var ErrInvalidRule = errors.New("invalid permission rule")

// Rule is one parsed permission rule: a tool-name pattern and, optionally,
// what it says about the call's arguments. Its zero value matches nothing;
// build one with [ParseRule]. A Rule is immutable and safe for concurrent
// use.
type Rule struct {
	text   string
	tool   toolpat.Pattern // the tool-name part (shared with the timeout policy)
	kind   kind
	conds  []cond         // kindArgs
	shell  *shellPat      // kindShell
	path   pathPat        // kindPath
	domain string         // kindDomain: a host, "*.host" or "*"
	agent  *regexp.Regexp // kindAgent
}

// kind is what a rule's parenthesized part tests.
type kind uint8

const (
	kindName   kind = iota // no argument test: the tool name decides
	kindArgs               // key:pattern conditions (dsh's own form)
	kindShell              // Bash(command rule)
	kindPath               // Read(path), Edit(path), ...
	kindDomain             // WebFetch(domain:host)
	kindAgent              // Agent(name)
)

// cond is one `key:pattern` (or bare pattern for the tool's primary
// argument, key == nil) condition.
type cond struct {
	key     []string // path segments, matched case-insensitively
	bare    bool
	pattern *regexp.Regexp // a plain (non-path) pattern
	path    *pathPat       // a path pattern
	raw     string
}

// String returns the rule's text as written.
func (r Rule) String() string { return r.text }

// ParseRule parses one rule. The grammar:
//
//	rule      = tool [ "(" specifier ")" ]
//	tool      = name pattern: any characters but whitespace, control
//	            characters, "(", ")", "," and "\"; "*" matches any run
//
// What the specifier means depends on the tool, as in Claude Code (see
// the package documentation for a table of every form):
//
//   - Bash(command): a command rule ("npm run test", "git push *",
//     legacy "npm run test:*"), judged against every simple command of
//     the call's command line;
//   - Read(path), Edit(path), Write(path) (and Grep, Glob, LS,
//     MultiEdit, NotebookEdit): a gitignore-style path pattern;
//   - WebFetch(domain:host): the URL's host ("*.host" for subdomains; a
//     deny or ask rule also covers the subdomains of host);
//   - Agent(name) (or Task): the subagent's type;
//   - WebSearch takes no specifier;
//   - any other tool: conditions, condition { "," condition }, all of
//     which must hold, each key ":" pattern with key a dotted path into
//     the arguments (segments of [A-Za-z0-9_-]), or a bare pattern for the
//     tool's primary argument ([Config].PrimaryArgs). A pattern that
//     starts with "/", "//", "~/", "./" or "**/" is a path pattern
//     (leading "/" absolute); any other (a URL too) is matched against
//     the value as it is: "**" any run, "*" any run without "/", "?" one character but
//     "/", "\" makes the next character literal (write "\," "\)" "\*").
//
// A tool pattern "mcp__server" (no further "__") also matches every tool
// of that server, as in Claude Code. "Tool()" and, for Claude Code's
// tools other than the file tools, "Tool(*)" mean the tool without
// condition. A rule this grammar cannot read is an error, never read as
// something else (a URL is not a key: "WebFetch(https://…)" is refused).
func ParseRule(s string) (Rule, error) {
	r, err := parseRule(s)
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: %s", ErrInvalidRule, truncate(s), err)
	}
	return r, nil
}

// truncate shortens a rule's text for a message.
func truncate(s string) string { return textcut.Truncate(s, 77) }

func parseRule(s string) (Rule, error) {
	if s == "" {
		return Rule{}, errors.New("empty rule")
	}
	if len(s) > MaxRuleLen {
		return Rule{}, fmt.Errorf("longer than %d bytes", MaxRuleLen)
	}
	if !utf8.ValidString(s) {
		return Rule{}, errors.New("not valid UTF-8")
	}
	name, rest, hasConds := strings.Cut(s, "(")
	if name == "" {
		return Rule{}, errors.New("missing the tool name before \"(\"")
	}
	tool, err := toolpat.Parse(name)
	if err != nil {
		return Rule{}, err
	}
	r := Rule{text: s, tool: tool}
	if !hasConds {
		return r, nil
	}
	body, ok := strings.CutSuffix(rest, ")")
	if !ok {
		return Rule{}, errors.New(`missing the closing ")" at the end`)
	}
	if strings.TrimSpace(body) == "" {
		return r, nil // "Tool()": no condition
	}
	switch name {
	case "Bash":
		if strings.TrimSpace(body) == "*" {
			return r, nil // Bash(*) is Bash
		}
		if rest, ok := strings.CutPrefix(body, "command:"); ok && strings.TrimSpace(rest) != "*" {
			return Rule{}, fmt.Errorf("a Bash rule takes a command pattern, as Claude Code does, not key:pattern: write Bash(%s)", strings.TrimSpace(rest))
		}
		sp, err := compileShellPat(body)
		if err != nil {
			return Rule{}, err
		}
		r.kind, r.shell = kindShell, sp
		return r, nil
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "Grep", "Glob", "LS", "NotebookRead":
		for _, k := range []string{"file_path:", "path:", "notebook_path:"} {
			if rest, ok := strings.CutPrefix(body, k); ok {
				return Rule{}, fmt.Errorf("%s takes a path pattern, as Claude Code does, not key:pattern: write %s(%s) (//%s for an absolute path)", name, name, rest, strings.TrimPrefix(rest, "/"))
			}
		}
		pp, err := compileClaudePath(body)
		if err != nil {
			return Rule{}, fmt.Errorf("path pattern %q: %s", body, err)
		}
		r.kind, r.path = kindPath, pp
		return r, nil
	case "WebFetch":
		host, ok := strings.CutPrefix(body, "domain:")
		if !ok {
			return Rule{}, errors.New(`WebFetch takes "domain:host" (a URL or other pattern is not a WebFetch rule)`)
		}
		host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
		if !validHost(host) {
			return Rule{}, fmt.Errorf("%q is not a host name (write domain:example.com, domain:*.example.com or domain:*)", host)
		}
		r.kind, r.domain = kindDomain, host
		return r, nil
	case "WebSearch":
		return Rule{}, errors.New("WebSearch takes no specifier: write WebSearch")
	case "Agent", "Task":
		if strings.TrimSpace(body) == "*" {
			return r, nil
		}
		re, _, err := globRegexp(strings.TrimSpace(body))
		if err != nil {
			return Rule{}, err
		}
		r.kind, r.agent = kindAgent, re
		return r, nil
	}
	parts, err := splitConds(body)
	if err != nil {
		return Rule{}, err
	}
	for _, p := range parts {
		c, err := parseCond(p)
		if err != nil {
			return Rule{}, err
		}
		r.conds = append(r.conds, c)
	}
	if len(r.conds) > 0 {
		r.kind = kindArgs
	}
	return r, nil
}

// validHost accepts a host name, "*.host" and "*".
func validHost(h string) bool {
	if h == "*" {
		return true
	}
	h = strings.TrimPrefix(h, "*.")
	if h == "" || len(h) > 253 {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == ':' || c == '[' || c == ']') {
			return false
		}
	}
	return !strings.Contains(h, "..")
}

// splitConds splits at unescaped commas, refusing unescaped parentheses;
// escapes are kept for parseCond.
func splitConds(body string) ([]string, error) {
	var parts []string
	start := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '\\':
			if i+1 >= len(body) {
				return nil, errors.New(`a trailing "\" escapes nothing`)
			}
			i++
		case '(', ')':
			return nil, fmt.Errorf("unescaped %q inside the conditions (write \\%c)", body[i], body[i])
		case ',':
			parts = append(parts, body[start:i])
			start = i + 1
		}
	}
	last := body[start:]
	if len(parts) == 0 && strings.TrimSpace(last) == "" {
		return nil, nil // "()"
	}
	return append(parts, last), nil
}

func isKeyByte(b byte) bool {
	return b == '_' || b == '-' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func parseCond(p string) (cond, error) {
	p = trimSpace(p)
	if p == "" {
		return cond{}, errors.New("an empty condition (two commas, or a comma at an end)")
	}
	c := cond{raw: p}
	colons := unescapedColons(p)
	prefix := len(colons) > 0 && colons[len(colons)-1] == len(p)-2 && p[len(p)-1] == '*'
	switch {
	case prefix && len(colons) == 1:
		// Claude Code's prefix form, `npm run test:*`: a bare condition.
		c.bare = true
	case len(colons) > 0 && validKey(p[:colons[0]]):
		c.key = strings.Split(p[:colons[0]], ".")
		p = p[colons[0]+1:]
	default:
		c.bare = true
	}
	if len(c.key) == 1 && strings.HasPrefix(p, "//") {
		switch strings.ToLower(c.key[0]) {
		case "http", "https", "ftp", "ws", "wss", "file":
			return cond{}, fmt.Errorf("condition %q is a URL, not key:pattern (write url:https://… for an argument named url; WebFetch takes domain:host)", c.raw)
		}
	}
	if prefix {
		p = p[:len(p)-2] + "**"
	}
	if p == "" {
		return cond{}, fmt.Errorf("condition %q has an empty pattern", c.raw)
	}
	if isArgPath(p) && !prefix {
		pp, err := compileArgPath(p)
		if err != nil {
			return cond{}, fmt.Errorf("condition %q: %s", c.raw, err)
		}
		c.path = &pp
		return c, nil
	}
	re, _, err := globRegexp(norm.NFC.String(p))
	if err != nil {
		return cond{}, fmt.Errorf("condition %q: %s", c.raw, err)
	}
	c.pattern = re
	return c, nil
}

// trimSpace trims ASCII spaces and tabs, keeping an escaped trailing one.
func trimSpace(s string) string {
	s = strings.TrimLeft(s, " \t")
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		// count the backslashes before the space
		n := 0
		for j := len(s) - 2; j >= 0 && s[j] == '\\'; j-- {
			n++
		}
		if n%2 == 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// unescapedColons returns the byte offsets of the ":" not preceded by an
// escaping "\".
func unescapedColons(p string) []int {
	var at []int
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case ':':
			at = append(at, i)
		}
	}
	return at
}

func validKey(k string) bool {
	for _, seg := range strings.Split(k, ".") {
		if seg == "" {
			return false
		}
		for i := 0; i < len(seg); i++ {
			if !isKeyByte(seg[i]) {
				return false
			}
		}
	}
	return true
}

// globRegexp compiles a condition pattern into an anchored RE2 expression
// (linear-time matching, whatever the input).
func globRegexp(p string) (*regexp.Regexp, bool, error) {
	var lit strings.Builder // unescaped text, to decide absoluteness
	var re strings.Builder
	re.WriteString(`^(?s:`)
	wild := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '*' || p[i] == '?' {
			if wild++; wild > MaxWildcards {
				return nil, false, fmt.Errorf("more than %d wildcards", MaxWildcards)
			}
		}
		switch c := p[i]; c {
		case '\\':
			if i+1 >= len(p) {
				return nil, false, errors.New(`a trailing "\" escapes nothing`)
			}
			i++
			_, size := utf8.DecodeRuneInString(p[i:])
			re.WriteString(regexp.QuoteMeta(p[i : i+size]))
			lit.WriteString(p[i : i+size])
			i += size - 1
		case '*':
			if i+1 < len(p) && p[i+1] == '*' {
				re.WriteString(`.*`)
				i++
			} else {
				re.WriteString(`[^/]*`)
			}
			for i+1 < len(p) && p[i+1] == '*' { // a run of stars is one wildcard
				i++
			}
			lit.WriteByte('*')
		case '?':
			re.WriteString(`[^/]`)
			lit.WriteByte('?')
		default:
			_, size := utf8.DecodeRuneInString(p[i:])
			re.WriteString(regexp.QuoteMeta(p[i : i+size]))
			lit.WriteString(p[i : i+size])
			i += size - 1
		}
	}
	re.WriteString(`)$`)
	x, err := regexp.Compile(re.String())
	if err != nil {
		return nil, false, err
	}
	return x, strings.HasPrefix(lit.String(), "/"), nil
}
