package goja

import (
	"math"
	"math/big"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/dop251/goja"
)

// argJSON serializes a binding argument to JSON in Go: the guarded JSON.stringify (stringifyArg)
// without its native call, holder object and replacer call per value, which made it most of a
// sub-call's cost. It is that stringify step for step, through goja's public API: every property it
// reads, toJSON it calls and key list it takes is the one goja's JSON.stringify reads, calls and
// takes, in the same order and with the same receiver, so getters, toJSON methods and Proxy traps run
// exactly as they would (once each, in order); a value goja's stringify would refuse is refused with
// the same error (a cycle, a BigInt), and the guard's checks run where its replacer ran (after
// toJSON, before the value is written): the run's interrupt, and the nesting limit. The rare
// operations the Go API has no exact equivalent for (a Proxy's keys and IsArray, a key that is not
// valid UTF-16, a property of a BigInt) go through the prelude's JavaScript helpers, which perform
// the same operation. TestArgJSONMatchesStringify pins the equivalence.
type argJSON struct {
	r     *run
	buf   []byte
	stack []*goja.Object // the objects being serialized, root first: goja's cycle check
	busy  bool           // a walk is in progress (a getter or toJSON of it may call a binding)
}

var (
	reflectMap    = reflect.TypeOf(map[string]interface{}(nil))
	reflectProxy  = reflect.TypeOf(goja.Proxy{})
	reflectBigInt = reflect.TypeOf((*big.Int)(nil))
	reflectString = reflect.TypeOf("") // a Symbol object's export type
	reflectInt    = reflect.TypeOf(int64(0))
	reflectFloat  = reflect.TypeOf(float64(0))
	reflectBool   = reflect.TypeOf(false)
)

// argKey is the key a value is serialized under: a string (an object's key), an index (an array's)
// or, for a key read through the prelude, its JavaScript string. Only a toJSON method sees it.
type argKey struct {
	s   string
	v   goja.Value
	idx int
	arr bool
}

func (k argKey) value(vm *goja.Runtime) goja.Value {
	switch {
	case k.v != nil:
		return k.v
	case k.arr:
		return vm.ToValue(strconv.Itoa(k.idx))
	}
	return vm.ToValue(k.s)
}

// argumentJSON is JSON.stringify(v) as the guarded stringify computed it (see argJSON): the JSON
// text (a copy), or false when it is undefined (v is a function or symbol), or the value it threw (a
// catchable exception: the argument is not serializable). An uncatchable error (an interrupt)
// propagates as a panic, as it did from the guarded stringify's caller.
func (r *run) argumentJSON(v goja.Value) (out []byte, defined bool, thrown goja.Value) {
	out, defined, thrown = r.argumentJSONTemp(v)
	if out != nil {
		out = append([]byte(nil), out...)
	}
	return out, defined, thrown
}

// argumentJSONTemp is argumentJSON without the copy: the text is the run's buffer, valid only
// until the next argument is serialized (the caller copies it before it runs any JavaScript).
func (r *run) argumentJSONTemp(v goja.Value) (out []byte, defined bool, thrown goja.Value) {
	w := &r.argW
	if w.busy {
		// A getter or toJSON of the walk in progress made a binding call.
		w = &argJSON{}
	}
	w.r = r
	w.busy = true
	w.buf = w.buf[:0]
	defer w.done()
	ex := r.vm.Try(func() { defined = w.str(argKey{}, v, 0) })
	if ex != nil {
		return nil, false, ex.Value()
	}
	if !defined {
		return nil, false, nil
	}
	return w.buf, true, nil
}

func (w *argJSON) done() {
	clear(w.stack)
	w.stack = w.stack[:0]
	if cap(w.buf) > 64<<10 {
		w.buf = nil
	}
	w.busy = false
}

// throwValue panics with a JavaScript value, which the walk's Try turns into its exception.
func throwValue(v goja.Value) { panic(v) }

// must returns v, or panics with err (a JavaScript exception, or an uncatchable error, which then
// propagates as from the guarded stringify).
func must(v goja.Value, err error) goja.Value {
	if err != nil {
		panic(err)
	}
	return v
}

