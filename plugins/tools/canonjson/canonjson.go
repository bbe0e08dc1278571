package canonjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/textcut"
)

// Default limits used when the corresponding [Options] field is zero or
// negative.
const (
	// DefaultMaxDepth is the default maximum nesting depth of arrays and
	// objects accepted by [Canonicalize].
	DefaultMaxDepth = 64
	// DefaultMaxBytes is the default maximum input size (4 MiB) accepted by
	// [Canonicalize].
	DefaultMaxBytes = 4 << 20
	// HardMaxDepth caps [Options.MaxDepth] whatever the caller asks for,
	// so that the recursive scanner can never exhaust the stack.
	HardMaxDepth = 10000
)

// MaxSafeInteger is 2^53-1, the largest integer every IEEE-754 double
// reader (JavaScript, Go's float64, jq, ...) represents exactly, and so the
// largest integer magnitude [Canonicalize] accepts.
const MaxSafeInteger = 1<<53 - 1

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// ErrNotLossless is the sentinel wrapped by every [*Error]: the input is
// not JSON, or it is JSON that different readers would not decode to the same
// value. Match it with errors.Is.
var ErrNotLossless = errors.New("canonjson: JSON is not lossless")

// Error reports why [Canonicalize] rejected its input. It wraps
// [ErrNotLossless].
type Error struct {
	// Path is the JSON pointer (RFC 6901) of the value being read when the
	// problem was found, "" for the root.
	Path string
	// Offset is the byte offset into the input where the problem was found.
	Offset int
	// Reason says what is wrong, in lower case, without the location.
	Reason string
}

// Error implements error.
func (e *Error) Error() string {
	p := e.Path
	if p == "" {
		p = "(root)"
	}
	return fmt.Sprintf("non-lossless JSON at %s (byte %d): %s", p, e.Offset, e.Reason)
}

// Unwrap returns [ErrNotLossless].
func (e *Error) Unwrap() error { return ErrNotLossless }

// Options bounds the work [Canonicalize] is willing to do. The zero value
// selects the defaults.
type Options struct {
	// MaxDepth is the maximum nesting depth of arrays and objects; the root
	// container has depth 1. Zero or negative means [DefaultMaxDepth]; values
	// above [HardMaxDepth] are lowered to it.
	MaxDepth int
	// MaxBytes is the maximum input length in bytes. Zero or negative means
	// [DefaultMaxBytes].
	MaxBytes int
}

func (o Options) limits() (depth, size int) {
	depth, size = o.MaxDepth, o.MaxBytes
	if depth <= 0 {
		depth = DefaultMaxDepth
	}
	if depth > HardMaxDepth {
		depth = HardMaxDepth
	}
	if size <= 0 {
		size = DefaultMaxBytes
	}
	return depth, size
}

// Canonicalize checks that raw is lossless JSON and returns its canonical,
// compact form.
//
// The canonical form has no insignificant whitespace, keeps object members in
// their input order, writes strings with the minimal escaping (only '"', '\\'
// and control characters below U+0020 are escaped, using \b \f \n \r \t where
// they exist and \u00XX otherwise; no HTML escaping, non-ASCII is written as
// raw UTF-8, escaped surrogate pairs become the UTF-8 of their code point),
// and writes numbers exactly as JavaScript's JSON.stringify would (the ES
// Number::toString algorithm: shortest round-trip digits, "1e+21", "1e-7",
// "100", "1.5", and -0 as "0"). Canonicalize is idempotent on its own output,
// and the output decodes to the same value as the input in every conforming
// reader (the one deliberate exception being -0, written as 0 exactly as
// JSON.stringify does).
//
// Input is rejected with an [*Error] (wrapping [ErrNotLossless]) when:
//
//   - it is longer than opts.MaxBytes;
//   - it is not exactly one RFC 8259 JSON value (syntax errors, leading BOM,
//     trailing data other than whitespace, raw control characters in strings,
//     invalid escapes, leading zeros, "NaN", ...);
//   - it contains invalid UTF-8. Readers disagree: Go substitutes U+FFFD,
//     others reject or pass the bytes through;
//   - a string contains an escaped lone surrogate such as "\ud800". Go decodes
//     it to U+FFFD, JavaScript keeps an unpaired UTF-16 unit, strict readers
//     fail;
//   - an object has two members whose names are equal after unescaping
//     ("a" and "\u0061" collide). Readers disagree on first-wins vs
//     last-wins, so policy and tool could see different values;
//   - an integer literal (no fraction, no exponent) has a magnitude above
//     2^53-1. JavaScript and float64 readers round it, arbitrary-precision
//     readers (Go with UseNumber, Python) keep it exact;
//   - a number with a fraction or exponent whose float64 value v has
//     2^53-1 < |v| < 1e21 ("1e17", "9007199254740993.0"): its canonical
//     (JSON.stringify) form is an integer literal beyond 2^53-1, the case
//     above, so accepting it would make the output non-canonical;
//   - a number's magnitude overflows float64 ("1e400"), which readers turn
//     into Inf, null, an error or a bignum;
//   - arrays and objects nest deeper than opts.MaxDepth.
//
// Numbers with a fraction or exponent that are merely not exactly
// representable ("0.1", "1e-400") are accepted: every IEEE-754 reader rounds
// them to the same double, and the canonical form is that double.
func Canonicalize(raw []byte, opts Options) ([]byte, error) {
	maxDepth, maxBytes := opts.limits()
	if len(raw) > maxBytes {
		return nil, &Error{Offset: maxBytes, Reason: fmt.Sprintf("input is %d bytes, larger than the %d-byte limit", len(raw), maxBytes)}
	}
	if IsCanonical(raw, opts) {
		// Already canonical (a scan, no allocation): the output is a copy.
		return bytes.Clone(raw), nil
	}
	return canonicalize(raw, maxDepth)
}

