package permissions

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"
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
// argument conditions that must all hold. Its zero value matches nothing;
// build one with [ParseRule]. A Rule is immutable and safe for concurrent
// use.
type Rule struct {
	text   string
	tool   *regexp.Regexp
	server string // "mcp__x" server-wide form: also matches mcp__x__*
	conds  []cond
}

// cond is one `key:pattern` (or bare pattern for the tool's primary
// argument, key == nil) condition.
type cond struct {
	key     []string // path segments, matched case-insensitively
	bare    bool
	pattern *regexp.Regexp
	abs     bool // the pattern is an absolute path: values are cleaned
	raw     string
}

// String returns the rule's text as written.
func (r Rule) String() string { return r.text }

// ParseRule parses one rule. The grammar:
//
//	rule      = tool [ "(" [ condition { "," condition } ] ")" ]
//	tool      = name pattern: any characters but whitespace, control
//	            characters, "(", ")" and ","; "*" matches any run
//	condition = key ":" pattern | pattern
//	key       = segment { "." segment }, segment = [A-Za-z0-9_-]+
//
// A tool pattern "mcp__server" (no further "__") also matches every tool
// of that server, "mcp__server__*", as in Claude Code. In a condition's
// pattern "**" matches any run of characters, "*" any run without "/",
// "?" one character other than "/" (at most [MaxWildcards] of them), and
// "\" makes the next character
// literal (write "\," "\)" "\*" for those characters); spaces around a
// condition are trimmed. A condition without a key (Claude Code's
// `Bash(npm run test:*)`) applies to the tool's primary argument, given by
// [Config].PrimaryArgs; in it a trailing ":*" means "followed by anything",
// as Claude Code's prefix form. "()" means no condition.
func ParseRule(s string) (Rule, error) {
	r, err := parseRule(s)
	if err != nil {
		return Rule{}, fmt.Errorf("%w %q: %s", ErrInvalidRule, truncate(s), err)
	}
	return r, nil
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}

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
	for _, c := range name {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == ')' || c == ',' || c == '\\' {
			return Rule{}, fmt.Errorf("tool name pattern %q contains %q", name, c)
		}
	}
	r := Rule{text: s}
	var re strings.Builder
	re.WriteString(`^`)
	for i, part := range strings.Split(name, "*") {
		if i > 0 {
			re.WriteString(`.*`)
		}
		re.WriteString(regexp.QuoteMeta(part))
	}
	re.WriteString(`$`)
	r.tool = regexp.MustCompile(re.String())
	if after, ok := strings.CutPrefix(name, "mcp__"); ok && after != "" && !strings.Contains(after, "__") && !strings.Contains(name, "*") {
		r.server = name + "__"
	}
	if !hasConds {
		return r, nil
	}
	body, ok := strings.CutSuffix(rest, ")")
	if !ok {
		return Rule{}, errors.New(`missing the closing ")" at the end`)
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
	return r, nil
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
	if prefix {
		p = p[:len(p)-2] + "**"
	}
	if p == "" {
		return cond{}, fmt.Errorf("condition %q has an empty pattern", c.raw)
	}
	re, abs, err := globRegexp(p)
	if err != nil {
		return cond{}, fmt.Errorf("condition %q: %s", c.raw, err)
	}
	c.pattern, c.abs = re, abs
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

// matchValue matches one argument value against the condition's pattern.
// For an absolute-path pattern the value is cleaned lexically first
// ("/tmp/../etc" is "/etc"); a relative value is joined to dir, and when
// dir is empty it cannot be placed: unknown is returned.
func (c *cond) matchValue(v, dir string) (match, unknown bool) {
	if len(v) > MaxValueLen {
		return false, true
	}
	if c.abs {
		if !strings.HasPrefix(v, "/") {
			if dir == "" {
				return false, true
			}
			v = path.Join(dir, v)
		}
		v = path.Clean(v)
	}
	return c.pattern.MatchString(v), false
}
