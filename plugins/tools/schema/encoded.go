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
	"unsafe"

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
	// zero points to a zero value of t, which the encoders only read.
	zero unsafe.Pointer
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
	c := &TypeCheck{s: s, t: t, nullRisk: p.nullRisk, zero: reflect.New(t).UnsafePointer()}
	if f := (&encoders{built: map[planKey]*encoder{}, structs: map[planKey]*structEncoder{}}).of(t, s.root); f != nil {
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

// encoder writes the canonical JSON of the value of one Go type at p:
// what Canonicalize returns for json.Marshal's output. It reports false
// for a value it leaves to json.Marshal (a number canonjson refuses or
// writes otherwise, invalid UTF-8, nesting beyond fastMaxDepth, a null
// where the schema may refuse one): the caller then encodes with
// json.Marshal and validates in full. It appends to dst at nesting depth
// (the number of objects and arrays around the value) and returns the
// extended dst: passed and returned, not kept in a struct on the heap, so
// that appending pays no allocation for the state and no GC write barrier.
//
// An encoder is compiled once per (Go type, schema node) pair (see
// [encoders]): struct fields are read at precomputed offsets with their
// quoted names ("name":) ready to copy, and scalars are written by a
// switch on their kind rather than through reflect.Value; an encoder only
// reads through p and never keeps it.
type encoder func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool)

// Encode returns the canonical JSON of v, a value of c's type (a nil
// root pointer encoded as its element's zero value, as by the caller of
// json.Marshal), valid against c's schema: the bytes json.Marshal then
// [ValueSchema.ValidateEncoded] would return. It reports false when it
// cannot tell (a value json.Marshal may refuse, a number canonjson writes
// differently, a null the schema may refuse, deep nesting, c's type has
// no encoder): encode with json.Marshal then and call
// [TypeCheck.ValidateEncoded]. [EncodeValue] does the same without boxing
// the value.
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
	var p unsafe.Pointer
	if rv.CanAddr() {
		p = rv.Addr().UnsafePointer()
	} else {
		pv := reflect.New(c.t)
		pv.Elem().Set(rv)
		p = pv.UnsafePointer()
	}
	b, _, ok := c.encodeAt(p, false)
	return b, ok
}

// EncodeValue is [TypeCheck.Encode] of *v, where T is c's type or a
// pointer to it (a nil pointer is encoded as the zero value of its
// element), without boxing *v in an interface. It returns the encoding
// twice: value, which the caller owns, and text, the same bytes as a
// string that shares no memory reachable through value (value's capacity
// ends where its bytes do), so that what a holder of value writes into it
// never changes text.
func EncodeValue[T any](c *TypeCheck, v *T) (value []byte, text string, ok bool) {
	if c == nil || c.enc == nil || v == nil {
		return nil, "", false
	}
	p := unsafe.Pointer(v)
	if rt := reflect.TypeFor[T](); rt != c.t {
		if rt.Kind() != reflect.Pointer || rt.Elem() != c.t {
			return nil, "", false
		}
		if p = *(*unsafe.Pointer)(p); p == nil {
			p = c.zero
		}
	}
	return c.encodeAt(p, true)
}

// encodeAt encodes the value of c's type at p into a buffer sized from
// the outputs so far and, with twin, also returns the bytes as a string
// copied into the same buffer's unreachable tail when it has room.
func (c *TypeCheck) encodeAt(p unsafe.Pointer, twin bool) ([]byte, string, bool) {
	hint := c.sizeHint.Load()
	var buf []byte
	if hint > 0 {
		if twin {
			hint *= 2
		}
		buf = make([]byte, 0, hint)
	}
	b, ok := c.enc(buf, 0, p)
	if !ok || len(b) > canonjson.DefaultMaxBytes {
		return nil, "", false
	}
	n := len(b)
	if m := int64(n); m > c.sizeHint.Load() && m <= 1<<16 {
		c.sizeHint.Store(m)
	}
	if !twin {
		return b[:n:n], "", true
	}
	var text string
	if n > 0 && cap(b)-n >= n {
		t := append(b[n:n], b...) // within capacity: no allocation
		text = unsafe.String(unsafe.SliceData(t), n)
	} else {
		text = string(b)
	}
	return b[:n:n], text, true
}

// encoders builds the encoders of the types reachable from one root.
type encoders struct {
	built   map[planKey]*encoder
	structs map[planKey]*structEncoder // the struct encoders among built
}

// anyNode is the schema of a place no schema constrains.
var anyNode = &node{minItems: -1, maxItems: -1}

