package schema

import (
	"bytes"
	"encoding"
	"encoding/base64"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// TypeCheck validates the JSON encoding/json writes for one Go type
// against a value schema, checking only what the type cannot guarantee.
//
// A schema inferred from a Go type ([Infer]) is satisfied by every value
// of that type for most of its keywords: a struct is an object with
// exactly its fields (each field without omitempty always present), a
// slice an array or null, an int32 an integer within its range, and so
// on. What the type leaves open is checked on the encoded bytes: that
// they are canonical JSON (short string escapes, integers within
// ±(2^53-1), numbers as JavaScript writes them), and, where the schema
// refuses null at a place the type can leave nil (a map without
// omitempty), that there is no null at all. Bytes that pass are the
// value's canonical form and valid; any other bytes get the full
// [ValueSchema.ValidateEncoded], so the results are always exactly its.
//
// A type with anything else to check (enum or const, minimum or maximum
// beyond the type's range, item counts, base64 on a plain string, a
// required field that encoding/json may omit, an interface, a custom
// marshaler other than time.Time's, a map keyed by a text type, ...)
// gets no TypeCheck: see [ValueSchema.ForType].
type TypeCheck struct {
	s *ValueSchema
	t reflect.Type
	// nullRisk: a place the schema keeps non-null can encode as null.
	nullRisk bool
	// enc writes t's canonical JSON (nil: t has parts only json.Marshal
	// encodes); sizeHint is the largest output so far, up to 64 KiB.
	enc      encoder
	sizeHint atomic.Int64
}

// fastMaxDepth bounds the nesting the fast scan accepts, well inside
// canonjson's limit (deeper values take the full path).
const fastMaxDepth = canonjson.DefaultMaxDepth / 2

var (
	jsonMarshalerIface = reflect.TypeFor[json.Marshaler]()
	textMarshalerIface = reflect.TypeFor[encoding.TextMarshaler]()
)

// ForType returns the check of the JSON that json.Marshal writes for a
// value of type t (a pointer type is described by its element, as [Infer]
// describes it; the caller encodes a nil root pointer as the element's
// zero value, as tools.Define does), or nil when s constrains such values in a way t does not
// guarantee (see [TypeCheck]); s is typically Infer(t) compiled.
func (s *ValueSchema) ForType(t reflect.Type) *TypeCheck {
	if t.Kind() == reflect.Pointer {
		// One level: a nil **T encodes as null.
		t = t.Elem()
	}
	p := &planner{onPath: map[planKey]bool{}}
	if !p.fits(t, s.root) {
		return nil
	}
	c := &TypeCheck{s: s, t: t, nullRisk: p.nullRisk}
	if f := (&encoders{built: map[planKey]*encoder{}}).of(t, s.root); f != nil {
		c.enc = *f
	}
	return c
}

// Schema returns the schema c checks against.
func (c *TypeCheck) Schema() *ValueSchema { return c.s }

// ValidateEncoded is [ValueSchema.ValidateEncoded] for b, the output of
// json.Marshal of a value of c's type: the same results, with canonical
// valid bytes (b itself) recognized by one scan that allocates nothing.
func (c *TypeCheck) ValidateEncoded(b []byte) (json.RawMessage, []Violation) {
	if c.Canonical(b) {
		return b, nil
	}
	return c.s.ValidateEncoded(b)
}

// Canonical reports whether b, the output of json.Marshal of a value of
// c's type, is canonical and valid against c's schema, by a scan of b
// alone. False means "not surely": [TypeCheck.ValidateEncoded] decides.
func (c *TypeCheck) Canonical(b []byte) bool {
	return encodedCanonical(b, !c.nullRisk)
}

// Same reports whether s and o are the same schema (compiled from the
// same canonical JSON).
func (s *ValueSchema) Same(o *ValueSchema) bool {
	return s != nil && o != nil && (s == o || bytes.Equal(s.canon, o.canon))
}

type planKey struct {
	t reflect.Type
	n *node
}

// planner decides whether a type guarantees a schema.
type planner struct {
	onPath   map[planKey]bool
	nullRisk bool
}

// nullable notes that values of n's place may be null.
func (p *planner) nullable(n *node) {
	if n.types != 0 && n.types&kNull == 0 {
		p.nullRisk = true
	}
}

// fits reports whether every value of type t that json.Marshal encodes,
// once canonical (and, unless p.nullRisk allows otherwise, without null),
// matches n.
func (p *planner) fits(t reflect.Type, n *node) bool {
	if n.never || n.enum != nil || n.constv != nil {
		return false
	}
	k := planKey{t, n}
	if p.onPath[k] {
		return true // a recursive type: checked where it started
	}
	p.onPath[k] = true
	defer delete(p.onPath, k)
	has := func(bits uint8) bool { return n.types == 0 || n.types&bits != 0 }
	if t == timeType {
		return has(kString) && !n.base64 && n.min == nil && n.max == nil
	}
	if t.Implements(jsonMarshalerIface) || reflect.PointerTo(t).Implements(jsonMarshalerIface) ||
		t.Implements(textMarshalerIface) || reflect.PointerTo(t).Implements(textMarshalerIface) {
		return false
	}
	numeric := n.min != nil || n.max != nil
	counts := n.minItems >= 0 || n.maxItems >= 0
	switch t.Kind() {
	case reflect.Bool:
		return has(kBoolean) && !numeric && !counts && !n.base64
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if !has(kInteger|kNumber) || counts || n.base64 {
			return false
		}
		// Integers beyond ±(2^53-1) are not canonical: the scan sends
		// them down the full path.
		lo, hi := intRange(t)
		return (n.min == nil || *n.min <= lo) && (n.max == nil || *n.max >= hi)
	case reflect.Float32, reflect.Float64:
		return (n.types == 0 || n.types&kNumber != 0) && !numeric && !counts && !n.base64
	case reflect.String:
		return has(kString) && !numeric && !counts && !n.base64
	case reflect.Pointer:
		p.nullable(n)
		return p.fits(t.Elem(), n)
	case reflect.Slice:
		p.nullable(n)
		if e := t.Elem(); e.Kind() == reflect.Uint8 && !marshals(e) {
			// []byte: standard base64 with padding.
			return has(kString) && !numeric && !counts
		}
		return p.array(t, n, -1)
	case reflect.Array:
		return p.array(t, n, t.Len())
	case reflect.Map:
		p.nullable(n)
		switch t.Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		default:
			return false
		}
		if marshals(t.Key()) || !has(kObject) || numeric || counts || n.base64 || n.props != nil || n.required != nil {
			return false
		}
		if n.addl != nil {
			return p.fits(t.Elem(), n.addl)
		}
		return !n.closed
	case reflect.Struct:
		if !has(kObject) || numeric || counts || n.base64 {
			return false
		}
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 {
			return false
		}
		present := map[string]bool{}
		for _, f := range fields {
			if f.quoted {
				return false
			}
			_, opts, _ := strings.Cut(f.sf.Tag.Get("json"), ",")
			if !hasOption(opts, "omitempty") && !hasOption(opts, "omitzero") && !behindPointer(t, f.index) {
				present[f.name] = true
			}
			sub := n.props[f.name]
			switch {
			case sub != nil:
			case n.addl != nil:
				sub = n.addl
			case n.closed:
				return false
			}
			if sub != nil && !p.fits(f.sf.Type, sub) {
				return false
			}
		}
		for _, name := range n.required {
			if !present[name] {
				return false
			}
		}
		return true
	}
	return false // interfaces (any value), and what encoding/json refuses
}

