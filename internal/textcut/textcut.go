// Package textcut shortens text for messages, logs and attributes without
// splitting a UTF-8 sequence: the one implementation of cutting a string
// to a byte budget in this module.
package textcut

import (
	"strings"
	"unicode/utf8"
)

// Mark ends a string [Truncate] shortened.
const Mark = "…"

// Prefix returns the longest prefix of s of at most n bytes that does not
// end inside a UTF-8 sequence ("" for n <= 0). Valid UTF-8 stays valid.
func Prefix(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Truncate returns s when it is at most n bytes long; otherwise
// Prefix(s, n) followed by [Mark] (so at most n+len(Mark) bytes).
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return Prefix(s, n) + Mark
}

// Fit returns s when it is at most max bytes long; otherwise the longest
// prefix that leaves room for mark, followed by mark: at most max bytes in
// all (only mark's own longest fitting prefix when max is smaller than
// mark).
func Fit(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	if max < len(mark) {
		return Prefix(mark, max)
	}
	return Prefix(s, max-len(mark)) + mark
}

// Valid returns s as valid UTF-8 (each invalid byte sequence replaced by
// U+FFFD), truncated to n bytes as [Truncate] does.
func Valid(s string, n int) string {
	return Truncate(strings.ToValidUTF8(s, "\uFFFD"), n)
}
