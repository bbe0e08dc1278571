package canonjson

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"
)

// IsCanonical reports whether raw is lossless JSON already in canonical
// form: exactly the bytes [Canonicalize] would return for it. It only scans
// raw, without allocating, so input that is already canonical (what a
// canonicalizing client sends, and every output of Canonicalize) costs no
// more than a validity check.
//
// A false answer says nothing more than "not known to be canonical": raw
// may be invalid, lossy, or lossless in another form; and the scan gives up
// (false) on an object whose keys, counted with those of the objects
// around it, exceed a small fixed budget (duplicate keys are found by
// comparing them). [Canonicalize] is the authority for those.
func IsCanonical(raw []byte, opts Options) bool {
	maxDepth, maxBytes := opts.limits()
	if len(raw) > maxBytes {
		return false
	}
	c := checker{in: raw, maxDepth: maxDepth}
	return c.value() && c.pos == len(raw)
}

// isCanonicalObject is IsCanonical for an object: CanonicalizeObject
// returns raw unchanged.
func isCanonicalObject(raw []byte, opts Options) bool {
	return len(raw) > 0 && raw[0] == '{' && IsCanonical(raw, opts)
}

// maxFastKeys bounds the object keys the fast scan keeps to find
// duplicates (those of the objects being scanned, innermost last).
const maxFastKeys = 32

// checker is the scan-only twin of scanner: it accepts exactly the
// canonical form (no whitespace, minimal string escapes, ES number
// formatting) of lossless JSON, and nothing else.
type checker struct {
	in       []byte
	pos      int
	depth    int
	maxDepth int
	nkeys    int
	keys     [maxFastKeys][2]int // key spans (quotes included) of open objects
}

func (c *checker) value() bool {
	if c.pos >= len(c.in) {
		return false
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object()
	case b == '[':
		return c.array()
	case b == '"':
		return c.str()
	case b == '-' || (b >= '0' && b <= '9'):
		return c.number()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	}
	return false
}

func (c *checker) literal(word string) bool {
	if len(c.in)-c.pos < len(word) || string(c.in[c.pos:c.pos+len(word)]) != word {
		return false
	}
	c.pos += len(word)
	return true
}

func (c *checker) array() bool {
	if c.depth >= c.maxDepth {
		return false
	}
	c.depth++
	c.pos++ // [
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.depth--
		return true
	}
	for {
		if !c.value() || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case ']':
			c.pos++
			c.depth--
			return true
		default:
			return false
		}
	}
}

func (c *checker) object() bool {
	if c.depth >= c.maxDepth {
		return false
	}
	c.depth++
	c.pos++ // {
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.depth--
		return true
	}
	base := c.nkeys
	for {
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return false
		}
		start := c.pos
		if !c.str() {
			return false
		}
		// Canonical strings are equal exactly when their values are (the
		// canonical encoding is a function of the value, and injective).
		key := c.in[start:c.pos]
		for _, k := range c.keys[base:c.nkeys] {
			if bytes.Equal(c.in[k[0]:k[1]], key) {
				return false // a duplicate: Canonicalize reports it
			}
		}
		if c.nkeys == len(c.keys) {
			return false
		}
		c.keys[c.nkeys] = [2]int{start, c.pos}
		c.nkeys++
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return false
		}
		c.pos++
		if !c.value() || c.pos >= len(c.in) {
			return false
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
		case '}':
			c.pos++
			c.nkeys = base
			c.depth--
			return true
		default:
			return false
		}
	}
}

// str scans a string in canonical form: raw UTF-8 (valid), and only '"',
// '\\' and control characters escaped, as AppendString writes them.
func (c *checker) str() bool {
	c.pos++ // opening quote
	for c.pos < len(c.in) {
		b := c.in[c.pos]
		switch {
		case b == '"':
			c.pos++
			return true
		case b == '\\':
			if c.pos+1 >= len(c.in) {
				return false
			}
			switch c.in[c.pos+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				c.pos += 2
			case 'u':
				// Only \u00XX (lowercase hex) for a control character
				// without a short escape.
				if c.pos+6 > len(c.in) {
					return false
				}
				h := c.in[c.pos+2 : c.pos+6]
				if h[0] != '0' || h[1] != '0' || (h[2] != '0' && h[2] != '1') {
					return false
				}
				lo := h[3]
				var v byte
				switch {
				case lo >= '0' && lo <= '9':
					v = lo - '0'
				case lo >= 'a' && lo <= 'f':
					v = lo - 'a' + 10
				default:
					return false
				}
				v |= (h[2] - '0') << 4
				if v == '\b' || v == '\f' || v == '\n' || v == '\r' || v == '\t' {
					return false
				}
				c.pos += 6
			default:
				return false
			}
		case b < 0x20:
			return false
		case b < 0x80:
			c.pos++
		default:
			r, size := utf8.DecodeRune(c.in[c.pos:])
			if r == utf8.RuneError && size <= 1 {
				return false
			}
			c.pos += size
		}
	}
	return false
}

// number scans a number in canonical form: an integer within ±(2^53-1)
// without sign on zero or leading zeros, or a non-integer written exactly
// as AppendNumber writes its value.
func (c *checker) number() bool {
	in := c.in
	start, i := c.pos, c.pos
	if in[i] == '-' {
		i++
	}
	if i >= len(in) || in[i] < '0' || in[i] > '9' {
		return false
	}
	if in[i] == '0' {
		i++
		if i < len(in) && in[i] >= '0' && in[i] <= '9' {
			return false
		}
	} else {
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	digitsEnd := i
	integer := true
	if i < len(in) && in[i] == '.' {
		integer = false
		i++
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			return false
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	if i < len(in) && (in[i] == 'e' || in[i] == 'E') {
		integer = false
		i++
		if i < len(in) && (in[i] == '+' || in[i] == '-') {
			i++
		}
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			return false
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	c.pos = i
	lit := in[start:i]
	if integer {
		digits := in[start:digitsEnd]
		if digits[0] == '-' {
			digits = digits[1:]
			if digits[0] == '0' {
				return false // -0 is written 0
			}
		}
		if len(digits) > 16 {
			return false
		}
		var u uint64
		for _, d := range digits {
			u = u*10 + uint64(d-'0')
		}
		return u <= MaxSafeInteger
	}
	if len(lit) > 32 {
		return false // longer than any AppendNumber output
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return false
	}
	if a := math.Abs(f); a > MaxSafeInteger && a < 1e21 {
		return false
	}
	var out [40]byte
	return bytes.Equal(AppendNumber(out[:0], f), lit)
}
