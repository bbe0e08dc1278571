package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// This file validates canonical JSON (canonjson's compact output) against
// a compiled value schema without decoding it: one pass over the bytes,
// paths built only for violations. It is what [ValueSchema.Validate] runs
// on every value a tool returns.

// canonWalker holds one validation's state.
type canonWalker struct {
	b    []byte
	segs []seg // the path to the value being checked
	vs   []Violation
	// strict also checks that b is already canonical (see
	// ValidateEncoded); notCanon says it is not, or not surely.
	strict   bool
	notCanon bool
	depth    int
}

// ws skips whitespace from b[j]; canonical JSON has none.
func (w *canonWalker) ws(j int) int {
	k := skipSpace(w.b, j)
	if w.strict && k != j {
		w.notCanon = true // the result is not used
	}
	return k
}

// seg is one step of a path: an object key (its quoted token) or an array
// index; the path string is built only for a violation.
type seg struct {
	key []byte // nil for an index
	idx int
}

func (w *canonWalker) path(extra ...string) string {
	var sb strings.Builder
	for _, s := range w.segs {
		sb.WriteByte('/')
		if s.key == nil {
			sb.WriteString(strconv.Itoa(s.idx))
		} else {
			sb.WriteString(escapePointer(unquote(s.key)))
		}
	}
	for _, s := range extra {
		sb.WriteByte('/')
		sb.WriteString(escapePointer(s))
	}
	return sb.String()
}

func (w *canonWalker) add(p, format string, a ...any) {
	w.vs = append(w.vs, Violation{Path: p, Message: fmt.Sprintf(format, a...)})
}

// kindOf is the type bit of the canonical value starting with c, with
// every number reported as kNumber.
func kindOf(c byte) uint8 {
	switch c {
	case '{':
		return kObject
	case '[':
		return kArray
	case '"':
		return kString
	case 't', 'f':
		return kBoolean
	case 'n':
		return kNull
	}
	return kNumber
}

// unquote returns the string of a quoted string token.
func unquote(tok []byte) string {
	in := tok[1 : len(tok)-1]
	if bytes.IndexByte(in, '\\') < 0 {
		return string(in)
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return string(in)
	}
	return s
}

// value checks the value at b[i] against n and returns the offset after it
// (-1 when the bytes are not what canonjson writes, which the caller
// reports).
func (w *canonWalker) value(n *node, i int) int {
	if i < 0 || i >= len(w.b) {
		return -1
	}
	c := w.b[i]
	k := kindOf(c)
	scalar := k != kObject && k != kArray
	fail := n.never || n.types != 0 && n.types&k == 0 && !(k == kNumber && n.types&kInteger != 0)
	if !fail && scalar {
		return w.scalar(n, i, k)
	}
	if fail || n.enum != nil || n.constv != nil {
		if w.strict {
			// Report on the canonical bytes.
			w.notCanon = true
			return -1
		}
		end := valueEnd(w.b, i)
		if end < 0 {
			return -1
		}
		if fail {
			if n.never {
				w.add(w.path(), "no value is allowed here (schema false)")
			} else {
				w.add(w.path(), "expected %s, got %s", strings.Join(typeNames(n.types), " or "), jsonKindOfByte(c))
			}
			return end
		}
		// A container is never an enum member or a const.
		tok := string(w.b[i:end])
		if n.enum != nil {
			w.add(w.path(), "must be one of %s, got %s", strings.Join(n.enum, ", "), truncate(tok, 64))
		}
		if n.constv != nil {
			w.add(w.path(), "must be %s, got %s", *n.constv, truncate(tok, 64))
		}
	}
	if w.depth++; w.strict && w.depth > canonjson.DefaultMaxDepth {
		w.notCanon = true
		return -1
	}
	var end int
	if k == kObject {
		end = w.object(n, i)
	} else {
		end = w.array(n, i)
	}
	w.depth--
	return end
}

