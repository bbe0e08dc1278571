package schema

import (
	"bytes"
	"reflect"
	"sync"
	"unsafe"
)

var fusedStates = sync.Pool{New: func() any { return new(fusedState) }}

// This file validates and decodes canonical arguments in one pass: a plan
// per (Go type, schema node) pair walks the bytes once, checking each
// value against its schema node as canonWalker does and decoding it as
// the one-pass decoder (args_decode.go) does. It only recognizes valid
// arguments: at the first violation, or anything either half would not
// handle, it declines, and [ArgsCheck.Decode] starts again on the
// separate paths, whose results (violations, paths, messages, values) are
// the reference. Plans are built once per ArgsCheck.

// fusedPlan checks the value at f.d.b[i] against its schema node and
// decodes it into v (settable, holding its type's zero value); it returns
// the offset after the value, or -1 to decline.
type fusedPlan func(f *fusedState, i int, v reflect.Value) int

// fusedState is one call's state: the bytes, for both halves.
type fusedState struct {
	w canonWalker
	d decState
	// maps holds the scratch key and value of the map plans this pooled
	// state ran, zero between entries' use; busy while a plan uses one
	// (a recursive type re-enters its plan).
	maps []mapScratch
}

// mapScratch is one map plan's scratch key and value (see fusedState).
type mapScratch struct {
	of     *mapPlanID
	kv, ev reflect.Value
	busy   bool
}

// mapPlanID names one map plan (not of size zero: each is distinct).
type mapPlanID struct{ _ byte }

type fusedKey struct {
	t reflect.Type
	n *node
}

type fusedBuilder struct {
	dec   *decoders
	built map[fusedKey]*fusedPlan
}

func (b *fusedBuilder) of(t reflect.Type, n *node) *fusedPlan {
	k := fusedKey{t, n}
	if p, ok := b.built[k]; ok {
		return p
	}
	p := new(fusedPlan)
	b.built[k] = p
	*p = b.build(t, n)
	return p
}

// plain decodes without a schema (a value no schema constrains).
func plain(dec *argDecoder) fusedPlan {
	return func(f *fusedState, i int, v reflect.Value) int { return (*dec)(&f.d, i, v) }
}

// leaf validates the value at i against n (the whole value, one scan) and
// then decodes it.
func leaf(dec *argDecoder, n *node) fusedPlan {
	return func(f *fusedState, i int, v reflect.Value) int {
		end := f.w.value(n, i)
		if end < 0 || len(f.w.vs) > 0 {
			return -1
		}
		if (*dec)(&f.d, i, v) != end {
			return -1
		}
		return end
	}
}

// shortInt reads the integer token at b[i] when it is 1 to 15 digits
// (after a '-' when signed) ending where scalarEnd ends a token: its
// value, as strconv.ParseInt reads it, and the offset after it; else
// end -1.
func shortInt(b []byte, i int, signed bool) (n int64, end int) {
	j := i
	neg := false
	if j < len(b) && b[j] == '-' {
		if !signed {
			return 0, -1
		}
		neg = true
		j++
	}
	start := j
	for j < len(b) && '0' <= b[j] && b[j] <= '9' {
		if j-start == 15 {
			return 0, -1
		}
		n = n*10 + int64(b[j]-'0')
		j++
	}
	if j == start {
		return 0, -1
	}
	if j < len(b) {
		switch b[j] {
		case ',', ']', '}', ':', ' ', '\t', '\n', '\r':
		default:
			return 0, -1 // a fraction, an exponent, or not a number
		}
	}
	if neg {
		n = -n
	}
	return n, j
}

// containerOK reports whether n lets a container of kind k through
// without a violation of its own (type, enum, const, false).
func containerOK(n *node, k uint8) bool {
	return !n.never && (n.types == 0 || n.types&k != 0) && n.enum == nil && n.constv == nil
}

// requiredBit returns the bit of key among n's required names (0: not
// required); n has at most 64.
func requiredBit(n *node, key []byte) uint64 {
	for r, name := range n.required {
		if name == string(key) {
			return 1 << r
		}
	}
	return 0
}

func allRequired(n *node) uint64 {
	if len(n.required) == 64 {
		return ^uint64(0)
	}
	return 1<<len(n.required) - 1
}