// of returns the encoder of t at a place of schema n (nil: any value),
// or nil when t has a part encoding/json encodes in ways this package
// does not repeat (interfaces, custom marshalers other than time.Time's,
// float32, omitzero, ...); ForType checked that t fits n.
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

// scalar is the kind of a value an encoder writes without a call of its
// own: struct fields, slice and array elements of these kinds are
// written by appendScalar in the container's loop.
type scalar uint8

const (
	notScalar scalar = iota
	sBool
	sInt
	sInt8
	sInt16
	sInt32
	sInt64
	sUint
	sUint8
	sUint16
	sUint32
	sUint64
	sUintptr
	sFloat64
	sString
)

// scalarOf returns the scalar kind of t (notScalar for the others); t
// has an encoder, so it is none of the types with methods encoding/json
// calls.
func scalarOf(t reflect.Type) scalar {
	switch t.Kind() {
	case reflect.Bool:
		return sBool
	case reflect.Int:
		return sInt
	case reflect.Int8:
		return sInt8
	case reflect.Int16:
		return sInt16
	case reflect.Int32:
		return sInt32
	case reflect.Int64:
		return sInt64
	case reflect.Uint:
		return sUint
	case reflect.Uint8:
		return sUint8
	case reflect.Uint16:
		return sUint16
	case reflect.Uint32:
		return sUint32
	case reflect.Uint64:
		return sUint64
	case reflect.Uintptr:
		return sUintptr
	case reflect.Float64:
		return sFloat64
	case reflect.String:
		return sString
	}
	return notScalar
}

// appendScalar writes the scalar of kind k at p (see encoder).
func appendScalar(dst []byte, k scalar, p unsafe.Pointer) ([]byte, bool) {
	switch k {
	case sString:
		return appendString(dst, *(*string)(p))
	case sInt:
		return appendInt(dst, int64(*(*int)(p)))
	case sInt64:
		return appendInt(dst, *(*int64)(p))
	case sInt32:
		return appendInt(dst, int64(*(*int32)(p)))
	case sInt16:
		return appendInt(dst, int64(*(*int16)(p)))
	case sInt8:
		return appendInt(dst, int64(*(*int8)(p)))
	case sUint:
		return appendUint(dst, uint64(*(*uint)(p)))
	case sUint64:
		return appendUint(dst, *(*uint64)(p))
	case sUint32:
		return appendUint(dst, uint64(*(*uint32)(p)))
	case sUint16:
		return appendUint(dst, uint64(*(*uint16)(p)))
	case sUint8:
		return appendUint(dst, uint64(*(*uint8)(p)))
	case sUintptr:
		return appendUint(dst, uint64(*(*uintptr)(p)))
	case sBool:
		return strconv.AppendBool(dst, *(*bool)(p)), true
	case sFloat64:
		f := *(*float64)(p)
		if math.IsNaN(f) || math.IsInf(f, 0) || f == 0 && math.Signbit(f) ||
			math.Abs(f) > canonjson.MaxSafeInteger && math.Abs(f) < 1e21 {
			return dst, false
		}
		return canonjson.AppendNumber(dst, f), true
	}
	return dst, false
}

func appendInt(dst []byte, n int64) ([]byte, bool) {
	if n > canonjson.MaxSafeInteger || n < -canonjson.MaxSafeInteger {
		return dst, false
	}
	if n < 0 {
		return strconv.AppendInt(dst, n, 10), true
	}
	return appendDigits(dst, uint64(n)), true
}

func appendUint(dst []byte, n uint64) ([]byte, bool) {
	if n > canonjson.MaxSafeInteger {
		return dst, false
	}
	return appendDigits(dst, n), true
}

// appendDigits writes n in decimal (strconv.AppendUint's output), below
// 10000 without a call.
func appendDigits(dst []byte, n uint64) []byte {
	switch {
	case n < 10:
		return append(dst, byte('0'+n))
	case n < 100:
		return append(dst, byte('0'+n/10), byte('0'+n%10))
	case n < 1000:
		return append(dst, byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10))
	case n < 10000:
		return append(dst, byte('0'+n/1000), byte('0'+n/100%10), byte('0'+n/10%10), byte('0'+n%10))
	}
	return strconv.AppendUint(dst, n, 10)
}