// canonicalize is Canonicalize's full scanner (the slow path), for input
// within the size limit.
func canonicalize(raw []byte, maxDepth int) ([]byte, error) {
	s := &scanner{in: raw, maxDepth: maxDepth, out: make([]byte, 0, len(raw))}
	s.skipWS()
	if err := s.value(); err != nil {
		return nil, err
	}
	s.skipWS()
	if s.pos < len(s.in) {
		return nil, s.fail("unexpected data after the top-level value")
	}
	return s.out, nil
}

// CanonicalizeObject is [Canonicalize] for tool-call arguments: the value must
// be a JSON object. Empty or whitespace-only input and the literal null are
// treated as "no arguments" and canonicalize to "{}". Any other non-object
// value is rejected with an [*Error].
func CanonicalizeObject(raw []byte, opts Options) ([]byte, error) {
	if isCanonicalObject(raw, opts) {
		return bytes.Clone(raw), nil
	}
	_, maxBytes := opts.limits()
	if len(raw) <= maxBytes {
		t := strings.Trim(string(raw), " \t\r\n")
		if t == "" || t == "null" {
			return []byte("{}"), nil
		}
	}
	out, err := Canonicalize(raw, opts)
	if err != nil {
		return nil, err
	}
	if out[0] != '{' {
		return nil, &Error{Offset: leadingWS(raw), Reason: "arguments must be a JSON object, got " + jsonKindOfByte(out[0])}
	}
	return out, nil
}

// CanonicalizeValue marshals v with encoding/json and canonicalizes the
// result with the default [Options]. Values json.Marshal cannot encode
// (channels, NaN, cycles) are returned as json.Marshal's error; large integers
// and deep values are rejected as by [Canonicalize]. A string or map key
// that is not valid UTF-8 (which json.Marshal would silently write as
// U+FFFD) is rejected with an [*Error].
func CanonicalizeValue(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: value is not JSON: %w", err)
	}
	if !validUTF8Value(reflect.ValueOf(v), 0) {
		return nil, &Error{Reason: "a string is not valid UTF-8 (encoding/json would replace it with U+FFFD)"}
	}
	return Canonicalize(b, Options{})
}

// validUTF8Value reports whether every string json.Marshal would write
// from v verbatim (strings and string map keys, through pointers,
// interfaces, slices, arrays, maps and exported struct fields) is valid
// UTF-8. Values with their own marshalers are left to Canonicalize.
func validUTF8Value(v reflect.Value, depth int) bool {
	if !v.IsValid() || depth > HardMaxDepth {
		return true
	}
	if v.Type().Implements(jsonMarshalerType) || v.Type().Implements(textMarshalerType) {
		return true
	}
	switch v.Kind() {
	case reflect.String:
		return utf8.ValidString(v.String())
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || validUTF8Value(v.Elem(), depth+1)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return true // base64
		}
		fallthrough
	case reflect.Array:
		for i := range v.Len() {
			if !validUTF8Value(v.Index(i), depth+1) {
				return false
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if k := it.Key(); k.Kind() == reflect.String && !utf8.ValidString(k.String()) || !validUTF8Value(it.Value(), depth+1) {
				return false
			}
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() && !validUTF8Value(v.Field(i), depth+1) {
				return false
			}
		}
	}
	return true
}

