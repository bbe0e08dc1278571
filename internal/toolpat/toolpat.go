// Package toolpat is the tool-name pattern grammar that permission rules
// (plugins/permissions, the part of a rule before its parentheses) and
// per-tool budgets (plugins/timeout-policy, dsh's "timeouts") share, so
// that a pattern names the same tools wherever it is written:
//
//	Pattern          Matches
//	---------------  ---------------------------------------------------
//	mcp__fs__read    mcp__fs__read, exactly
//	mcp__fs__*       every name starting mcp__fs__ ("*" is any run)
//	mcp__fs          every tool of the MCP server fs (mcp__fs__<tool>),
//	                 and mcp__fs itself
//	Read             Read and the tools Claude Code applies Read rules
//	                 to (Grep, Glob, LS, NotebookRead); Edit, Write,
//	                 MultiEdit and NotebookEdit cover each other; Agent
//	                 and Task likewise
//
// A pattern is a non-empty string without whitespace, control
// characters, "(", ")", "," or "\".
package toolpat

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Pattern is one parsed tool-name pattern; its zero value matches
// nothing. Immutable and safe for concurrent use.
type Pattern struct {
	text   string
	glob   *regexp.Regexp // nil: no "*"
	server string         // "mcp__x__" for the server-wide form mcp__x
	family []string       // Claude Code tools a built-in name covers
}

// The families of Claude Code's built-in tools a pattern naming one of
// them covers, as Claude Code applies Read rules to its file-searching
// tools and Edit rules to every tool that edits files.
var (
	readFamily  = []string{"Read", "Grep", "Glob", "LS", "NotebookRead"}
	editFamily  = []string{"Edit", "Write", "MultiEdit", "NotebookEdit"}
	agentFamily = []string{"Agent", "Task"}
	families    = map[string][]string{
		"Read": readFamily, "Edit": editFamily, "Write": editFamily, "MultiEdit": editFamily,
		"NotebookEdit": editFamily, "Agent": agentFamily, "Task": agentFamily,
		"Grep": {"Grep"}, "Glob": {"Glob"}, "LS": {"LS"}, "NotebookRead": {"NotebookRead"},
		"Bash": {"Bash"}, "WebFetch": {"WebFetch"}, "WebSearch": {"WebSearch"},
	}
)

// Parse parses s as a tool-name pattern.
func Parse(s string) (Pattern, error) {
	if s == "" {
		return Pattern{}, errors.New("empty tool name pattern")
	}
	if !utf8.ValidString(s) {
		return Pattern{}, errors.New("tool name pattern is not valid UTF-8")
	}
	for _, c := range s {
		if unicode.IsSpace(c) || unicode.IsControl(c) || c == '(' || c == ')' || c == ',' || c == '\\' {
			return Pattern{}, fmt.Errorf("tool name pattern %q contains %q", s, c)
		}
	}
	p := Pattern{text: s, family: families[s]}
	if strings.Contains(s, "*") {
		var re strings.Builder
		re.WriteString(`^(?s:`)
		for i, part := range strings.Split(s, "*") {
			if i > 0 {
				re.WriteString(`.*`)
			}
			re.WriteString(regexp.QuoteMeta(part))
		}
		re.WriteString(`)$`)
		p.glob = regexp.MustCompile(re.String())
	} else if after, ok := strings.CutPrefix(s, "mcp__"); ok && after != "" && !strings.Contains(after, "__") {
		p.server = s + "__"
	}
	return p, nil
}

// MustParse is Parse for a pattern known to be valid; it panics otherwise.
func MustParse(s string) Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pattern as written.
func (p Pattern) String() string { return p.text }

// Match reports whether the pattern names tool.
func (p Pattern) Match(tool string) bool {
	switch {
	case p.text == "":
		return false
	case p.family != nil:
		return slices.Contains(p.family, tool)
	case p.glob != nil:
		return p.glob.MatchString(tool)
	}
	return p.text == tool || p.server != "" && strings.HasPrefix(tool, p.server)
}