func (b *fusedBuilder) build(t reflect.Type, n *node) fusedPlan {
	dec := b.dec.of(t)
	if n == nil {
		return plain(dec)
	}
	lf := leaf(dec, n)
	if sh, _ := shapeOf(t); sh == shapeJSON || sh == shapeText || sh == shapeAny {
		return lf
	}
	// A scalar whose schema says no more than its type: the token's first
	// byte is the whole check, and the decoder reads the token once.
	unconstrained := !n.never && n.enum == nil && n.constv == nil && n.min == nil && n.max == nil && !n.base64
	switch t.Kind() {
	case reflect.String:
		if !unconstrained || n.types != 0 && n.types&kString == 0 {
			return lf
		}
		return func(f *fusedState, i int, v reflect.Value) int {
			if _, end := plainString(f.d.b, i); end >= 0 {
				v.SetString(f.d.str(i+1, end-1))
				return end
			}
			return lf(f, i, v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !unconstrained || n.types != 0 && n.types&(kNumber|kInteger) == 0 {
			return lf
		}
		// The decoder parses integers only: what it accepts is an
		// integer, which both number and integer allow. A token of at
		// most 15 digits (and a sign for a signed kind) is read here, as
		// the decoder would read it.
		signed := t.Kind() <= reflect.Int64
		return func(f *fusedState, i int, v reflect.Value) int {
			b := f.d.b
			if i < len(b) && (b[i] == '-' || '0' <= b[i] && b[i] <= '9') {
				if n, end := shortInt(b, i, signed); end >= 0 {
					if signed {
						if v.OverflowInt(n) {
							return -1
						}
						v.SetInt(n)
					} else {
						if v.OverflowUint(uint64(n)) {
							return -1
						}
						v.SetUint(uint64(n))
					}
					return end
				}
				return (*dec)(&f.d, i, v)
			}
			return lf(f, i, v)
		}
	case reflect.Bool:
		if !unconstrained || n.types != 0 && n.types&kBoolean == 0 {
			return lf
		}
		return func(f *fusedState, i int, v reflect.Value) int {
			if i < len(f.d.b) && (f.d.b[i] == 't' || f.d.b[i] == 'f') {
				return (*dec)(&f.d, i, v)
			}
			return lf(f, i, v)
		}
	case reflect.Pointer:
		et := t.Elem()
		elem := b.of(et, n)
		return func(f *fusedState, i int, v reflect.Value) int {
			if i >= len(f.d.b) {
				return -1
			}
			if f.d.b[i] == 'n' {
				return lf(f, i, v)
			}
			p := reflect.New(et)
			end := (*elem)(f, i, p.Elem())
			if end >= 0 {
				v.Set(p)
			}
			return end
		}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return lf
		}
		elem := b.of(t.Elem(), n.items)
		ok := containerOK(n, kArray)
		return func(f *fusedState, i int, v reflect.Value) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '[' {
				return lf(f, i, v)
			}
			if !ok {
				return -1
			}
			j := i + 1
			count := 0
			if j < len(bs) && bs[j] == ']' {
				v.Set(reflect.MakeSlice(t, 0, 0))
				j++
			} else {
				if v.Cap() != 0 {
					v.SetZero() // the elements are then all fresh zero values
				}
				for {
					if count == v.Cap() {
						v.Grow(max(4, count)) // as encoding/json grows a slice
					}
					v.SetLen(count + 1)
					ev := v.Index(count) // zero: beyond the length so far
					if j = (*elem)(f, j, ev); j < 0 || j >= len(bs) {
						return -1
					}
					count++
					if bs[j] == ',' {
						j++
						continue
					}
					if bs[j] != ']' {
						return -1
					}
					j++
					break
				}
			}
			if n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
				return -1
			}
			return j
		}
	case reflect.Map:
		if keyRuleOf(t.Key()) != keyString || len(n.required) > 64 {
			return lf
		}
		kt, et := t.Key(), t.Elem()
		props := make(map[string]*fusedPlan, len(n.props))
		for name, p := range n.props {
			props[name] = b.of(et, p)
		}
		var other *fusedPlan // a key no property names
		switch {
		case n.addl != nil:
			other = b.of(et, n.addl)
		case !n.closed:
			other = b.of(et, nil)
		}
		ok := containerOK(n, kObject)
		all := allRequired(n)
		// The key and the value of each entry are decoded into scratch
		// values that SetMapIndex copies from, kept in the pooled
		// fusedState for the next call (a sync.Pool of their own cost
		// more).
		id := new(mapPlanID) // names this plan's scratch in a fusedState
		return func(f *fusedState, i int, v reflect.Value) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '{' {
				return lf(f, i, v)
			}
			if !ok {
				return -1
			}
			m := reflect.MakeMap(t)
			x := -1
			for y := range f.maps {
				if f.maps[y].of == id && !f.maps[y].busy {
					x = y
					break
				}
			}
			if x < 0 {
				x = len(f.maps)
				f.maps = append(f.maps, mapScratch{of: id, kv: reflect.New(kt).Elem(), ev: reflect.New(et).Elem()})
			}
			f.maps[x].busy = true
			kv, ev := f.maps[x].kv, f.maps[x].ev
			defer func() {
				kv.SetZero() // keeps no decoded value alive
				ev.SetZero()
				f.maps[x].busy = false
			}()
			var seen uint64
			j := i + 1
			if j < len(bs) && bs[j] == '}' {
				j++
			} else {
				for {
					k, end := plainString(bs, j)
					if end < 0 || end >= len(bs) || bs[end] != ':' {
						return -1
					}
					p := props[string(k)]
					if p == nil {
						if p = other; p == nil {
							return -1 // additional property is not allowed
						}
					}
					seen |= requiredBit(n, k)
					ev.SetZero()
					if j = (*p)(f, end+1, ev); j < 0 || j >= len(bs) {
						return -1
					}
					kv.SetString(f.d.str(end-1-len(k), end-1))
					m.SetMapIndex(kv, ev)
					if bs[j] == ',' {
						j++
						continue
					}
					if bs[j] != '}' {
						return -1
					}
					j++
					break
				}
			}
			if seen != all {
				return -1
			}
			v.Set(m)
			return j
		}
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 || len(n.required) > 64 {
			return lf
		}
		type field struct {
			index []int
			plan  *fusedPlan // nil: the key is a violation
			bit   uint64     // its bit among n's required names
		}
		byName := make(map[string]field, len(fields))
		var names []string // with few fields, byName in order: a scan beats hashing
		var list []field
		for _, fd := range fields {
			if fd.quoted || behindPointer(t, fd.index) {
				return lf
			}
			sub := n.props[fd.name]
			if sub == nil {
				sub = n.addl
			}
			var p *fusedPlan
			if sub != nil || !n.closed {
				p = b.of(fd.sf.Type, sub)
			}
			fl := field{fd.index, p, requiredBit(n, []byte(fd.name))}
			byName[fd.name] = fl
			names = append(names, fd.name)
			list = append(list, fl)
		}
		if len(names) > 8 {
			names, list = nil, nil
		}
		ok := containerOK(n, kObject)
		all := allRequired(n)
		return func(f *fusedState, i int, v reflect.Value) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '{' {
				return lf(f, i, v)
			}
			if !ok {
				return -1
			}
			var seen uint64
			j := i + 1
			if j < len(bs) && bs[j] == '}' {
				j++
			} else {
				for {
					k, end := plainString(bs, j)
					if end < 0 || end >= len(bs) || bs[end] != ':' {
						return -1
					}
					var fd field
					found := false
					if names != nil {
						for x, name := range names {
							if name == string(k) {
								fd, found = list[x], true
								break
							}
						}
					} else {
						fd, found = byName[string(k)]
					}
					if !found || fd.plan == nil {
						return -1 // not a field (the decoder declines), or not allowed
					}
					seen |= fd.bit
					var fv reflect.Value
					if len(fd.index) == 1 {
						fv = v.Field(fd.index[0])
					} else {
						fv = v.FieldByIndex(fd.index)
					}
					if !fv.CanSet() {
						return -1
					}
					if j = (*fd.plan)(f, end+1, fv); j < 0 || j >= len(bs) {
						return -1
					}
					if bs[j] == ',' {
						j++
						continue
					}
					if bs[j] != '}' {
						return -1
					}
					j++
					break
				}
			}
			if seen != all {
				return -1
			}
			return j
		}
	}
	return lf
}