func leadingWS(b []byte) int {
	i := 0
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

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

// frame is one level of the path being scanned.
type frame struct {
	key   string
	index int
	array bool
}

type scanner struct {
	in       []byte
	pos      int
	out      []byte
	maxDepth int
	stack    []frame
}

func (s *scanner) path() string {
	var b strings.Builder
	for _, f := range s.stack {
		b.WriteByte('/')
		if f.array {
			b.WriteString(strconv.Itoa(f.index))
		} else {
			b.WriteString(escapePointer(f.key))
		}
	}
	return b.String()
}

func (s *scanner) fail(reason string) error {
	return &Error{Path: s.path(), Offset: s.pos, Reason: reason}
}

func (s *scanner) failAt(off int, reason string) error {
	return &Error{Path: s.path(), Offset: off, Reason: reason}
}

func (s *scanner) skipWS() {
	for s.pos < len(s.in) && isWS(s.in[s.pos]) {
		s.pos++
	}
}

func (s *scanner) value() error {
	if s.pos >= len(s.in) {
		return s.fail("unexpected end of input, expected a value")
	}
	switch c := s.in[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		str, err := s.str()
		if err != nil {
			return err
		}
		s.out = AppendString(s.out, str)
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	default:
		return s.fail(fmt.Sprintf("invalid character %s looking for a value", quoteChar(c)))
	}
}

func quoteChar(c byte) string {
	if c < 0x20 || c >= 0x7f {
		return fmt.Sprintf("0x%02x", c)
	}
	return strconv.QuoteRune(rune(c))
}

func (s *scanner) literal(word string) error {
	if len(s.in)-s.pos < len(word) || string(s.in[s.pos:s.pos+len(word)]) != word {
		return s.fail("invalid literal, expected " + word)
	}
	s.pos += len(word)
	s.out = append(s.out, word...)
	return nil
}

func (s *scanner) push(f frame) error {
	if len(s.stack) >= s.maxDepth {
		return s.fail(fmt.Sprintf("nesting deeper than the %d-level limit", s.maxDepth))
	}
	s.stack = append(s.stack, f)
	return nil
}

func (s *scanner) array() error {
	if len(s.stack) >= s.maxDepth {
		return s.fail(fmt.Sprintf("nesting deeper than the %d-level limit", s.maxDepth))
	}
	s.pos++ // [
	s.out = append(s.out, '[')
	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == ']' {
		s.pos++
		s.out = append(s.out, ']')
		return nil
	}
	s.stack = append(s.stack, frame{array: true})
	top := len(s.stack) - 1
	for i := 0; ; i++ {
		s.stack[top].index = i
		if i > 0 {
			s.out = append(s.out, ',')
		}
		s.skipWS()
		if err := s.value(); err != nil {
			return err
		}
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end of input in array")
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
		case ']':
			s.pos++
			s.out = append(s.out, ']')
			s.stack = s.stack[:top]
			return nil
		default:
			return s.fail(fmt.Sprintf("invalid character %s after array element", quoteChar(s.in[s.pos])))
		}
	}
}