// str is goja's SerializeJSONProperty for value (already read from its holder under k) at depth
// (the number of objects above it): it writes the value and reports whether it was defined.
func (w *argJSON) str(k argKey, value goja.Value, depth int) bool {
	r := w.r
	vm := r.vm
	if value == nil {
		value = goja.Undefined()
	}
	// toJSON, as goja reads it: for an object or a BigInt.
	if o, ok := value.(*goja.Object); ok {
		if f, ok := goja.AssertFunction(o.Get("toJSON")); ok {
			value = must(f(value, k.value(vm)))
		}
	} else if value.ExportType() == reflectBigInt {
		// A property of a primitive: read in JavaScript, so that a getter sees the primitive.
		if f, ok := goja.AssertFunction(must(r.h.get(goja.Undefined(), value, vm.ToValue("toJSON")))); ok {
			value = must(f(value, k.value(vm)))
		}
	}
	// The guard (stringifyArg's replacer, guardArg): the interrupt, and the nesting limit.
	if r.interrupted.Load() {
		r.throwRange("the run was interrupted")
	}
	o, isObj := value.(*goja.Object)
	if isObj {
		if _, fn := goja.AssertFunction(o); !fn && depth+1 > r.maxDepth {
			r.throwRange("JSON.stringify: the value is nested more than " + strconv.Itoa(r.maxDepth) + " levels deep")
		}
	}
	// Wrapper objects serialize as their primitive.
	proxy := false
	if isObj {
		et := o.ExportType()
		if et == reflectProxy {
			proxy = true
		} else {
			switch cls := o.ClassName(); {
			case cls == "Number" && (et == reflectInt || et == reflectFloat):
				value, isObj = o.ToNumber(), false
			case cls == "String" && !o.SameAs(r.h.stringPrototype):
				// A String object (String.prototype has the class but is an ordinary object to goja).
				value, isObj = o.ToString(), false
			case cls == "Boolean" && et == reflectBool:
				value, isObj = vm.ToValue(o.Export()), false
			case cls == "Object" && et == reflectBigInt:
				value, isObj = vm.ToValue(o.Export()), false
			case cls == "Object" && et == reflectString:
				return false // a Symbol object: its symbol
			}
		}
	}
	if !isObj {
		return w.primitive(value)
	}
	if o.ClassName() == "RawJSON" {
		w.buf = append(w.buf, o.Get("rawJSON").String()...)
		return true
	}
	for _, a := range w.stack {
		if a.SameAs(o) {
			throwValue(vm.NewTypeError("Converting circular structure to JSON"))
		}
	}
	if _, fn := goja.AssertFunction(o); fn {
		return false
	}
	w.stack = append(w.stack, o)
	if w.isArray(o, proxy) {
		w.array(o, depth+1)
	} else {
		w.object(o, proxy, depth+1)
	}
	w.stack[len(w.stack)-1] = nil
	w.stack = w.stack[:len(w.stack)-1]
	return true
}

// primitive writes a value that is not an object.
func (w *argJSON) primitive(v goja.Value) bool {
	if goja.IsUndefined(v) {
		return false
	}
	if goja.IsNull(v) {
		w.buf = append(w.buf, "null"...)
		return true
	}
	if _, ok := v.(*goja.Symbol); ok {
		return false
	}
	if s, ok := v.(goja.String); ok {
		w.quote(s)
		return true
	}
	switch v.ExportType() {
	case reflectBool:
		w.buf = strconv.AppendBool(w.buf, v.ToBoolean())
	case reflectInt:
		w.buf = strconv.AppendInt(w.buf, v.ToInteger(), 10)
	case reflectFloat:
		if f := v.ToFloat(); math.IsNaN(f) || math.IsInf(f, 0) {
			w.buf = append(w.buf, "null"...)
		} else {
			w.buf = append(w.buf, v.String()...)
		}
	case reflectBigInt:
		throwValue(w.r.vm.NewTypeError("Do not know how to serialize a BigInt"))
	default:
		return false
	}
	return true
}

// isArray is goja's IsArray: through the prelude for a Proxy (it looks at the target, and throws
// for a revoked one).
func (w *argJSON) isArray(o *goja.Object, proxy bool) bool {
	if !proxy {
		return o.ClassName() == "Array"
	}
	return must(w.r.h.isArray(goja.Undefined(), o)).ToBoolean()
}

// array is goja's SerializeJSONArray (no gap).
func (w *argJSON) array(o *goja.Object, depth int) {
	n := toLength(o.Get("length"))
	if n == 0 {
		w.buf = append(w.buf, "[]"...)
		return
	}
	w.buf = append(w.buf, '[')
	for i := int64(0); i < n; i++ {
		if i > 0 {
			w.buf = append(w.buf, ',')
		}
		if !w.str(argKey{idx: int(i), arr: true}, o.Get(strconv.FormatInt(i, 10)), depth) {
			w.buf = append(w.buf, "null"...)
		}
	}
	w.buf = append(w.buf, ']')
}

// maxLength is goja's ToLength bound (2^53, its maxInt).
const maxLength = 1 << 53

// toLength is goja's ToLength: the integer of v clamped to [0, 2^53-1].
func toLength(v goja.Value) int64 {
	if v == nil {
		return 0
	}
	i := v.ToInteger()
	if i < 0 {
		return 0
	}
	if i >= maxLength {
		return maxLength - 1
	}
	return i
}

