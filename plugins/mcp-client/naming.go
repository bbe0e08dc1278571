package mcpclient

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// MaxToolNameLen is the longest registry name a mounted tool gets: what
// model APIs accept for a function name.
const MaxToolNameLen = 64

// hashLen is the number of hex digits of the stable suffix.
const hashLen = 8

// ToolName returns the registry name of the MCP tool tool of server, as
// [Plugin] registers it when no other tool of the server collides with
// it: "mcp__<server>__<tool>" when that is already made of
// [A-Za-z0-9_-] and at most [MaxToolNameLen] bytes long; otherwise every
// other byte sequence becomes "_", the name is cut to fit, and "_" plus
// eight hex digits of the SHA-256 of the unnormalized name are appended,
// so distinct tools keep distinct, stable names.
func ToolName(server, tool string) string {
	full := "mcp__" + server + "__" + tool
	if valid(full) {
		return full
	}
	return hashed(full, 0)
}

// ToolNames returns the registry names of a server's tools, keyed by the
// server's tool name: [ToolName] of each, except that when two would be
// equal (a server can craft a tool name equal to another's hashed form),
// the later of them in sorted order gets a suffix derived from a salted
// hash instead. The result depends only on the set of tool names.
func ToolNames(server string, tools []string) map[string]string {
	sorted := slices.Clone(tools)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	out := make(map[string]string, len(sorted))
	taken := make(map[string]bool, len(sorted))
	// Names that needed no normalization first: they keep their names.
	var rest []string
	for _, t := range sorted {
		full := "mcp__" + server + "__" + t
		if valid(full) {
			out[t] = full
			taken[full] = true
			continue
		}
		rest = append(rest, t)
	}
	for _, t := range rest {
		full := "mcp__" + server + "__" + t
		n := hashed(full, 0)
		for salt := 1; taken[n]; salt++ {
			n = hashed(full, salt)
		}
		out[t] = n
		taken[n] = true
	}
	return out
}

// valid reports whether s is an acceptable model-facing tool name.
func valid(s string) bool {
	if s == "" || len(s) > MaxToolNameLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !okByte(s[i]) {
			return false
		}
	}
	return true
}

func okByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '-'
}

// hashed normalizes full and appends the stable suffix (salted when salt
// is not zero).
func hashed(full string, salt int) string {
	var b strings.Builder
	b.Grow(MaxToolNameLen)
	under := false
	for i := 0; i < len(full) && b.Len() < MaxToolNameLen-1-hashLen; i++ {
		if okByte(full[i]) {
			b.WriteByte(full[i])
			under = false
			continue
		}
		// A run of other bytes (a multi-byte character, "." ...) is one "_".
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	h := sha256.New()
	h.Write([]byte(full))
	for ; salt > 0; salt-- {
		h.Write([]byte{0})
	}
	sum := h.Sum(nil)
	b.WriteByte('_')
	b.WriteString(hex.EncodeToString(sum)[:hashLen])
	return b.String()
}