// array is fits for a slice (length -1) or an array of length n.
func (p *planner) array(t reflect.Type, n *node, length int) bool {
	if n.types != 0 && n.types&kArray == 0 || n.min != nil || n.max != nil || n.base64 {
		return false
	}
	if n.minItems >= 0 && (length < 0 || length < n.minItems) || n.maxItems >= 0 && (length < 0 || length > n.maxItems) {
		return false
	}
	return n.items == nil || p.fits(t.Elem(), n.items)
}

// marshals reports whether encoding/json encodes t with its own methods.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshalerIface) || p.Implements(jsonMarshalerIface) ||
		t.Implements(textMarshalerIface) || p.Implements(textMarshalerIface)
}

// behindPointer reports whether the field at index of struct t is
// promoted through an embedded pointer, which encoding/json skips when
// nil.
func behindPointer(t reflect.Type, index []int) bool {
	for _, i := range index[:len(index)-1] {
		f := t.Field(i)
		if f.Type.Kind() == reflect.Pointer {
			return true
		}
		t = f.Type
	}
	return false
}

// encodedCanonical reports whether b, compact JSON as json.Marshal writes
// it, is surely canonical: no whitespace, strings whose only escapes are
// the short ones (valid UTF-8 otherwise), numbers as canonjson writes
// them, nesting within fastMaxDepth, and no null unless nullOK. It does
// not check the grammar (json.Marshal's output has it); it is total on
// any input.
func encodedCanonical(b []byte, nullOK bool) bool {
	if len(b) == 0 || len(b) > canonjson.DefaultMaxBytes {
		return false
	}
	depth := 0
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '{', '[':
			if depth++; depth > fastMaxDepth {
				return false
			}
			i++
		case '}', ']':
			depth--
			i++
		case ',', ':':
			i++
		case '"':
			if i = canonStringEnd(b, i); i < 0 {
				return false
			}
		case 't':
			if !bytes.HasPrefix(b[i:], []byte("true")) {
				return false
			}
			i += 4
		case 'f':
			if !bytes.HasPrefix(b[i:], []byte("false")) {
				return false
			}
			i += 5
		case 'n':
			if !nullOK || !bytes.HasPrefix(b[i:], []byte("null")) {
				return false
			}
			i += 4
		default:
			end := scalarEnd(b, i)
			if end < 0 || !canonicalScalar(b[i:end], kNumber) {
				return false
			}
			i = end
		}
	}
	return depth == 0
}

