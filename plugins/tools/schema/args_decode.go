package schema

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"
)

// This file decodes canonical arguments (canonjson's output) into a Go
// value in one pass, as json.Unmarshal would, for the kinds it knows
// (structs matched by exact field names, strings without escapes, bools,
// numbers, pointers, slices, maps with string keys); any other part is
// handed to json.Unmarshal on its own bytes, and anything unexpected
// declines, so that the caller decodes the whole value with json.Unmarshal
// instead. It never reports an error itself.

// argDecoder decodes the value at d.b[i] into v (settable, holding its
// type's zero value) and returns the offset after it, or -1 to decline.
type argDecoder func(d *decState, i int, v reflect.Value) int

type decState struct {
	b []byte
	// s is one copy of b, made at the first string the value needs: every
	// decoded string (values and map keys) is a slice of it, so a value's
	// strings cost one allocation together. They keep the whole copy
	// alive as long as any of them lives (the arguments are at most
	// canonjson's size limit).
	s string
}

// str returns b[i:j] as a string, a slice of the shared copy.
func (d *decState) str(i, j int) string {
	if d.s == "" {
		d.s = string(d.b)
	}
	return d.s[i:j]
}

// decoders builds the decoders of the types reachable from one root.
type decoders struct {
	built map[reflect.Type]*argDecoder
}

func (b *decoders) of(t reflect.Type) *argDecoder {
	if f, ok := b.built[t]; ok {
		return f
	}
	f := new(argDecoder)
	b.built[t] = f
	*f = b.build(t)
	return f
}

// viaUnmarshal decodes the value at b[i] with json.Unmarshal, into v. It
// hands json.Unmarshal a copy: the value may reach a type's own
// UnmarshalJSON or UnmarshalText, which may write into what it is given,
// and b may be the memory of an immutable string (an execution's
// arguments, which observers and the decoded strings share).
func viaUnmarshal(d *decState, i int, v reflect.Value) int {
	end := valueEnd(d.b, i)
	if end < 0 || !v.CanAddr() {
		return -1
	}
	if json.Unmarshal(bytes.Clone(d.b[i:end]), v.Addr().Interface()) != nil {
		return -1
	}
	return end
}

// plainString returns the string token at b[i] when it has no escapes
// and no control characters and is valid UTF-8 (json.Unmarshal would
// replace invalid bytes): a string canonjson writes as it is, whose bytes
// are its value.
func plainString(b []byte, i int) (s []byte, end int) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1
	}
	ascii := true
	for j := i + 1; j < len(b); j++ {
		c := b[j]
		if !strSpecial[c] {
			continue
		}
		switch {
		case c == '"':
			s = b[i+1 : j]
			if !ascii && !utf8.Valid(s) {
				return nil, -1
			}
			return s, j + 1
		case c >= utf8.RuneSelf:
			ascii = false
		default: // '\\' or a control character
			return nil, -1
		}
	}
	return nil, -1
}

// strSpecial marks the bytes plainString looks at: '"', '\\', control
// characters and the bytes of non-ASCII UTF-8.
var strSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

func isNull(b []byte, i int) bool { return bytes.HasPrefix(b[i:], []byte("null")) }

