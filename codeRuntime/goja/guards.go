package goja

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dop251/goja"

	"github.com/dsh-go/dsh/codeRuntime/internal/jsengine"
)

// maxJSONParseLength bounds the text JSON.parse accepts, in UTF-16 units: goja parses it natively,
// where no interrupt reaches, into a value several times its size.
const maxJSONParseLength = 8 << 20

// removedGlobals are deleted from every runtime: binary buffers allocate gigabytes in one native
// call, which no watchdog can interrupt.
var removedGlobals = []string{
	"GoError", // goja's wrapper for Go errors; nothing the program needs
	"ArrayBuffer", "SharedArrayBuffer", "DataView",
	"Int8Array", "Uint8Array", "Uint8ClampedArray", "Int16Array", "Uint16Array",
	"Int32Array", "Uint32Array", "Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array",
}

// guardAmplifiers caps built-ins that build a huge string in one native call.
func (r *run) guardAmplifiers() {
	vm := r.vm
	max := int64(r.cfg.MaxStringLength)
	tooLong := func() { r.throwRange("Invalid string length") }
	wrap := func(proto *goja.Object, name string, check func(fc goja.FunctionCall)) {
		orig, ok := goja.AssertFunction(proto.Get(name))
		if !ok {
			return
		}
		_ = proto.DefineDataProperty(name, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			check(fc)
			v, err := orig(fc.This, fc.Arguments...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	strProto := vm.Get("String").ToObject(vm).Get("prototype").ToObject(vm)
	thisLen := func(fc goja.FunctionCall) int64 {
		if s, ok := fc.This.(goja.String); ok {
			return int64(s.Length())
		}
		return 1
	}
	wrap(strProto, "repeat", func(fc goja.FunctionCall) {
		n := fc.Argument(0).ToFloat()
		if n > 0 && !math.IsInf(n, 1) && float64(thisLen(fc))*math.Trunc(n) > float64(max) {
			tooLong()
		}
	})
	pad := func(fc goja.FunctionCall) {
		if n := fc.Argument(0).ToFloat(); n > float64(max) {
			tooLong()
		}
	}
	wrap(strProto, "padStart", pad)
	wrap(strProto, "padEnd", pad)
	r.guardStringBuilders(strProto, max)

	arrProto := vm.Get("Array").ToObject(vm).Get("prototype").ToObject(vm)
	r.guardNativeLoops(wrap, arrProto)
	wrap(arrProto, "join", func(fc goja.FunctionCall) {
		o, ok := fc.This.(*goja.Object)
		if !ok {
			return
		}
		n := o.Get("length")
		if n == nil {
			return
		}
		length := n.ToFloat()
		if !(length > 0) {
			return
		}
		sepLen := 1.0
		if sep := fc.Argument(0); !goja.IsUndefined(sep) {
			if s, ok := sep.(goja.String); ok {
				sepLen = float64(s.Length())
			}
		}
		total := (length - 1) * sepLen
		if total > float64(max) {
			tooLong()
		}
		if length <= jsengine.MaxArrayLength { // longer is refused by the length guard below this wrapper
			for i := int64(0); i < int64(length); i++ {
				if s, ok := o.Get(strconv.FormatInt(i, 10)).(goja.String); ok {
					total += float64(s.Length())
					if total > float64(max) {
						tooLong()
					}
				}
			}
		}
	})
}

// guardNativeLoops refuses, with a RangeError, the calls of built-ins that would loop in native code
// over a program-chosen length or depth (see maxArrayLength and maxNestingDepth).
func (r *run) guardNativeLoops(wrap func(*goja.Object, string, func(goja.FunctionCall)), arrProto *goja.Object) {
	vm := r.vm
	tooLong := func() {
		r.throwRange(fmt.Sprintf("the array or array-like object is longer than %d elements, the limit for this built-in", jsengine.MaxArrayLength))
	}
	checkLen := func(v goja.Value) {
		if s, ok := v.(goja.String); ok {
			if s.Length() > jsengine.MaxArrayLength {
				tooLong() // a string iterated per character (Array.from, Object.entries, ...)
			}
			return
		}
		o, ok := v.(*goja.Object)
		if !ok {
			return // other primitives have no length
		}
		if n := o.Get("length"); n != nil && n.ToFloat() > jsengine.MaxArrayLength {
			tooLong()
		}
	}
	thisLen := func(fc goja.FunctionCall) { checkLen(fc.This) }
	for _, name := range []string{
		"concat", "copyWithin", "entries", "every", "fill", "filter", "flat", "flatMap", "forEach", "includes",
		"indexOf", "join", "keys", "lastIndexOf", "map", "reduce", "reduceRight", "reverse", "shift", "slice",
		"some", "sort", "splice", "toLocaleString", "toReversed", "toSorted", "toSpliced", "toString", "unshift",
		"values", "with",
	} {
		wrap(arrProto, name, thisLen)
	}
	// Array.prototype[Symbol.iterator] is the same function as values: spread and for-of reach it.
	if values := arrProto.Get("values"); values != nil {
		_ = arrProto.DefineDataPropertySymbol(goja.SymIterator, values, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}
	isConcatSpreadable := func(o *goja.Object) bool {
		if o.ClassName() == "Array" {
			return true
		}
		v := o.GetSymbol(goja.SymIsConcatSpreadable)
		return v != nil && v.ToBoolean()
	}
	wrap(arrProto, "concat", func(fc goja.FunctionCall) {
		// The result holds every spreadable argument's elements: bound their sum.
		total := 0.0
		for _, a := range append([]goja.Value{fc.This}, fc.Arguments...) {
			if o, ok := a.(*goja.Object); ok && isConcatSpreadable(o) {
				checkLen(o)
				if n := o.Get("length"); n != nil {
					total += n.ToFloat()
				}
			} else {
				total++
			}
			if total > jsengine.MaxArrayLength {
				tooLong()
			}
		}
	})
	object := vm.Get("Object").ToObject(vm)
	for _, name := range []string{"entries", "values", "keys", "getOwnPropertyNames", "fromEntries"} {
		wrap(object, name, func(fc goja.FunctionCall) { checkLen(fc.Argument(0)) })
	}
	arrayCtor := vm.Get("Array").ToObject(vm)
	wrap(arrayCtor, "from", func(fc goja.FunctionCall) { checkLen(fc.Argument(0)) })
	funcProto := vm.Get("Function").ToObject(vm).Get("prototype").ToObject(vm)
	wrap(funcProto, "apply", func(fc goja.FunctionCall) { checkLen(fc.Argument(1)) })
	reflect := vm.Get("Reflect").ToObject(vm)
	wrap(reflect, "apply", func(fc goja.FunctionCall) { checkLen(fc.Argument(2)) })
	wrap(reflect, "construct", func(fc goja.FunctionCall) { checkLen(fc.Argument(1)) })

	// join, toString and toLocaleString recurse through nested arrays (toString calls the join the
	// array has, so every level passes a wrapper): count the depth.
	for _, name := range []string{"join", "toLocaleString"} {
		orig, ok := goja.AssertFunction(arrProto.Get(name))
		if !ok {
			continue
		}
		_ = arrProto.DefineDataProperty(name, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			if r.joinDepth >= r.maxDepth {
				r.throwRange(fmt.Sprintf("the array is nested more than %d levels deep", r.maxDepth))
			}
			r.joinDepth++
			defer func() { r.joinDepth-- }()
			v, err := orig(fc.This, fc.Arguments...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}

	json := vm.Get("JSON").ToObject(vm)
	wrap(json, "parse", func(fc goja.FunctionCall) {
		s, ok := fc.Argument(0).(goja.String)
		if !ok {
			return
		}
		if s.Length() > maxJSONParseLength {
			r.throwRange(fmt.Sprintf("JSON.parse: the text is %d characters, over the %d-character limit", s.Length(), maxJSONParseLength))
		}
		if jsengine.JSONTooDeep(s.String(), r.maxDepth) {
			r.throwJSONDepth()
		}
	})
}

// throwJSONDepth throws the RangeError of a JSON.parse refused for its depth.
func (r *run) throwJSONDepth() {
	r.throwRange(fmt.Sprintf("JSON.parse: the text is nested more than %d levels deep", r.maxDepth))
}

// guardCompilers bounds the text that eval, the Function constructors and RegExp compile at run
// time, as the program's own text is bounded before it runs (see jsengine.ScanSource): goja's parser recurses
// once per level on the Go stack and its compiler is quadratic in an operator chain, outside every
// budget. Text over the bounds throws a RangeError (a SyntaxError where the scan found it ambiguous);
// a BigInt literal or a Unicode property escape throws a SyntaxError, as in the program's text. The
// BigInt global is removed (a BigInt can then come from no literal and no call).
//
// eval becomes indirect: its text runs in the global scope, not in the caller's. The Function,
// AsyncFunction and GeneratorFunction constructors and RegExp are replaced by proxies that check their
// arguments (converted to strings once, so a toString cannot answer differently the second time) and
// call the original; each prototype's constructor property names the proxy, so `instanceof`,
// `f.constructor === Function` and `/x/.constructor === RegExp` keep working.
func (r *run) guardCompilers() {
	vm := r.vm
	global := vm.GlobalObject()
	_ = global.Delete("BigInt")

	check := func(text string) {
		scan, err := jsengine.ScanSource(text, r.maxDepth)
		if err != nil {
			if err.Limit {
				r.throwRange(err.Msg)
			}
			r.throwSyntax(err.Error())
		}
		if f := gojaRefusal(scan); f != nil {
			r.throwSyntax(f.Message)
		}
	}
	if orig, ok := goja.AssertFunction(global.Get("eval")); ok {
		eval := vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			s, ok := fc.Argument(0).(goja.String)
			if !ok {
				return fc.Argument(0)
			}
			check(s.String())
			v, err := orig(goja.Undefined(), s)
			if err != nil {
				throw(err)
			}
			return v
		})
		_ = global.DefineDataProperty("eval", eval, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	}

	// strings converts every argument to a string once; a throwing toString propagates.
	toStrings := func(args []goja.Value) []goja.Value {
		out := make([]goja.Value, len(args))
		for i, a := range args {
			out[i] = a.ToString()
		}
		return out
	}
	guardFunctionCtor := func(ctor *goja.Object) goja.Value {
		checkArgs := func(args []goja.Value) []goja.Value {
			args = toStrings(args)
			var text strings.Builder
			text.WriteString("(")
			for i, a := range args {
				if i == len(args)-1 {
					text.WriteString("\n) {\n")
				} else if i > 0 {
					text.WriteString(",")
				}
				text.WriteString(a.String())
			}
			text.WriteString("\n}")
			check(text.String())
			return args
		}
		pv := r.proxyCtor(ctor, checkArgs)
		if pv == nil {
			return nil
		}
		if proto, ok := ctor.Get("prototype").(*goja.Object); ok {
			_ = proto.DefineDataProperty("constructor", pv, goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		}
		return pv
	}
	if fn, ok := global.Get("Function").(*goja.Object); ok {
		if pv := guardFunctionCtor(fn); pv != nil {
			_ = global.DefineDataProperty("Function", pv, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
			if proto, ok := fn.Get("prototype").(*goja.Object); ok {
				_ = proto.DefineDataProperty("constructor", pv, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
			}
		}
	}
	guardFunctionCtor(r.h.asyncFunction)
	guardFunctionCtor(r.h.generatorFunction)

	if re, ok := global.Get("RegExp").(*goja.Object); ok {
		r.guardRegExp(re)
	}
}

// guardRegExp replaces RegExp with a proxy that refuses a Unicode property escape under the u or v
// flag (goja cannot match one: it would silently never match) and bounds the pattern's length.
func (r *run) guardRegExp(re *goja.Object) {
	vm := r.vm
	global := vm.GlobalObject()
	checkArgs := func(args []goja.Value) []goja.Value {
		args = append([]goja.Value(nil), args...)
		var pattern, flags string
		if len(args) > 0 {
			if o, ok := args[0].(*goja.Object); ok && o.ClassName() == "RegExp" {
				pattern = o.Get("source").String()
				flags = o.Get("flags").String()
			} else if !goja.IsUndefined(args[0]) {
				args[0] = args[0].ToString()
				pattern = args[0].String()
			}
		}
		if len(args) > 1 && !goja.IsUndefined(args[1]) {
			args[1] = args[1].ToString()
			flags = args[1].String()
		}
		if len(pattern) > jsengine.MaxSourceBytes {
			r.throwRange(fmt.Sprintf("the regular expression is %d bytes, over the %d-byte limit", len(pattern), jsengine.MaxSourceBytes))
		}
		if strings.ContainsAny(flags, "uv") && hasUnicodePropertyEscape(pattern) {
			r.throwSyntax("Invalid regular expression: " + unicodePropertyUnsupported)
		}
		return args
	}
	pv := r.proxyCtor(re, checkArgs)
	if pv == nil {
		return
	}
	_ = global.DefineDataProperty("RegExp", pv, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	if proto, ok := re.Get("prototype").(*goja.Object); ok {
		_ = proto.DefineDataProperty("constructor", pv, goja.FLAG_TRUE, goja.FLAG_FALSE, goja.FLAG_TRUE)
		_ = proto.Delete("compile") // Annex B's recompile in place would bypass the check
	}
}

// hasUnicodePropertyEscape reports whether a regular expression pattern contains \p{ or \P{ (an
// escaped backslash does not count).
func hasUnicodePropertyEscape(pattern string) bool {
	for i := 0; i+2 < len(pattern); i++ {
		if pattern[i] != '\\' {
			continue
		}
		if (pattern[i+1] == 'p' || pattern[i+1] == 'P') && pattern[i+2] == '{' {
			return true
		}
		i++
	}
	return false
}

// throwSyntax throws a SyntaxError with msg in the program.
func (r *run) throwSyntax(msg string) {
	v, err := r.h.syntaxError(goja.Undefined(), r.vm.ToValue(msg))
	if err != nil {
		throw(err)
	}
	panic(v)
}

// proxyCtor returns a proxy of the constructor ctor whose call and construct pass the arguments
// through checkArgs (which throws to refuse them, or returns the arguments to use) to ctor, or nil when
// ctor is not a constructor. goja cannot use a proxy as the right side of instanceof, so ctor gets an
// own Symbol.hasInstance that answers for the proxy as ctor would.
func (r *run) proxyCtor(ctor *goja.Object, checkArgs func([]goja.Value) []goja.Value) goja.Value {
	vm := r.vm
	callable, ok1 := goja.AssertFunction(ctor)
	construct, ok2 := goja.AssertConstructor(ctor)
	hasInstance, ok3 := goja.AssertFunction(ctor.GetSymbol(goja.SymHasInstance))
	if !ok1 || !ok2 || !ok3 {
		return nil
	}
	pv := vm.ToValue(vm.NewProxy(ctor, &goja.ProxyTrapConfig{
		Apply: func(_ *goja.Object, this goja.Value, args []goja.Value) goja.Value {
			v, err := callable(this, checkArgs(args)...)
			if err != nil {
				throw(err)
			}
			return v
		},
		Construct: func(_ *goja.Object, args []goja.Value, _ *goja.Object) *goja.Object {
			o, err := construct(nil, checkArgs(args)...)
			if err != nil {
				throw(err)
			}
			return o
		},
	}))
	_ = ctor.DefineDataPropertySymbol(goja.SymHasInstance, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
		this := fc.This
		if this == pv {
			this = ctor
		}
		v, err := hasInstance(this, fc.Argument(0))
		if err != nil {
			throw(err)
		}
		return v
	}), goja.FLAG_FALSE, goja.FLAG_FALSE, goja.FLAG_TRUE)
	return pv
}

// guardStringBuilders caps String.prototype.concat (which sizes its result before copying) and
// replace / replaceAll with a string replacement (whose result can be the replacement times every
// match) by their result's length, before they allocate.
func (r *run) guardStringBuilders(strProto *goja.Object, max int64) {
	vm := r.vm
	tooLong := func() { r.throwRange("Invalid string length") }
	if orig, ok := goja.AssertFunction(strProto.Get("concat")); ok {
		_ = strProto.DefineDataProperty("concat", vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			// Convert once (a toString could answer differently the second time), then sum.
			args := make([]goja.Value, len(fc.Arguments))
			total := int64(0)
			if s, ok := fc.This.(goja.String); ok {
				total = int64(s.Length())
			}
			for i, a := range fc.Arguments {
				s := a.ToString()
				args[i] = s
				n := int64(len(s.String())) // at least its UTF-16 length for ASCII, at most 3x
				if str, ok := s.(goja.String); ok {
					n = int64(str.Length())
				}
				if total += n; total > max {
					tooLong()
				}
			}
			v, err := orig(fc.This, args...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
	for _, name := range []string{"replace", "replaceAll"} {
		orig, ok := goja.AssertFunction(strProto.Get(name))
		if !ok {
			continue
		}
		_ = strProto.DefineDataProperty(name, vm.ToValue(func(fc goja.FunctionCall) goja.Value {
			s, sok := fc.This.(goja.String)
			repl, rok := fc.Argument(1).(goja.String)
			if sok && rok {
				n := int64(s.Length())
				// Each match inserts at most the replacement with every $ pattern expanded to the
				// whole string ($&, $`, $').
				per := int64(repl.Length()) + int64(strings.Count(repl.String(), "$"))*n
				matches := n + 1
				if pat, ok := fc.Argument(0).(goja.String); ok {
					matches = 1
					if name == "replaceAll" {
						if p := pat.String(); p != "" {
							matches = int64(strings.Count(s.String(), p))
						}
					}
				}
				if n+matches*per > max {
					tooLong()
				}
			}
			v, err := orig(fc.This, fc.Arguments...)
			if err != nil {
				throw(err)
			}
			return v
		}), goja.FLAG_TRUE, goja.FLAG_TRUE, goja.FLAG_FALSE)
	}
}
