package schema

import (
	"bytes"
	"reflect"
	"sync"
	"unsafe"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
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
// decodes it into the value of the plan's Go type t at p; it returns the
// offset after the value, or -1 to decline.
//
// Soundness of p: it always points to memory allocated as a value of t
// (the caller's variable, a field of a struct at its offset, an element
// of a slice of t, a value reflect.New made), holding t's zero value and
// not shared with any other goroutine while the plan runs. A plan writes
// through p only values of the types that memory holds there: a string
// where t is of kind String, an integer of t's size where t is an integer
// kind, a bool, the pointer reflect.New(t.Elem()) returned where t is a
// pointer; structs, slices and maps are written field by field, element
// by element or through reflect (reflect.NewAt(t, p), which is what
// reflect itself would write). Pointer-typed words are stored as
// unsafe.Pointer, so the compiler's write barriers apply. A plan never
// keeps p after it returns. The fuzz tests in args_internal_test.go
// compare every decoded value with encoding/json's.
type fusedPlan func(f *fusedState, i int, p unsafe.Pointer) int

// fusedState is one call's state: the bytes, for both halves.
type fusedState struct {
	w canonWalker
	d decState
	// strict: the pass also makes sure that the bytes are canonical (see
	// ArgsCheck.DecodeIfCanonical), declining any it does not know to be;
	// depth counts the arrays and objects open around the value (as
	// canonjson counts them, the root object 1).
	strict bool
	depth  int
	// scratch holds the scratch values of the map and slice plans this
	// pooled state ran, zero between uses; busy while a plan uses one (a
	// recursive type re-enters its plan). A plan that panics leaves the
	// state out of the pool (see fusedDecode).
	scratch []scratch
}

// scratch is one map or slice plan's scratch (see fusedState): a map
// plan's key kv and value ev, or a slice plan's elements ev and output kv
// (slices of the plan's type); evp and kvp are the addresses of ev's and
// kv's (first) values. A slice plan's ev keeps its array from use to use,
// its elements zero and its length 0 between uses.
type scratch struct {
	of       *planID
	kv, ev   reflect.Value
	evp, kvp unsafe.Pointer
	busy     bool
}

// planID names one map or slice plan (not of size zero: each is
// distinct).
type planID struct{ _ byte }

// take returns the index of a scratch of the plan id that is not busy,
// made by mk when there is none, and marks it busy.
func (f *fusedState) take(id *planID, mk func() scratch) int {
	for x := range f.scratch {
		if f.scratch[x].of == id && !f.scratch[x].busy {
			f.scratch[x].busy = true
			return x
		}
	}
	sc := mk()
	sc.of, sc.busy = id, true
	f.scratch = append(f.scratch, sc)
	return len(f.scratch) - 1
}

// sliceHeader is the memory of a slice value (as reflect.SliceHeader
// describes it, with a pointer the GC sees).
type sliceHeader struct {
	data     unsafe.Pointer
	len, cap int
}

// maxScratchBytes bounds the array a slice plan's scratch keeps for the
// next call; capsBytes the arrays whose capacities jsonCaps measures.
const (
	maxScratchBytes = 256 << 10
	capsBytes       = 16 << 10
)

// jsonCaps returns the capacities a slice of type t takes as encoding/json
// grows it from nil (Grow(1) each time its length reaches its capacity),
// in increasing order, up to 1024 elements and capsBytes (at least one). Each is checked to be the capacity that Grow of that many gives a
// nil slice of t, so that one Grow makes the array encoding/json's steps
// end with (the runtime's growth depends only on the capacity, the length
// asked for and the element size). Nil for elements of size zero, or when
// a check fails: the plan then takes encoding/json's steps.
func jsonCaps(t reflect.Type) []int {
	size := t.Elem().Size()
	if size == 0 {
		return nil
	}
	v := reflect.New(t).Elem()
	var caps []int
	for len(caps) == 0 || v.Cap() < 1024 && uintptr(v.Cap())*size < capsBytes {
		v.SetLen(v.Cap())
		v.Grow(1)
		w := reflect.New(t).Elem()
		if w.Grow(v.Cap()); w.Cap() != v.Cap() {
			return nil
		}
		caps = append(caps, v.Cap())
	}
	return caps
}

// capFor returns the first of caps that holds n elements, or 0.
func capFor(caps []int, n int) int {
	for _, c := range caps {
		if c >= n {
			return c
		}
	}
	return 0
}

// ownCodeInPlace reports whether decoding a value of t may hand code of
// its own (a type's UnmarshalJSON or UnmarshalText) a pointer into the
// value's own memory: t has such a method, or holds a type that has
// (a field, an array's element), not behind a pointer, slice or map,
// whose plans decode into memory of their own.
func ownCodeInPlace(t reflect.Type, seen map[reflect.Type]bool) bool {
	if t.Kind() == reflect.Pointer || seen[t] {
		return false
	}
	seen[t] = true
	if sh, _ := shapeOf(t); sh == shapeJSON || sh == shapeText {
		return true
	}
	switch t.Kind() {
	case reflect.Array:
		return ownCodeInPlace(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if ownCodeInPlace(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// maxStrictKeys is the most keys of one map a strict pass compares for
// duplicates (canonjson.IsCanonical keeps 32 across open objects).
const maxStrictKeys = 16

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

// plain decodes without a schema (a value no schema constrains); a strict
// pass first makes sure the value is canonical.
func plain(dec *argDecoder, t reflect.Type) fusedPlan {
	return func(f *fusedState, i int, p unsafe.Pointer) int {
		if f.strict {
			f.w.depth = f.depth
			if end := f.w.value(anyNode, i); end < 0 || len(f.w.vs) > 0 || f.w.notCanon {
				return -1
			}
		}
		return (*dec)(&f.d, i, reflect.NewAt(t, p).Elem())
	}
}

// leaf validates the value at i against n (the whole value, one scan) and
// then decodes it. The walker of a strict pass is strict: it declines
// (notCanon) what it does not know to be canonical, counting the depth
// from the value's.
func leaf(dec *argDecoder, t reflect.Type, n *node) fusedPlan {
	return func(f *fusedState, i int, p unsafe.Pointer) int {
		if f.strict {
			f.w.depth = f.depth
		}
		end := f.w.value(n, i)
		if end < 0 || len(f.w.vs) > 0 || f.w.notCanon {
			return -1
		}
		if (*dec)(&f.d, i, reflect.NewAt(t, p).Elem()) != end {
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

// canonicalInt reports whether tok, an integer token shortInt read, is
// written as canonjson writes it: no leading zero, no "-0".
func canonicalInt(tok []byte) bool {
	d := tok
	if d[0] == '-' {
		d = d[1:]
	}
	return (d[0] != '0' || len(d) == 1) && string(tok) != "-0"
}

// enter counts the array or object starting at the value being decoded:
// false when a strict pass finds it deeper than canonjson accepts (its
// default limit). Each plan that enters leaves (f.depth--) when it
// accepts its value; a pass that declines resets the count.
func (f *fusedState) enter() bool {
	f.depth++
	return !f.strict || f.depth <= canonjson.DefaultMaxDepth
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
		return plain(dec, t)
	}
	lf := leaf(dec, t, n)
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
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			if _, end := plainString(f.d.b, i); end >= 0 {
				*(*string)(p) = f.d.str(i+1, end-1) // t is of kind String
				return end
			}
			return lf(f, i, p)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !unconstrained || n.types != 0 && n.types&(kNumber|kInteger) == 0 {
			return lf
		}
		// The decoder parses integers only: what it accepts is an
		// integer, which both number and integer allow. A token of at
		// most 15 digits (and a sign for a signed kind) is read here, as
		// the decoder would read it, and written as an integer of t's
		// size (two's complement: the same bytes, signed or not) when it
		// is in t's range (SetInt and SetUint refuse the others: the
		// decoder declines).
		signed := t.Kind() <= reflect.Int64
		size := t.Size()
		lo, hi := int64(0), int64(1)<<(8*size)-1 // unsigned
		if signed {
			lo, hi = -1<<(8*size-1), 1<<(8*size-1)-1
		}
		if size == 8 {
			lo, hi = -1<<63, 1<<63-1 // 15 digits are in range
		}
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			b := f.d.b
			if i < len(b) && (b[i] == '-' || '0' <= b[i] && b[i] <= '9') {
				if n, end := shortInt(b, i, signed); end >= 0 {
					if n < lo || n > hi || f.strict && !canonicalInt(b[i:end]) {
						return -1
					}
					switch size {
					case 1:
						*(*uint8)(p) = uint8(n)
					case 2:
						*(*uint16)(p) = uint16(n)
					case 4:
						*(*uint32)(p) = uint32(n)
					default:
						*(*uint64)(p) = uint64(n)
					}
					return end
				}
				if f.strict {
					return lf(f, i, p) // the walker checks the token
				}
				return (*dec)(&f.d, i, reflect.NewAt(t, p).Elem())
			}
			return lf(f, i, p)
		}
	case reflect.Bool:
		if !unconstrained || n.types != 0 && n.types&kBoolean == 0 {
			return lf
		}
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			switch b := f.d.b[i:]; {
			case bytes.HasPrefix(b, []byte("true")):
				*(*bool)(p) = true // t is of kind Bool
				return i + 4
			case bytes.HasPrefix(b, []byte("false")):
				return i + 5
			}
			return lf(f, i, p)
		}
	case reflect.Pointer:
		et := t.Elem()
		elem := b.of(et, n)
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			if i >= len(f.d.b) {
				return -1
			}
			if f.d.b[i] == 'n' {
				return lf(f, i, p)
			}
			q := reflect.New(et).UnsafePointer() // a zero value of et
			end := (*elem)(f, i, q)
			if end >= 0 {
				*(*unsafe.Pointer)(p) = q // t is a pointer to et
			}
			return end
		}
	case reflect.Slice:
		et := t.Elem()
		if et.Kind() == reflect.Uint8 || ownCodeInPlace(et, map[reflect.Type]bool{}) {
			// Elements whose decoding hands code of their own a pointer
			// into them, which it may keep, are left to the leaf's decoder,
			// which never reuses their memory: the plan below decodes into
			// a scratch array kept for the next call.
			return lf
		}
		elem := b.of(et, n.items)
		size := et.Size()
		ok := containerOK(n, kArray)
		// The elements are decoded into a scratch slice of the pooled
		// fusedState, whose array is kept from call to call, then copied
		// into one new array (in the scratch output variable, then moved
		// to p) of the capacity encoding/json reaches for their count,
		// growing a slice by Grow(1) whenever its length reaches its
		// capacity (caps), and the scratch elements are zeroed.
		empty := reflect.MakeSlice(t, 0, 0).UnsafePointer()
		id := new(planID)
		mk := func() scratch {
			v, o := reflect.New(t), reflect.New(t)
			return scratch{ev: v.Elem(), evp: v.UnsafePointer(), kv: o.Elem(), kvp: o.UnsafePointer()}
		}
		caps := jsonCaps(t)
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '[' {
				return lf(f, i, p)
			}
			if !ok || !f.enter() {
				return -1
			}
			j := i + 1
			if j < len(bs) && bs[j] == ']' {
				if n.minItems > 0 {
					return -1
				}
				// Empty, not nil, as encoding/json decodes [] (with the
				// data pointer of MakeSlice(t, 0, 0), which allocates
				// nothing).
				*(*sliceHeader)(p) = sliceHeader{data: empty} // t is a slice
				f.depth--
				return j + 1
			}
			x := f.take(id, mk)
			// Not a pointer into f.scratch, which the elements' plans may
			// grow (append).
			sv, out := f.scratch[x].ev, f.scratch[x].kv
			h := (*sliceHeader)(f.scratch[x].evp)  // sv's memory: length 0 between uses
			oh := (*sliceHeader)(f.scratch[x].kvp) // out's: nil between uses
			count := 0
			for {
				if count == h.cap {
					sv.Grow(1) // the new elements are zero
				}
				h.len = count + 1 // ≤ h.cap
				if j = (*elem)(f, j, unsafe.Add(h.data, uintptr(count)*size)); j < 0 || j >= len(bs) {
					j = -1
					break
				}
				count++
				if bs[j] == ',' {
					j++
					continue
				}
				if bs[j] != ']' {
					j = -1
					break
				}
				j++
				break
			}
			if n.minItems >= 0 && count < n.minItems || n.maxItems >= 0 && count > n.maxItems {
				j = -1
			}
			if j >= 0 {
				switch c := capFor(caps, count); {
				case size == 0:
					out.Grow(count) // capacity count, as Grow(1) steps give
				case c > 0:
					out.Grow(c) // from nil: capacity c (jsonCaps checked it)
				default:
					// Beyond caps (or none): the steps encoding/json
					// takes, from the last capacity caps lists.
					if len(caps) > 0 {
						out.Grow(caps[len(caps)-1])
					}
					for oh.cap < count {
						oh.len = oh.cap
						out.Grow(1)
					}
				}
				oh.len = count
				reflect.Copy(out, sv)
				*(*sliceHeader)(p) = *oh // t is a slice
				f.depth--
			}
			*oh = sliceHeader{}
			sv.Clear() // keeps no decoded value alive
			h.len = 0
			if uintptr(h.cap)*size > maxScratchBytes {
				*h = sliceHeader{}
			}
			f.scratch[x].busy = false
			return j
		}
	case reflect.Map:
		if keyRuleOf(t.Key()) != keyString || len(n.required) > 64 || ownCodeInPlace(t.Elem(), map[reflect.Type]bool{}) {
			// Values as for a slice's elements (see below): the plan
			// below decodes each into a scratch value kept for the next
			// call.
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
		id := new(planID)
		mk := func() scratch {
			ev := reflect.New(et)
			return scratch{kv: reflect.New(kt).Elem(), ev: ev.Elem(), evp: ev.UnsafePointer()}
		}
		entries := func(f *fusedState, m, kv, ev reflect.Value, evp unsafe.Pointer, j int) int {
			bs := f.d.b
			var seen uint64
			// A strict pass compares each key with those before it (a
			// duplicate is not canonical): the offsets of the tokens of
			// the first keys, up to maxStrictKeys (it declines a map of
			// more).
			var keys [maxStrictKeys]int
			nkeys := 0
			if j < len(bs) && bs[j] == '}' {
				j++
			} else {
				for {
					k, end := plainString(bs, j)
					if end < 0 || end >= len(bs) || bs[end] != ':' {
						return -1
					}
					if f.strict {
						if nkeys == len(keys) {
							return -1
						}
						for _, o := range keys[:nkeys] {
							// o is a plain key's token: the same bytes,
							// then its closing quote, are the same key.
							if len(bs)-o > len(k)+1 && string(bs[o+1:o+1+len(k)]) == string(k) && bs[o+1+len(k)] == '"' {
								return -1
							}
						}
						keys[nkeys] = j
						nkeys++
					}
					pl := other
					if len(props) > 0 {
						if q := props[string(k)]; q != nil {
							pl = q
						}
					}
					if pl == nil {
						return -1 // additional property is not allowed
					}
					seen |= requiredBit(n, k)
					if j = (*pl)(f, end+1, evp); j < 0 || j >= len(bs) {
						return -1
					}
					kv.SetString(f.d.str(end-1-len(k), end-1))
					m.SetMapIndex(kv, ev)
					ev.SetZero() // for the next entry
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
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '{' {
				return lf(f, i, p)
			}
			if !ok || !f.enter() {
				return -1
			}
			m := reflect.MakeMap(t)
			x := f.take(id, mk)
			kv, ev := f.scratch[x].kv, f.scratch[x].ev
			j := entries(f, m, kv, ev, f.scratch[x].evp, i+1)
			kv.SetZero() // keeps no decoded value alive
			ev.SetZero()
			f.scratch[x].busy = false
			if j >= 0 {
				// A map value is one pointer word, the one
				// Value.UnsafePointer returns (TestMapIsOnePointer).
				*(*unsafe.Pointer)(p) = m.UnsafePointer()
				f.depth--
			}
			return j
		}
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 || len(n.required) > 64 {
			return lf
		}
		type field struct {
			off  uintptr    // its offset: behind no pointer
			plan *fusedPlan // nil: the key is a violation, or the field is not settable
			bit  uint64     // its bit among n's required names
			once uint64     // its own bit, for a strict pass (0: more than 64 fields)
		}
		byName := make(map[string]field, len(fields))
		// With few fields, their keys ("name":, as canonjson writes
		// them) in order, matched against the bytes: a scan beats
		// scanning the key and hashing it. The canonical form of a string
		// is unique: bytes that begin with a field's key are that key.
		var names []string
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
			// What reflect lets the decoder set (an exported field,
			// through exported or embedded structs), decided once.
			if (sub != nil || !n.closed) && reflect.New(t).Elem().FieldByIndex(fd.index).CanSet() {
				p = b.of(fd.sf.Type, sub)
			}
			// The offsets add up through embedded structs (none behind a
			// pointer).
			var off uintptr
			st := t
			for _, x := range fd.index {
				sf := st.Field(x)
				off += sf.Offset
				st = sf.Type
			}
			var once uint64
			if len(fields) <= 64 {
				once = 1 << len(list)
			}
			fl := field{off, p, requiredBit(n, []byte(fd.name)), once}
			byName[fd.name] = fl
			names = append(names, string(append(canonjson.AppendString(nil, fd.name), ':')))
			list = append(list, fl)
		}
		if len(names) > 8 {
			names, list = nil, nil
		}
		ok := containerOK(n, kObject)
		all := allRequired(n)
		return func(f *fusedState, i int, p unsafe.Pointer) int {
			bs := f.d.b
			if i >= len(bs) {
				return -1
			}
			if bs[i] != '{' {
				return lf(f, i, p)
			}
			if !ok || !f.enter() {
				return -1
			}
			var seen, got uint64 // got: the fields met, for a strict pass
			j := i + 1
			if j < len(bs) && bs[j] == '}' {
				j++
			} else {
				for {
					var fd field
					found := false
					next := -1 // the offset of the field's value
					if names != nil {
						for x, key := range names {
							if len(bs)-j > len(key) && bs[j+1] == key[1] && string(bs[j:j+len(key)]) == key {
								fd, found, next = list[x], true, j+len(key)
								break
							}
						}
					} else {
						k, end := plainString(bs, j)
						if end < 0 || end >= len(bs) || bs[end] != ':' {
							return -1
						}
						fd, found = byName[string(k)]
						next = end + 1
					}
					if !found || fd.plan == nil {
						return -1 // not a field (the decoder declines), not allowed, or not settable
					}
					if f.strict {
						if fd.once == 0 || got&fd.once != 0 {
							return -1 // too many fields to tell, or a duplicate key
						}
						got |= fd.once
					}
					seen |= fd.bit
					if j = (*fd.plan)(f, next, unsafe.Add(p, fd.off)); j < 0 || j >= len(bs) {
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
			f.depth--
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
			if c.fusedDecode(args, frozen, rv.UnsafePointer(), false) {
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

// DecodeIfCanonical is [ArgsCheck.DecodeShared] for arguments that may
// not be canonical (a call's arguments as the caller sent them): it
// reports true when args are canonical (what canonjson.CanonicalizeObject
// returns for them, with the default Options, is args itself), valid, and
// decoded into v, in one pass over their bytes; else false, with *v the
// zero value again, and the caller canonicalizes them and decodes with
// DecodeShared. v must point to a zero value of the Target's type. It
// does not say false for every argument that is canonical and invalid,
// nor true for every valid one: only the one pass decides (a schema that
// does not cover the Target's key checks, or a part it does not handle,
// is false).
func (c *ArgsCheck) DecodeIfCanonical(args []byte, frozen string, v any) bool {
	if c.fused == nil || len(args) == 0 || args[0] != '{' || len(args) > canonjson.DefaultMaxBytes {
		return false
	}
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Type().Elem() != c.t.typ {
		return false
	}
	if len(frozen) != len(args) || unsafe.StringData(frozen) != unsafe.SliceData(args) && frozen != string(args) {
		frozen = ""
	}
	if c.fusedDecode(args, frozen, rv.UnsafePointer(), true) {
		return true
	}
	rv.Elem().SetZero()
	return false
}

// fusedDecode runs the fused plan on args into the zero value of the
// Target's type at p (see fusedPlan); strictly (see fusedState) when
// strict.
func (c *ArgsCheck) fusedDecode(args []byte, frozen string, p unsafe.Pointer, strict bool) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f := fusedStates.Get().(*fusedState)
	// A pooled state is zero but for its plans' scratch (zero values):
	// only the fields a call sets are set, and cleared after (all of w
	// when a scan used its scratch).
	f.w.b, f.d.b, f.d.s = args, args, frozen
	f.strict, f.w.strict = strict, strict
	ok = (*c.fused)(f, 0, p) == len(args)
	if f.w.vs != nil || f.w.segs != nil || f.w.strict || f.w.notCanon || f.w.depth != 0 {
		f.w = canonWalker{}
	}
	f.strict, f.depth = false, 0
	f.w.b, f.d.b, f.d.s = nil, nil, "" // keeps no argument bytes or strings
	if len(f.scratch) > 8 {
		f.scratch = nil // a few plans' scratch (other tools': a fresh one)
	}
	fusedStates.Put(f)
	return ok
}
