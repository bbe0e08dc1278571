package goja

import (
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// maxFastJSONDepth bounds the recursion of decodeJSON; deeper documents go to JSON.parse.
const maxFastJSONDepth = 256

// decodeJSON builds the JS value of data directly, without JSON.parse's token stream, for the JSON it
// fully understands: the result is then the value JSON.parse would return (same property order,
// attributes, numbers and strings). ok is false for anything else (invalid JSON, a string with a
// lone-surrogate or invalid UTF-8 that JSON.parse would replace, a number out of float64 range, very
// deep nesting): the caller then runs the captured JSON.parse, whose verdict stands. It runs on the
// run goroutine and never calls into JavaScript.
func decodeJSON(vm *goja.Runtime, data []byte) (v goja.Value, ok bool) {
	d := jsonDecoder{vm: vm, data: data}
	d.space()
	v, ok = d.value(0)
	if !ok {
		return nil, false
	}
	d.space()
	if d.pos != len(d.data) {
		return nil, false
	}
	return v, true
}

type jsonDecoder struct {
	vm   *goja.Runtime
	data []byte
	pos  int
	buf  []byte
	// stack holds the items of the arrays being read, innermost last.
	stack []any
	// keys interns object keys: most documents repeat a few keys many times.
	keys [keyCacheSize]string
	// proto is Object.prototype, set once an object is read.
	proto *goja.Object
}

// keyCacheSize is the number of slots of jsonDecoder.keys (a power of 2).
const keyCacheSize = 64

func (d *jsonDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

func (d *jsonDecoder) literal(word string, v goja.Value) (goja.Value, bool) {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return nil, false
	}
	d.pos += len(word)
	return v, true
}

func (d *jsonDecoder) value(depth int) (goja.Value, bool) {
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.stringValue()
	case c == 'n':
		return d.literal("null", goja.Null())
	case c == 't':
		return d.literal("true", d.vm.ToValue(true))
	case c == 'f':
		return d.literal("false", d.vm.ToValue(false))
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	}
	return nil, false
}

func (d *jsonDecoder) object(depth int) (goja.Value, bool) {
	if depth > maxFastJSONDepth {
		return nil, false
	}
	d.pos++ // '{'
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return d.vm.NewObject(), true
	}
	if d.proto == nil {
		d.proto = d.vm.NewObject().Prototype()
	}
	// Built without a prototype, so that Set creates own data properties as CreateDataProperty
	// (what JSON.parse does) would: with no prototype chain, no setter (such as Object.prototype's
	// __proto__ or one a program defined) runs and a duplicate key overwrites the first one in place.
	// Set costs less than DefineDataProperty, which allocates a descriptor per property.
	o := d.vm.CreateObject(nil)
	for {
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		key, ok := d.key()
		if !ok {
			return nil, false
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		d.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		if o.Set(key, v) != nil {
			return nil, false
		}
		d.space()
		if d.pos >= len(d.data) {
			return nil, false
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.space()
		case '}':
			d.pos++
			if o.SetPrototype(d.proto) != nil {
				return nil, false
			}
			return o, true
		default:
			return nil, false
		}
	}
}

// key reads an object key at d.pos (which is '"'), interned in d.keys when it has no escapes.
func (d *jsonDecoder) key() (string, bool) {
	start := d.pos + 1
	h := uint32(2166136261)
	for i := start; i < len(d.data); i++ {
		c := d.data[i]
		if c == '"' {
			raw := d.data[start:i]
			slot := &d.keys[h&(keyCacheSize-1)]
			if *slot != string(raw) {
				s, ok := d.string()
				if !ok {
					return "", false
				}
				*slot = s
				return s, true
			}
			d.pos = i + 1
			return *slot, true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		h = (h ^ uint32(c)) * 16777619
	}
	return d.string()
}

func (d *jsonDecoder) array(depth int) (goja.Value, bool) {
	if depth > maxFastJSONDepth {
		return nil, false
	}
	d.pos++ // '['
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return d.vm.NewArray(), true
	}
	mark := len(d.stack)
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		d.stack = append(d.stack, v)
		d.space()
		if d.pos >= len(d.data) {
			return nil, false
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
			d.space()
		case ']':
			d.pos++
			a := d.vm.NewArray(d.stack[mark:]...)
			clear(d.stack[mark:])
			d.stack = d.stack[:mark]
			return a, true
		default:
			return nil, false
		}
	}
}