// object is goja's SerializeJSONObject (no gap, no property list): its own enumerable string keys,
// as Object.keys lists them.
func (w *argJSON) object(o *goja.Object, proxy bool, depth int) {
	w.buf = append(w.buf, '{')
	empty := true
	// An ordinary object's keys, read in Go (Keys lists what Object.keys does, running no code),
	// unless one is not valid UTF-16 (Go strings cannot hold it); any other object's through
	// Object.keys itself.
	if !proxy && o.ClassName() == "Object" && o.ExportType() == reflectMap {
		keys := o.Keys()
		plain := true
		for _, k := range keys {
			if !plainString(k) {
				plain = false
				break
			}
		}
		if plain {
			for _, k := range keys {
				off := len(w.buf)
				if !empty {
					w.buf = append(w.buf, ',')
				}
				w.quoteGo(k)
				w.buf = append(w.buf, ':')
				if w.str(argKey{s: k}, o.Get(k), depth) {
					empty = false
				} else {
					w.buf = w.buf[:off]
				}
			}
			w.buf = append(w.buf, '}')
			return
		}
	}
	r := w.r
	keys, ok := must(r.h.keys(goja.Undefined(), o)).(*goja.Object)
	if !ok {
		panic("coderuntime: Object.keys returned no array")
	}
	n := toLength(keys.Get("length"))
	for i := int64(0); i < n; i++ {
		kv := keys.Get(strconv.FormatInt(i, 10))
		ks, _ := kv.(goja.String)
		if ks == nil {
			panic("coderuntime: Object.keys returned a key that is not a string")
		}
		off := len(w.buf)
		if !empty {
			w.buf = append(w.buf, ',')
		}
		w.quote(ks)
		w.buf = append(w.buf, ':')
		var v goja.Value
		if s := ks.String(); plainString(s) {
			v = o.Get(s)
		} else {
			v = must(r.h.get(goja.Undefined(), o, kv))
		}
		if w.str(argKey{v: kv}, v, depth) {
			empty = false
		} else {
			w.buf = w.buf[:off]
		}
	}
	w.buf = append(w.buf, '}')
}

// plainString reports whether s is valid UTF-8 without U+FFFD: a Go string a JavaScript string
// converted to without loss (a lone surrogate becomes U+FFFD).
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			for _, c := range s[i:] {
				if c == utf8.RuneError {
					return false
				}
			}
			return true
		}
	}
	return true
}

const hexDigits = "0123456789abcdef"

// quote writes s as goja's JSON.stringify quotes it.
func (w *argJSON) quote(s goja.String) {
	if str := s.String(); plainString(str) {
		w.quoteGo(str)
		return
	}
	// A lone surrogate (escaped as \uXXXX) or U+FFFD: by UTF-16 unit.
	w.buf = append(w.buf, '"')
	n := s.Length()
	for i := 0; i < n; i++ {
		c := rune(s.CharAt(i))
		if c >= 0xD800 && c <= 0xDBFF && i+1 < n {
			if d := rune(s.CharAt(i + 1)); d >= 0xDC00 && d <= 0xDFFF {
				w.buf = utf8.AppendRune(w.buf, 0x10000+(c-0xD800)<<10+(d-0xDC00))
				i++
				continue
			}
		}
		if c >= 0xD800 && c <= 0xDFFF {
			w.buf = append(w.buf, '\\', 'u', hexDigits[c>>12], hexDigits[c>>8&0xF], hexDigits[c>>4&0xF], hexDigits[c&0xF])
			continue
		}
		w.quoteRune(c)
	}
	w.buf = append(w.buf, '"')
}

// quoteGo writes s (valid UTF-8) quoted.
func (w *argJSON) quoteGo(s string) {
	w.buf = append(w.buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			w.buf = append(w.buf, s[start:i]...)
			w.quoteRune(rune(c))
			start = i + 1
		}
	}
	w.buf = append(w.buf, s[start:]...)
	w.buf = append(w.buf, '"')
}

// quoteRune writes one character (not a surrogate) as goja's quote does.
func (w *argJSON) quoteRune(c rune) {
	switch c {
	case '"', '\\':
		w.buf = append(w.buf, '\\', byte(c))
	case '\b':
		w.buf = append(w.buf, '\\', 'b')
	case '\t':
		w.buf = append(w.buf, '\\', 't')
	case '\n':
		w.buf = append(w.buf, '\\', 'n')
	case '\f':
		w.buf = append(w.buf, '\\', 'f')
	case '\r':
		w.buf = append(w.buf, '\\', 'r')
	default:
		if c < 0x20 {
			w.buf = append(w.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		} else {
			w.buf = utf8.AppendRune(w.buf, c)
		}
	}
}