// scalarEnd returns the offset after the scalar token at b[i], or -1.
func scalarEnd(b []byte, i int) int {
	if b[i] == '"' {
		return stringEnd(b, i)
	}
	j := i
loop:
	for j < len(b) {
		switch b[j] {
		case ',', ']', '}', ':', ' ', '\t', '\n', '\r':
			break loop
		}
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// scalar checks the scalar at b[i], of kind k allowed by n's types
// (a number only as an integer maybe).
func (w *canonWalker) scalar(n *node, i int, k uint8) int {
	end := scalarEnd(w.b, i)
	if end < 0 {
		return -1
	}
	tok := w.b[i:end]
	if w.strict && !canonicalScalar(tok, k) {
		w.notCanon = true
		return -1
	}
	if k == kNumber && n.types != 0 && n.types&kNumber == 0 && !isIntegral(string(tok)) {
		got := "number"
		if n.types&kInteger != 0 {
			got = "number with a fractional part"
		}
		w.add(w.path(), "expected %s, got %s", strings.Join(typeNames(n.types), " or "), got)
		return end
	}
	if n.enum != nil && !slices.Contains(n.enum, string(tok)) {
		w.add(w.path(), "must be one of %s, got %s", strings.Join(n.enum, ", "), truncate(string(tok), 64))
	}
	if n.constv != nil && *n.constv != string(tok) {
		w.add(w.path(), "must be %s, got %s", *n.constv, truncate(string(tok), 64))
	}
	switch k {
	case kNumber:
		if n.min == nil && n.max == nil {
			return end
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil && !safeerr.Is(err, strconv.ErrRange) {
			return end
		}
		if n.min != nil && f < *n.min {
			w.add(w.path(), "must be at least %s, got %s", formatNumber(*n.min), truncate(string(tok), 64))
		}
		if n.max != nil && f > *n.max {
			w.add(w.path(), "must be at most %s, got %s", formatNumber(*n.max), truncate(string(tok), 64))
		}
	case kString:
		if n.base64 {
			if _, err := base64.StdEncoding.DecodeString(unquote(tok)); err != nil {
				w.add(w.path(), "must be standard base64 (contentEncoding base64): %s", err.Error())
			}
		}
	}
	return end
}

func (w *canonWalker) object(n *node, i int) int {
	var prevKey []byte
	var seen, seenProps uint64
	var seenMap map[string]bool
	if len(n.required) > 64 {
		seenMap = map[string]bool{}
	}
	j := w.ws(i + 1)
	if j < len(w.b) && w.b[j] == '}' {
		j++
	} else {
		for {
			j = w.ws(j)
			if j >= len(w.b) || w.b[j] != '"' {
				return -1
			}
			ke := stringEnd(w.b, j)
			if ke < 0 {
				return -1
			}
			ktok := w.b[j:ke]
			raw := ktok[1 : len(ktok)-1]
			escaped := bytes.IndexByte(raw, '\\') >= 0
			var key string
			if escaped {
				key = unquote(ktok)
			}
			j = w.ws(ke)
			if j >= len(w.b) || w.b[j] != ':' {
				return -1
			}
			j = w.ws(j + 1)
			if len(n.required) > 0 {
				switch {
				case seenMap != nil:
					seenMap[unquote(ktok)] = true
				case escaped:
					if r := slices.Index(n.required, key); r >= 0 {
						seen |= 1 << r
					}
				default:
					for r, name := range n.required {
						if name == string(raw) {
							seen |= 1 << r
							break
						}
					}
				}
			}
			var sub *node
			if escaped {
				sub = n.props[key]
			} else {
				sub = n.props[string(raw)]
			}
			if w.strict {
				// Keys: canonical strings, and unique: a declared
				// property at most once; the keys of a map (or of an object
				// the schema leaves open) in increasing order, as Go's
				// encoder writes a map.
				if !canonicalScalar(ktok, kString) {
					w.notCanon = true
					return -1
				}
				if sub != nil && n.addl == nil && !escaped {
					if sub.idx >= 64 || seenProps&(1<<sub.idx) != 0 {
						w.notCanon = true
						return -1
					}
					seenProps |= 1 << sub.idx
				} else {
					if prevKey != nil && bytes.Compare(prevKey, raw) >= 0 {
						w.notCanon = true
						return -1
					}
					prevKey = raw
				}
			}
			if sub == nil {
				sub = n.addl
			}
			switch {
			case sub != nil:
				w.segs = append(w.segs, seg{key: ktok})
				j = w.value(sub, j)
				w.segs = w.segs[:len(w.segs)-1]
			case n.closed:
				w.add(w.path(unquote(ktok)), "additional property is not allowed")
				j = w.skip(j)
			default:
				j = w.skip(j)
			}
			if j < 0 {
				return -1
			}
			j = w.ws(j)
			if j < len(w.b) && w.b[j] == ',' {
				j++
				continue
			}
			if j < len(w.b) && w.b[j] == '}' {
				j++
				break
			}
			return -1
		}
	}
	for r, name := range n.required {
		if seenMap != nil && !seenMap[name] || seenMap == nil && seen&(1<<r) == 0 {
			w.add(w.path(name), "required property is missing")
		}
	}
	return j
}

func (w *canonWalker) array(n *node, i int) int {
	j := w.ws(i + 1)
	count := 0
	if j < len(w.b) && w.b[j] == ']' {
		j++
	} else {
		for {
			j = w.ws(j)
			if n.items != nil {
				w.segs = append(w.segs, seg{idx: count})
				j = w.value(n.items, j)
				w.segs = w.segs[:len(w.segs)-1]
			} else {
				j = w.skip(j)
			}
			if j < 0 {
				return -1
			}
			count++
			j = w.ws(j)
			if j < len(w.b) && w.b[j] == ',' {
				j++
				continue
			}
			if j < len(w.b) && w.b[j] == ']' {
				j++
				break
			}
			return -1
		}
	}
	if n.minItems >= 0 && count < n.minItems {
		w.add(w.path(), "must have at least %d items, got %d", n.minItems, count)
	}
	if n.maxItems >= 0 && count > n.maxItems {
		w.add(w.path(), "must have at most %d items, got %d", n.maxItems, count)
	}
	return j
}

// skip returns the offset after the value at b[j], which no schema
// constrains; in strict mode only a canonical scalar is skipped.
func (w *canonWalker) skip(j int) int {
	if !w.strict {
		return valueEnd(w.b, j)
	}
	if j >= len(w.b) {
		return -1
	}
	k := kindOf(w.b[j])
	if k == kObject || k == kArray {
		w.notCanon = true
		return -1
	}
	end := scalarEnd(w.b, j)
	if end < 0 || !canonicalScalar(w.b[j:end], k) {
		w.notCanon = true
		return -1
	}
	return end
}

// canonicalScalar reports whether tok, a scalar token of kind k, is surely
// in canonjson's form: a string of valid UTF-8 whose only escapes are the
// short ones JSON.stringify writes, a plain integer of at most 15 digits
// (below 2^53), a number that canonjson writes the same way, true, false,
// null. False means "not surely".
func canonicalScalar(tok []byte, k uint8) bool {
	switch k {
	case kString:
		in := tok[1 : len(tok)-1]
		ascii := true
		for i := 0; i < len(in); i++ {
			switch c := in[i]; {
			case c == '\\':
				i++
				if i >= len(in) {
					return false
				}
				switch in[i] {
				case '"', '\\', 'b', 'f', 'n', 'r', 't':
				default:
					return false
				}
			case c < 0x20:
				return false
			case c >= utf8.RuneSelf:
				ascii = false
			}
		}
		return ascii || utf8.Valid(in)
	case kNumber:
		digits := tok
		if len(digits) > 0 && digits[0] == '-' {
			digits = digits[1:]
		}
		plain := len(digits) > 0 && len(digits) <= 15 && (digits[0] != '0' || len(digits) == 1)
		for _, c := range digits {
			if c < '0' || c > '9' {
				plain = false
				break
			}
		}
		if plain {
			return string(tok) != "-0"
		}
		if !bytes.ContainsAny(tok, ".eE") {
			return false // a long integer: canonjson decides whether it is safe
		}
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil || math.IsInf(f, 0) {
			return false
		}
		var buf [32]byte
		return bytes.Equal(canonjson.AppendNumber(buf[:0], f), tok)
	}
	t := string(tok)
	return t == "true" || t == "false" || t == "null"
}

// ValidateEncoded is [ValueSchema.Validate] for the output of encoding/json
// (json.Marshal of a Go value): it returns the same results, and when the
// bytes are already canonical (compact, with short string escapes, plain
// numbers, sorted map keys: what json.Marshal writes for most values) it
// validates them in one pass without canonicalizing first, returning b
// itself as the canonical value.
func (s *ValueSchema) ValidateEncoded(b []byte) (json.RawMessage, []Violation) {
	if len(b) > 0 && len(b) <= canonjson.DefaultMaxBytes {
		w := &canonWalker{b: b, strict: true}
		if end := w.value(s.root, 0); end == len(b) && !w.notCanon && len(w.vs) == 0 {
			return b, nil
		}
		// Not surely canonical, or invalid: the violations are reported
		// on the canonical form.
	}
	return s.Validate(b)
}

// validateCanon checks canonical JSON against root.
func validateCanon(root *node, canon []byte) []Violation {
	w := &canonWalker{b: canon}
	if end := w.value(root, 0); end != len(canon) {
		// Unreachable for canonjson's output; fail closed all the same.
		return []Violation{{Message: "value is not canonical JSON"}}
	}
	return w.vs
}