// maxShortString is the longest string (in bytes) that stringValue copies through goja.StringFromUTF16.
const maxShortString = 64

// stringValue reads a JSON string at d.pos (which is '"') as a goja value. A short ASCII string
// without escapes goes through goja.StringFromUTF16, which makes the same value as JSON.parse (an
// ASCII string) with one allocation fewer than vm.ToValue(string).
func (d *jsonDecoder) stringValue() (goja.Value, bool) {
	start := d.pos + 1
	end := min(len(d.data), start+maxShortString+1)
	for i := start; i < end; i++ {
		c := d.data[i]
		if c == '"' {
			// On the stack: StringFromUTF16 copies the units.
			var units [maxShortString]uint16
			u := units[:0]
			for _, c := range d.data[start:i] {
				u = append(u, uint16(c))
			}
			d.pos = i + 1
			return goja.StringFromUTF16(u), true
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
	}
	s, ok := d.string()
	if !ok {
		return nil, false
	}
	return d.vm.ToValue(s), true
}

// string reads a JSON string at d.pos (which is '"'). It refuses control characters, invalid UTF-8
// and surrogate escapes, which JSON.parse rejects or replaces.
func (d *jsonDecoder) string() (string, bool) {
	start := d.pos + 1
	i := start
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			s := string(d.data[start:i])
			d.pos = i + 1
			return s, true
		case c == '\\':
			return d.escapedString(start, i)
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			i += n
		}
	}
	return "", false
}

// escapedString continues string from i, the first backslash, unescaping into d.buf.
func (d *jsonDecoder) escapedString(start, i int) (string, bool) {
	b := append(d.buf[:0], d.data[start:i]...)
	defer func() { d.buf = b[:0] }()
	for i < len(d.data) {
		c := d.data[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return string(b), true
		case c == '\\':
			if i+1 >= len(d.data) {
				return "", false
			}
			e := d.data[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				if i+4 > len(d.data) {
					return "", false
				}
				r, err := strconv.ParseUint(string(d.data[i:i+4]), 16, 16)
				if err != nil || (r >= 0xD800 && r <= 0xDFFF) {
					return "", false // surrogates (pairs or lone) go to JSON.parse
				}
				b = utf8.AppendRune(b, rune(r))
				i += 4
			default:
				return "", false
			}
		case c < 0x20:
			return "", false
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRune(d.data[i:])
			if r == utf8.RuneError && n <= 1 {
				return "", false
			}
			b = append(b, d.data[i:i+n]...)
			i += n
		}
	}
	return "", false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, converted as
// encoding/json (and so goja's JSON.parse) does, with strconv.ParseFloat.
func (d *jsonDecoder) number() (goja.Value, bool) {
	start, i := d.pos, d.pos
	digits := func() bool {
		j := i
		for i < len(d.data) && d.data[i] >= '0' && d.data[i] <= '9' {
			i++
		}
		return i > j
	}
	if d.data[i] == '-' {
		i++
	}
	if i < len(d.data) && d.data[i] == '0' {
		i++
	} else if !digits() {
		return nil, false
	}
	if i < len(d.data) && d.data[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(d.data) && (d.data[i] == 'e' || d.data[i] == 'E') {
		i++
		if i < len(d.data) && (d.data[i] == '+' || d.data[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	lit := d.data[start:i]
	if n, ok := smallInt(lit); ok {
		d.pos = i
		return d.vm.ToValue(n), true // the Value of float64(n), without boxing a float64 first
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil {
		return nil, false
	}
	d.pos = i
	return d.vm.ToValue(f), true
}

// smallInt converts a plain non-negative decimal integer of at most 15 digits (exact in a float64).
func smallInt(lit []byte) (int64, bool) {
	if len(lit) == 0 || len(lit) > 15 {
		return 0, false
	}
	var n int64
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