// canonStringEnd returns the offset after the string at b[i] when it is
// in canonical form (escaping only with the short escapes), else -1.
func canonStringEnd(b []byte, i int) int {
	ascii := true
	start := i + 1
	for j := start; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			if !ascii && !utf8.Valid(b[start:j]) {
				return -1
			}
			return j + 1
		case c == '\\':
			j++
			if j >= len(b) {
				return -1
			}
			switch b[j] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			default:
				return -1
			}
		case c < 0x20:
			return -1
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return -1
}

// encoder writes the canonical JSON of one Go type: what Canonicalize
// returns for json.Marshal's output. It reports false for a value it
// leaves to json.Marshal (a number canonjson refuses or writes otherwise,
// nesting beyond fastMaxDepth, a null where the schema may refuse one):
// the caller then encodes with json.Marshal and validates in full.
// It appends to dst at nesting depth (the number of objects and arrays
// around v) and returns the extended dst: passed and returned, not kept in
// a struct on the heap, so that appending pays no allocation for the
// state and no GC write barrier.
type encoder func(dst []byte, depth int, v reflect.Value) ([]byte, bool)

// Encode returns the canonical JSON of v, a value of c's type (a nil
// root pointer encoded as its element's zero value, as by the caller of
// json.Marshal), valid against c's schema: the bytes json.Marshal then
// [ValueSchema.ValidateEncoded] would return. It reports false when it
// cannot tell (a value json.Marshal may refuse, a number canonjson writes
// differently, a null the schema may refuse, deep nesting, c's type has
// no encoder): encode with json.Marshal then and call
// [TypeCheck.ValidateEncoded].
func (c *TypeCheck) Encode(v any) ([]byte, bool) {
	if c.enc == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	for rv.Kind() == reflect.Pointer && rv.Type() != c.t {
		if rv.IsNil() {
			rv = reflect.Zero(c.t)
			break
		}
		rv = rv.Elem()
	}
	if !rv.IsValid() || rv.Type() != c.t {
		return nil, false
	}
	b, ok := c.enc(make([]byte, 0, c.sizeHint.Load()), 0, rv)
	if !ok || len(b) > canonjson.DefaultMaxBytes {
		return nil, false
	}
	if n := int64(len(b)); n > c.sizeHint.Load() && n <= 1<<16 {
		c.sizeHint.Store(n)
	}
	return b, true
}