// plainASCII[c] says the byte c stands for itself inside a canonical
// JSON string.
var plainASCII = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// appendString writes s as canonjson.AppendString does, in the same
// pass declining invalid UTF-8 (which AppendString would replace and
// json.Marshal writes otherwise).
func appendString(dst []byte, s string) ([]byte, bool) {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if plainASCII[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = canonjson.AppendEscape(dst, c)
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return dst, false
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"'), true
}

// elemEncoder writes the element of a slice or array at p: a scalar in
// the loop, anything else through enc.
type elemEncoder struct {
	size uintptr
	k    scalar
	st   *structEncoder // a struct element: called directly
	enc  *encoder
}

func (e *elemEncoder) list(dst []byte, depth int, p unsafe.Pointer, n int) ([]byte, bool) {
	if depth++; depth > fastMaxDepth {
		return dst, false
	}
	dst = append(dst, '[')
	var ok bool
	for i := range n {
		if i > 0 {
			dst = append(dst, ',')
		}
		ep := unsafe.Add(p, uintptr(i)*e.size)
		switch {
		case e.k != notScalar:
			dst, ok = appendScalar(dst, e.k, ep)
		case e.st != nil:
			dst, ok = e.st.encode(dst, depth, ep)
		default:
			dst, ok = (*e.enc)(dst, depth, ep)
		}
		if !ok {
			return dst, false
		}
	}
	return append(dst, ']'), true
}

// encField is a struct field as its struct's encoder writes it.
type encField struct {
	key   string    // "name":
	steps []uintptr // offsets of the embedded pointers on its path
	off   uintptr   // its offset in the struct the last step reaches
	k     scalar
	enc   *encoder
	empty func(p unsafe.Pointer) bool // omitempty: encoding/json's test; else nil
}

func (b *encoders) build(t reflect.Type, n *node) (encoder, bool) {
	nullOK := n.types == 0 || n.types&kNull != 0
	if t == timeType {
		return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
			// What Time.MarshalJSON writes (the same strict RFC 3339),
			// without its allocation.
			out, err := (*time.Time)(p).AppendText(append(dst, '"'))
			if err != nil {
				return dst, false // json.Marshal's error to report
			}
			return append(out, '"'), true
		}, true
	}
	if marshals(t) {
		return nil, false
	}
	if k := scalarOf(t); k != notScalar {
		return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
			return appendScalar(dst, k, p)
		}, true
	}
	switch t.Kind() {
	case reflect.Pointer:
		elem := b.of(t.Elem(), n)
		if elem == nil {
			return nil, false
		}
		return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
			q := *(*unsafe.Pointer)(p)
			if q == nil {
				return append(dst, "null"...), nullOK
			}
			return (*elem)(dst, depth, q)
		}, true
	case reflect.Slice:
		if et := t.Elem(); et.Kind() == reflect.Uint8 && !marshals(et) {
			return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
				bs := *(*[]byte)(p)
				if bs == nil {
					return append(dst, "null"...), nullOK
				}
				dst = append(dst, '"')
				dst = base64.StdEncoding.AppendEncode(dst, bs)
				return append(dst, '"'), true
			}, true
		}
		e, ok := b.elem(t.Elem(), n.items)
		if !ok {
			return nil, false
		}
		return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
			data := *(*unsafe.Pointer)(p)
			if data == nil {
				return append(dst, "null"...), nullOK
			}
			return e.list(dst, depth, data, *(*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))))
		}, true
	case reflect.Array:
		e, ok := b.elem(t.Elem(), n.items)
		if !ok {
			return nil, false
		}
		length := t.Len()
		return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
			return e.list(dst, depth, p, length)
		}, true
	case reflect.Map:
		if t.Key().Kind() != reflect.String || marshals(t.Key()) {
			return nil, false // integer keys: sorted as text; left to json.Marshal
		}
		elem := b.of(t.Elem(), n.addl)
		if elem == nil {
			return nil, false
		}
		return b.mapEncoder(t, elem, nullOK), true
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 {
			return nil, false
		}
		fs := make([]encField, 0, len(fields))
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
			ef := encField{key: string(append(canonjson.AppendString(nil, f.name), ':')), enc: enc}
			if f.sf.Type != timeType {
				ef.k = scalarOf(f.sf.Type)
			}
			// The path to the field: offsets add up through embedded
			// structs; an embedded pointer is a step (nil: omitted).
			st := t
			for _, i := range f.index[:len(f.index)-1] {
				sf := st.Field(i)
				ef.off += sf.Offset
				st = sf.Type
				if st.Kind() == reflect.Pointer {
					ef.steps = append(ef.steps, ef.off)
					ef.off, st = 0, st.Elem()
				}
			}
			ef.off += st.Field(f.index[len(f.index)-1]).Offset
			if hasOption(opts, "omitempty") {
				ef.empty = emptyTest(f.sf.Type)
			}
			fs = append(fs, ef)
		}
		st := &structEncoder{fields: fs}
		b.structs[planKey{t, n}] = st
		return st.encode, true
	}
	return nil, false
}

