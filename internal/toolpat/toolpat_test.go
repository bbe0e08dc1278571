package toolpat_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/toolpat"
)

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, tool string
		want      bool
	}{
		{"mcp__fs__read", "mcp__fs__read", true},
		{"mcp__fs__read", "mcp__fs__read_file", false},
		{"mcp__fs", "mcp__fs__write_file", true}, // server-wide
		{"mcp__fs", "mcp__fs", true},
		{"mcp__fs", "mcp__fsx__write_file", false},
		{"mcp__fs__*", "mcp__fs__write_file", true},
		{"mcp__fs__*", "mcp__fsx__write_file", false},
		{"mcp__*__read", "mcp__a__b__read", true},
		{"mcp__*", "mcp__a\nb", true}, // "*" is any run, newlines too: a deny never misses
		{"*", "", true},
		{"Read", "Grep", true}, // Claude Code's Read family
		{"Read", "Edit", false},
		{"Edit", "Write", true},
		{"Bash", "Bash", true},
		{"Bash", "Bashx", false},
		{"a.b", "axb", false}, // metacharacters are literal
	} {
		if got := toolpat.MustParse(tc.pat).Match(tc.tool); got != tc.want {
			t.Errorf("%q.Match(%q) = %v, want %v", tc.pat, tc.tool, got, tc.want)
		}
	}
	if (toolpat.Pattern{}).Match("") {
		t.Error("the zero Pattern matched")
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{"", "a b", "a(b", "a)", "a,b", `a\b`, "a\x00", "\xff"} {
		if _, err := toolpat.Parse(s); err == nil {
			t.Errorf("Parse(%q) accepted", s)
		}
	}
}

// FuzzPattern: Parse never panics; a parsed pattern without "*" matches
// its own text, and one made of a prefix and "*" matches every name with
// that prefix.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{"mcp__fs", "mcp__fs__*", "Read", "*", "a*b*c", "mcp__", "mcp____x"} {
		f.Add(s, "mcp__fs__x")
	}
	f.Fuzz(func(t *testing.T, pat, tool string) {
		p, err := toolpat.Parse(pat)
		if err != nil {
			return
		}
		if p.String() != pat {
			t.Fatalf("String %q, want %q", p.String(), pat)
		}
		_ = p.Match(tool)
		if !strings.Contains(pat, "*") && !p.Match(pat) {
			t.Fatalf("%q does not match itself", pat)
		}
		if prefix, ok := strings.CutSuffix(pat, "*"); ok && !strings.Contains(prefix, "*") && !p.Match(prefix+tool) {
			t.Fatalf("%q does not match %q", pat, prefix+tool)
		}
	})
}