func (s *scanner) object() error {
	if len(s.stack) >= s.maxDepth {
		return s.fail(fmt.Sprintf("nesting deeper than the %d-level limit", s.maxDepth))
	}
	s.pos++ // {
	s.out = append(s.out, '{')
	s.skipWS()
	if s.pos < len(s.in) && s.in[s.pos] == '}' {
		s.pos++
		s.out = append(s.out, '}')
		return nil
	}
	var small []string
	var seen map[string]struct{}
	first := true
	for {
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end of input in object")
		}
		if s.in[s.pos] != '"' {
			return s.fail(fmt.Sprintf("invalid character %s looking for an object key", quoteChar(s.in[s.pos])))
		}
		keyOff := s.pos
		key, err := s.str()
		if err != nil {
			return err
		}
		dup := false
		if seen != nil {
			_, dup = seen[key]
			seen[key] = struct{}{}
		} else {
			for _, k := range small {
				if k == key {
					dup = true
					break
				}
			}
			small = append(small, key)
			if len(small) > 8 {
				seen = make(map[string]struct{}, 16)
				for _, k := range small {
					seen[k] = struct{}{}
				}
			}
		}
		if err := s.push(frame{key: key}); err != nil {
			return err
		}
		if dup {
			return s.failAt(keyOff, "duplicate object key (readers disagree on first-wins vs last-wins)")
		}
		if !first {
			s.out = append(s.out, ',')
		}
		first = false
		s.out = AppendString(s.out, key)
		s.skipWS()
		if s.pos >= len(s.in) || s.in[s.pos] != ':' {
			if s.pos >= len(s.in) {
				return s.fail("unexpected end of input, expected ':'")
			}
			return s.fail(fmt.Sprintf("invalid character %s after object key", quoteChar(s.in[s.pos])))
		}
		s.pos++
		s.out = append(s.out, ':')
		s.skipWS()
		if err := s.value(); err != nil {
			return err
		}
		s.stack = s.stack[:len(s.stack)-1]
		s.skipWS()
		if s.pos >= len(s.in) {
			return s.fail("unexpected end of input in object")
		}
		switch s.in[s.pos] {
		case ',':
			s.pos++
		case '}':
			s.pos++
			s.out = append(s.out, '}')
			return nil
		default:
			return s.fail(fmt.Sprintf("invalid character %s after object value", quoteChar(s.in[s.pos])))
		}
	}
}