// Decode validates canonical arguments as [ArgsCheck.Validate] does and,
// when they are valid, decodes them into v as [Target.DecodeCanonical]
// does: the same violations, or the same value. v must point to a zero
// value of the Target's type (without a Target, Decode only validates).
// When the schema covers the Target's key checks (see ArgsCheck), valid
// arguments are checked and decoded in one pass over their bytes.
func (c *ArgsCheck) Decode(args []byte, v any) []Violation {
	return c.DecodeShared(args, "", v)
}

// DecodeShared is [ArgsCheck.Decode] for arguments also held as an
// immutable string, frozen (the same bytes; "" or any other string: none):
// the strings decoded in one pass are slices of frozen instead of a copy of
// args.
func (c *ArgsCheck) DecodeShared(args []byte, frozen string, v any) []Violation {
	if c.fused != nil && len(args) > 0 && args[0] == '{' {
		if rv := reflect.ValueOf(v); rv.IsValid() && rv.Kind() == reflect.Pointer && !rv.IsNil() && rv.Type().Elem() == c.t.typ {
			if len(frozen) != len(args) || unsafe.StringData(frozen) != unsafe.SliceData(args) && frozen != string(args) {
				frozen = "" // not the same bytes (the same memory: surely)
			}
			if c.fusedDecode(args, frozen, rv.Elem()) {
				return nil
			}
			rv.Elem().SetZero()
		}
	}
	if vs := c.Validate(args); len(vs) > 0 || c.t == nil {
		return vs
	}
	// A copy: DecodeCanonical may hand the bytes to a type's own
	// UnmarshalJSON, which may write into them, and args may be an
	// immutable string's memory (see viaUnmarshal).
	return c.t.DecodeCanonical(bytes.Clone(args), v)
}

func (c *ArgsCheck) fusedDecode(args []byte, frozen string, v reflect.Value) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f := fusedStates.Get().(*fusedState)
	// A pooled state is zero but for its maps' scratch (zero values):
	// only the fields a call sets are set, and cleared after (all of w
	// when a scan used its scratch).
	f.w.b, f.d.b, f.d.s = args, args, frozen
	ok = (*c.fused)(f, 0, v) == len(args)
	if f.w.vs != nil || f.w.segs != nil || f.w.strict || f.w.notCanon || f.w.depth != 0 {
		f.w = canonWalker{}
	}
	f.w.b, f.d.b, f.d.s = nil, nil, "" // keeps no argument bytes or strings
	if len(f.maps) > 8 {
		f.maps = nil // a few plans' scratch (other tools': a fresh one)
	}
	fusedStates.Put(f)
	return ok
}