func (b *decoders) build(t reflect.Type) argDecoder {
	if sh, _ := shapeOf(t); sh == shapeJSON || sh == shapeText || sh == shapeAny {
		return viaUnmarshal
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(d *decState, i int, v reflect.Value) int {
			switch {
			case bytes.HasPrefix(d.b[i:], []byte("true")):
				v.SetBool(true)
				return i + 4
			case bytes.HasPrefix(d.b[i:], []byte("false")):
				return i + 5
			}
			return viaUnmarshal(d, i, v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(d *decState, i int, v reflect.Value) int {
			end := scalarEnd(d.b, i)
			if end < 0 || d.b[i] == '"' || d.b[i] == 'n' {
				return viaUnmarshal(d, i, v)
			}
			n, err := strconv.ParseInt(string(d.b[i:end]), 10, 64)
			if err != nil || v.OverflowInt(n) {
				return -1
			}
			v.SetInt(n)
			return end
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(d *decState, i int, v reflect.Value) int {
			end := scalarEnd(d.b, i)
			if end < 0 || d.b[i] == '"' || d.b[i] == 'n' {
				return viaUnmarshal(d, i, v)
			}
			n, err := strconv.ParseUint(string(d.b[i:end]), 10, 64)
			if err != nil || v.OverflowUint(n) {
				return -1
			}
			v.SetUint(n)
			return end
		}
	case reflect.Float32, reflect.Float64:
		return func(d *decState, i int, v reflect.Value) int {
			end := scalarEnd(d.b, i)
			if end < 0 || d.b[i] == '"' || d.b[i] == 'n' {
				return viaUnmarshal(d, i, v)
			}
			f, err := strconv.ParseFloat(string(d.b[i:end]), t.Bits())
			if err != nil || v.OverflowFloat(f) {
				return -1
			}
			v.SetFloat(f)
			return end
		}
	case reflect.String:
		return func(d *decState, i int, v reflect.Value) int {
			if _, end := plainString(d.b, i); end >= 0 {
				v.SetString(d.str(i+1, end-1))
				return end
			}
			return viaUnmarshal(d, i, v)
		}
	case reflect.Pointer:
		elem := b.of(t.Elem())
		return func(d *decState, i int, v reflect.Value) int {
			if isNull(d.b, i) {
				v.SetZero()
				return i + 4
			}
			p := reflect.New(t.Elem())
			end := (*elem)(d, i, p.Elem())
			if end >= 0 {
				v.Set(p)
			}
			return end
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return viaUnmarshal // base64, or an array of numbers for named bytes
		}
		elem := b.of(t.Elem())
		return func(d *decState, i int, v reflect.Value) int {
			if d.b[i] != '[' {
				return viaUnmarshal(d, i, v)
			}
			s := reflect.MakeSlice(t, 0, 0)
			j := i + 1
			if j < len(d.b) && d.b[j] == ']' {
				v.Set(s)
				return j + 1
			}
			for n := 0; ; n++ {
				s = reflect.Append(s, reflect.Zero(t.Elem()))
				if j = (*elem)(d, j, s.Index(n)); j < 0 || j >= len(d.b) {
					return -1
				}
				if d.b[j] == ',' {
					j++
					continue
				}
				if d.b[j] != ']' {
					return -1
				}
				v.Set(s)
				return j + 1
			}
		}
	case reflect.Map:
		if keyRuleOf(t.Key()) != keyString {
			return viaUnmarshal
		}
		elem := b.of(t.Elem())
		kt := t.Key()
		return func(d *decState, i int, v reflect.Value) int {
			if d.b[i] != '{' {
				return viaUnmarshal(d, i, v)
			}
			m := reflect.MakeMap(t)
			j := i + 1
			if j < len(d.b) && d.b[j] == '}' {
				v.Set(m)
				return j + 1
			}
			for {
				k, end := plainString(d.b, j)
				if end < 0 || end >= len(d.b) || d.b[end] != ':' {
					return -1
				}
				ev := reflect.New(t.Elem()).Elem()
				if j = (*elem)(d, end+1, ev); j < 0 || j >= len(d.b) {
					return -1
				}
				m.SetMapIndex(reflect.ValueOf(d.str(end-1-len(k), end-1)).Convert(kt), ev)
				if d.b[j] == ',' {
					j++
					continue
				}
				if d.b[j] != '}' {
					return -1
				}
				v.Set(m)
				return j + 1
			}
		}
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 {
			return viaUnmarshal
		}
		type field struct {
			index []int
			dec   *argDecoder
		}
		byName := make(map[string]field, len(fields))
		for _, f := range fields {
			if f.quoted || behindPointer(t, f.index) {
				return viaUnmarshal
			}
			byName[f.name] = field{f.index, b.of(f.sf.Type)}
		}
		return func(d *decState, i int, v reflect.Value) int {
			if d.b[i] != '{' {
				return viaUnmarshal(d, i, v)
			}
			j := i + 1
			if j < len(d.b) && d.b[j] == '}' {
				return j + 1
			}
			for {
				k, end := plainString(d.b, j)
				if end < 0 || end >= len(d.b) || d.b[end] != ':' {
					return -1
				}
				f, ok := byName[string(k)]
				if !ok {
					return -1 // encoding/json would match it case-insensitively, or skip it
				}
				fv := v.FieldByIndex(f.index)
				if !fv.CanSet() {
					return -1
				}
				if j = (*f.dec)(d, end+1, fv); j < 0 || j >= len(d.b) {
					return -1
				}
				if d.b[j] == ',' {
					j++
					continue
				}
				if d.b[j] != '}' {
					return -1
				}
				return j + 1
			}
		}
	}
	return viaUnmarshal
}

// DecodeCanonical is [Target.Decode] for canonical arguments that
// passed validation: it decodes them in one pass where it can (see
// above) and otherwise with Decode, so the value and the violations are
// always Decode's. v must point to a zero value of the Target's type.
func (t *Target) DecodeCanonical(args []byte, v any) []Violation {
	rv := reflect.ValueOf(v)
	if t.dec != nil && rv.IsValid() && rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Type().Elem() == t.typ && len(args) > 0 {
		if end := func() (end int) {
			defer func() {
				if recover() != nil {
					end = -1
				}
			}()
			return (*t.dec)(&decState{b: args}, 0, rv.Elem())
		}(); end == len(args) {
			return nil
		}
		rv.Elem().SetZero()
	}
	return t.Decode(args, v)
}