// str scans a JSON string starting at the opening quote and returns its
// unescaped value.
func (s *scanner) str() (string, error) {
	s.pos++ // opening quote
	start := s.pos
	// Fast path: no escapes, ASCII printable.
	for s.pos < len(s.in) {
		c := s.in[s.pos]
		if c == '"' {
			v := string(s.in[start:s.pos])
			s.pos++
			return v, nil
		}
		if c == '\\' || c < 0x20 || c >= 0x80 {
			break
		}
		s.pos++
	}
	buf := make([]byte, 0, s.pos-start+16)
	buf = append(buf, s.in[start:s.pos]...)
	for {
		if s.pos >= len(s.in) {
			return "", s.fail("unexpected end of input in string")
		}
		c := s.in[s.pos]
		switch {
		case c == '"':
			s.pos++
			return string(buf), nil
		case c < 0x20:
			return "", s.fail(fmt.Sprintf("raw control character 0x%02x in string", c))
		case c < 0x80 && c != '\\':
			buf = append(buf, c)
			s.pos++
		case c >= 0x80:
			r, size := utf8.DecodeRune(s.in[s.pos:])
			if r == utf8.RuneError && size <= 1 {
				return "", s.fail("invalid UTF-8 in string")
			}
			buf = append(buf, s.in[s.pos:s.pos+size]...)
			s.pos += size
		default: // backslash
			if s.pos+1 >= len(s.in) {
				return "", s.fail("unexpected end of input in string escape")
			}
			e := s.in[s.pos+1]
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
				s.pos += 2
			case 'b':
				buf = append(buf, '\b')
				s.pos += 2
			case 'f':
				buf = append(buf, '\f')
				s.pos += 2
			case 'n':
				buf = append(buf, '\n')
				s.pos += 2
			case 'r':
				buf = append(buf, '\r')
				s.pos += 2
			case 't':
				buf = append(buf, '\t')
				s.pos += 2
			case 'u':
				off := s.pos
				r1, ok := hex4(s.in, s.pos+2)
				if !ok {
					return "", s.fail("invalid \\u escape in string")
				}
				s.pos += 6
				switch {
				case utf16.IsSurrogate(r1) && r1 < 0xdc00:
					r2, ok := rune(-1), false
					if s.pos+1 < len(s.in) && s.in[s.pos] == '\\' && s.in[s.pos+1] == 'u' {
						r2, ok = hex4(s.in, s.pos+2)
					}
					if !ok || r2 < 0xdc00 || r2 > 0xdfff {
						return "", s.failAt(off, "escaped lone surrogate in string (readers disagree: U+FFFD, raw UTF-16 unit, or error)")
					}
					s.pos += 6
					buf = utf8.AppendRune(buf, utf16.DecodeRune(r1, r2))
				case utf16.IsSurrogate(r1):
					return "", s.failAt(off, "escaped lone surrogate in string (readers disagree: U+FFFD, raw UTF-16 unit, or error)")
				default:
					buf = utf8.AppendRune(buf, r1)
				}
			default:
				return "", s.fail(fmt.Sprintf("invalid escape %s in string", quoteChar(e)))
			}
		}
	}
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func (s *scanner) number() error {
	start := s.pos
	i := s.pos
	in := s.in
	if in[i] == '-' {
		i++
	}
	if i >= len(in) || in[i] < '0' || in[i] > '9' {
		s.pos = i
		return s.fail("invalid number: expected a digit")
	}
	if in[i] == '0' {
		i++
		if i < len(in) && in[i] >= '0' && in[i] <= '9' {
			s.pos = i
			return s.fail("invalid number: leading zero")
		}
	} else {
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	integer := true
	if i < len(in) && in[i] == '.' {
		integer = false
		i++
		if i >= len(in) || in[i] < '0' || in[i] > '9' {
			s.pos = i
			return s.fail("invalid number: expected a digit after '.'")
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
			s.pos = i
			return s.fail("invalid number: expected a digit in exponent")
		}
		for i < len(in) && in[i] >= '0' && in[i] <= '9' {
			i++
		}
	}
	lit := string(in[start:i])
	s.pos = i
	if integer {
		digits := strings.TrimPrefix(lit, "-")
		if len(digits) > 16 {
			return s.failAt(start, "integer "+truncate(lit, 40)+" exceeds 2^53-1 (readers disagree: rounded vs exact)")
		}
		u, _ := strconv.ParseUint(digits, 10, 64)
		if u > MaxSafeInteger {
			return s.failAt(start, "integer "+lit+" exceeds 2^53-1 (readers disagree: rounded vs exact)")
		}
		if u == 0 {
			s.out = append(s.out, '0')
		} else {
			s.out = append(s.out, lit...)
		}
		return nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return s.failAt(start, "number "+truncate(lit, 40)+" overflows float64")
	}
	if a := math.Abs(f); a > MaxSafeInteger && a < 1e21 {
		// JSON.stringify would print this as an integer literal beyond
		// 2^53-1, which is itself rejected: keep the output canonical.
		return s.failAt(start, "number "+truncate(lit, 40)+" is an integer beyond 2^53-1 in canonical form (readers disagree: rounded vs exact)")
	}
	s.out = AppendNumber(s.out, f)
	return nil
}

// truncate shortens s for a message (textcut.Truncate).
func truncate(s string, n int) string { return textcut.Truncate(s, n) }

// AppendNumber appends f as a canonical JSON number: formatted by the
// ECMAScript Number::toString algorithm, as JSON.stringify writes it and as
// [Canonicalize] writes every number ("100", "1.5", "1e+21", "1e-7", -0 as
// "0"). NaN and the infinities, which JSON cannot represent, are written as
// null (again as JSON.stringify does).
func AppendNumber(dst []byte, f float64) []byte {
	if f == 0 {
		return append(dst, '0')
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(dst, "null"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d[.ddd]e±XX
	mant, exp, _ := strings.Cut(string(e), "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp)
	k := len(digits)
	n := x + 1
	switch {
	case k <= n && n <= 21:
		dst = append(dst, digits...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, digits[:n]...)
		dst = append(dst, '.')
		dst = append(dst, digits[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, digits...)
	default:
		dst = append(dst, digits[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst
}

// AppendString appends s to dst as a canonical JSON string: only '"', '\\'
// and control characters are escaped (\b \f \n \r \t, else \u00XX), no
// HTML escaping; invalid UTF-8 bytes are written as U+FFFD. Encoders that
// build JSON by hand (the Code Mode dispatch log) use it so that what they
// write is what Canonicalize would.
func AppendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < 0x80 {
			i++
			continue
		}
		if c >= 0x80 {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = append(dst, s[start:i]...)
				dst = append(dst, "\ufffd"...)
				i += size
				start = i
				continue
			}
			i += size
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = AppendEscape(dst, c)
		i++
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// escapePointer escapes one JSON pointer reference token (RFC 6901).
func escapePointer(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// AppendEscape appends the JSON escape of the ASCII byte c, which must be one
// a JSON string cannot hold as itself ('"', '\\' or a control character):
// the short form where JSON has one, else \u00XX in lower-case hex.
func AppendEscape(dst []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	default:
		const hex = "0123456789abcdef"
		return append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
	}
}