// encoders builds the encoders of the types reachable from one root.
type encoders struct {
	built map[planKey]*encoder
}

// anyNode is the schema of a place no schema constrains.
var anyNode = &node{minItems: -1, maxItems: -1}

// of returns the encoder of t, or nil when t has a part encoding/json
// encodes in ways this package does not repeat (interfaces, custom
// marshalers other than time.Time's, float32, omitzero, ...).
// of returns the encoder of t at a place of schema n (nil: any value);
// ForType checked that t fits n.
func (b *encoders) of(t reflect.Type, n *node) *encoder {
	if n == nil {
		n = anyNode
	}
	k := planKey{t, n}
	if f, ok := b.built[k]; ok {
		return f // being built: a recursive type, filled below
	}
	f := new(encoder)
	b.built[k] = f
	var ok bool
	*f, ok = b.build(t, n)
	if !ok {
		b.built[k] = nil
		return nil
	}
	return f
}

func (b *encoders) build(t reflect.Type, n *node) (encoder, bool) {
	nullOK := n.types == 0 || n.types&kNull != 0
	if t == timeType {
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			if !v.CanInterface() {
				return dst, false // reached through an unexported field
			}
			tm, _ := v.Interface().(time.Time)
			out, err := tm.MarshalJSON()
			if err != nil {
				return dst, false // json.Marshal's error to report
			}
			dst = append(dst, out...)
			return dst, true
		}, true
	}
	if marshals(t) {
		return nil, false
	}
	switch t.Kind() {
	case reflect.Bool:
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			dst = strconv.AppendBool(dst, v.Bool())
			return dst, true
		}, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			n := v.Int()
			if n > canonjson.MaxSafeInteger || n < -canonjson.MaxSafeInteger {
				return dst, false
			}
			dst = strconv.AppendInt(dst, n, 10)
			return dst, true
		}, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			n := v.Uint()
			if n > canonjson.MaxSafeInteger {
				return dst, false
			}
			dst = strconv.AppendUint(dst, n, 10)
			return dst, true
		}, true
	case reflect.Float64:
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			f := v.Float()
			if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 && math.Signbit(f) ||
				math.Abs(f) > canonjson.MaxSafeInteger && math.Abs(f) < 1e21 {
				return dst, false
			}
			dst = canonjson.AppendNumber(dst, f)
			return dst, true
		}, true
	case reflect.String:
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			s := v.String()
			if !utf8.ValidString(s) {
				return dst, false
			}
			dst = canonjson.AppendString(dst, s)
			return dst, true
		}, true
	case reflect.Pointer:
		elem := b.of(t.Elem(), n)
		if elem == nil {
			return nil, false
		}
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			if v.IsNil() {
				return append(dst, "null"...), nullOK
			}
			return (*elem)(dst, depth, v.Elem())
		}, true
	case reflect.Slice:
		if et := t.Elem(); et.Kind() == reflect.Uint8 && !marshals(et) {
			return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
				if v.IsNil() {
					return append(dst, "null"...), nullOK
				}
				dst = append(dst, '"')
				dst = base64.StdEncoding.AppendEncode(dst, v.Bytes())
				dst = append(dst, '"')
				return dst, true
			}, true
		}
		elem := b.of(t.Elem(), n.items)
		if elem == nil {
			return nil, false
		}
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			if v.IsNil() {
				return append(dst, "null"...), nullOK
			}
			return list(dst, depth, elem, v)
		}, true
	case reflect.Array:
		elem := b.of(t.Elem(), n.items)
		if elem == nil {
			return nil, false
		}
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) { return list(dst, depth, elem, v) }, true
	case reflect.Map:
		if t.Key().Kind() != reflect.String || marshals(t.Key()) {
			return nil, false // integer keys: sorted as text; left to json.Marshal
		}
		elem := b.of(t.Elem(), n.addl)
		if elem == nil {
			return nil, false
		}
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			if v.IsNil() {
				return append(dst, "null"...), nullOK
			}
			if depth++; depth > fastMaxDepth {
				return dst, false
			}
			dst = append(dst, '{')
			type kv struct {
				k string
				v reflect.Value
			}
			kvs := make([]kv, 0, v.Len())
			for iter := v.MapRange(); iter.Next(); {
				kvs = append(kvs, kv{iter.Key().String(), iter.Value()})
			}
			slices.SortFunc(kvs, func(a, b kv) int { return strings.Compare(a.k, b.k) })
			for i := range kvs {
				if !utf8.ValidString(kvs[i].k) {
					return dst, false
				}
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = canonjson.AppendString(dst, kvs[i].k)
				dst = append(dst, ':')
				var ok bool
				if dst, ok = (*elem)(dst, depth, kvs[i].v); !ok {
					return dst, false
				}
			}
			dst = append(dst, '}')
			return dst, true
		}, true
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 {
			return nil, false
		}
		type field struct {
			key       []byte // "name":
			index     []int
			omitEmpty bool
			enc       *encoder
		}
		fs := make([]field, 0, len(fields))
		for _, f := range fields {
			_, opts, _ := strings.Cut(f.sf.Tag.Get("json"), ",")
			if f.quoted || hasOption(opts, "omitzero") {
				return nil, false
			}
			sub := n.props[f.name]
			if sub == nil {
				sub = n.addl
			}
			enc := b.of(f.sf.Type, sub)
			if enc == nil {
				return nil, false
			}
			key := append(canonjson.AppendString(nil, f.name), ':')
			fs = append(fs, field{key: key, index: f.index, omitEmpty: hasOption(opts, "omitempty"), enc: enc})
		}
		return func(dst []byte, depth int, v reflect.Value) ([]byte, bool) {
			if depth++; depth > fastMaxDepth {
				return dst, false
			}
			dst = append(dst, '{')
			first := true
			for i := range fs {
				f := &fs[i]
				var fv reflect.Value
				if len(f.index) == 1 {
					fv = v.Field(f.index[0])
				} else {
					var err error
					if fv, err = v.FieldByIndexErr(f.index); err != nil {
						continue // behind a nil embedded pointer: omitted
					}
				}
				if f.omitEmpty && isEmptyValue(fv) {
					continue
				}
				if !first {
					dst = append(dst, ',')
				}
				first = false
				dst = append(dst, f.key...)
				var ok bool
				if dst, ok = (*f.enc)(dst, depth, fv); !ok {
					return dst, false
				}
			}
			dst = append(dst, '}')
			return dst, true
		}, true
	}
	return nil, false
}

// list writes the elements of v, a slice or array, with elem.
func list(dst []byte, depth int, elem *encoder, v reflect.Value) ([]byte, bool) {
	if depth++; depth > fastMaxDepth {
		return dst, false
	}
	dst = append(dst, '[')
	for i := range v.Len() {
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = (*elem)(dst, depth, v.Index(i)); !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// isEmptyValue is encoding/json's omitempty test.
func isEmptyValue(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool,
		reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64,
		reflect.Interface, reflect.Pointer:
		return v.IsZero()
	}
	return false
}
