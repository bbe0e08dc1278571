package schema

import (
	"strings"

	"github.com/dsh-go/dsh/internal/textcut"
)

// Small JSON helpers for messages and paths. Canonical JSON itself (reading
// and writing) is package canonjson.

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// truncate shortens s for a message (textcut.Truncate).
func truncate(s string, n int) string { return textcut.Truncate(s, n) }

// isWS reports whether c is JSON whitespace.
func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// jsonKindOfByte names the kind of the JSON value starting with c.
func jsonKindOfByte(c byte) string {
	switch c {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}