// structEncoder writes a struct: its fields in order, each read at its
// offset (through the embedded pointers on its path).
type structEncoder struct {
	fields []encField
}

func (st *structEncoder) encode(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
	if depth++; depth > fastMaxDepth {
		return dst, false
	}
	dst = append(dst, '{')
	first := true
	var ok bool
fields:
	for i := range st.fields {
		f := &st.fields[i]
		fp := p
		for _, s := range f.steps {
			if fp = *(*unsafe.Pointer)(unsafe.Add(fp, s)); fp == nil {
				continue fields // behind a nil embedded pointer: omitted
			}
		}
		fp = unsafe.Add(fp, f.off)
		if f.empty != nil && f.empty(fp) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, f.key...)
		if f.k != notScalar {
			dst, ok = appendScalar(dst, f.k, fp)
		} else {
			dst, ok = (*f.enc)(dst, depth, fp)
		}
		if !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// elem returns the element encoder of a slice or array of et at a place
// of schema items.
func (b *encoders) elem(et reflect.Type, items *node) (*elemEncoder, bool) {
	enc := b.of(et, items)
	if enc == nil {
		return nil, false
	}
	e := &elemEncoder{size: et.Size(), enc: enc}
	if et != timeType {
		e.k = scalarOf(et)
	}
	if items == nil {
		items = anyNode
	}
	e.st = b.structs[planKey{et, items}]
	return e, true
}

// mapEncoder writes a map with string keys (of type t), in the order of
// its keys' bytes, as canonjson sorts them.
func (b *encoders) mapEncoder(t reflect.Type, elem *encoder, nullOK bool) encoder {
	kt, et := t.Key(), t.Elem()
	valuesType := reflect.SliceOf(et)
	type entry struct {
		k string
		i int
	}
	return func(dst []byte, depth int, p unsafe.Pointer) ([]byte, bool) {
		m := reflect.NewAt(t, p).Elem()
		if m.IsNil() {
			return append(dst, "null"...), nullOK
		}
		if depth++; depth > fastMaxDepth {
			return dst, false
		}
		n := m.Len()
		if n == 0 {
			return append(dst, "{}"...), true
		}
		// The values are copied out (map values have no address), the
		// keys read as strings, then both taken in key order.
		values := reflect.MakeSlice(valuesType, n, n)
		entries := make([]entry, 0, n)
		key := reflect.New(kt).Elem()
		for iter := m.MapRange(); iter.Next() && len(entries) < n; {
			key.SetIterKey(iter)
			values.Index(len(entries)).SetIterValue(iter)
			entries = append(entries, entry{key.String(), len(entries)})
		}
		slices.SortFunc(entries, func(a, b entry) int { return strings.Compare(a.k, b.k) })
		base := values.UnsafePointer()
		size := et.Size()
		dst = append(dst, '{')
		var ok bool
		for i := range entries {
			if i > 0 {
				dst = append(dst, ',')
			}
			if dst, ok = appendString(dst, entries[i].k); !ok {
				return dst, false
			}
			dst = append(dst, ':')
			if dst, ok = (*elem)(dst, depth, unsafe.Add(base, uintptr(entries[i].i)*size)); !ok {
				return dst, false
			}
		}
		return append(dst, '}'), true
	}
}

// emptyTest returns encoding/json's omitempty test for a value of type t
// at a pointer (isEmptyValue).
func emptyTest(t reflect.Type) func(p unsafe.Pointer) bool {
	switch t.Kind() {
	case reflect.String:
		return func(p unsafe.Pointer) bool { return len(*(*string)(p)) == 0 }
	case reflect.Slice:
		return func(p unsafe.Pointer) bool { return *(*int)(unsafe.Add(p, unsafe.Sizeof(uintptr(0)))) == 0 }
	case reflect.Array:
		empty := t.Len() == 0
		return func(unsafe.Pointer) bool { return empty }
	case reflect.Map:
		return func(p unsafe.Pointer) bool { return reflect.NewAt(t, p).Elem().Len() == 0 }
	case reflect.Pointer:
		return func(p unsafe.Pointer) bool { return *(*unsafe.Pointer)(p) == nil }
	case reflect.Float64:
		return func(p unsafe.Pointer) bool { return *(*float64)(p) == 0 }
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		// A zero integer or false is all zero bytes.
		size := t.Size()
		return func(p unsafe.Pointer) bool {
			for _, c := range unsafe.Slice((*byte)(p), size) {
				if c != 0 {
					return false
				}
			}
			return true
		}
	}
	return func(unsafe.Pointer) bool { return false }
}
