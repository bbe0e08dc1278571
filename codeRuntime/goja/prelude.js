// The prelude of every run of the goja backend (see prelude.go). Evaluated in strict mode, it is a
// function of the nesting limit and the failure-text cap that builds, without leaving anything global, the helpers the host
// calls into the VM with, and installs the guarded JSON.stringify.
(function (MAX_DEPTH, MAX_TEXT) {
	"use strict";
	var nativeStringify = JSON.stringify, parse = JSON.parse, ErrorCtor = Error, RangeErrorCtor = RangeError, SyntaxErrorCtor = SyntaxError,
		defineProperty = Object.defineProperty, StringCtor = String, isArray = Array.isArray,
		apply = Reflect.apply,
		tagOf = Function.prototype.call.bind(Object.prototype.toString), hasOwn = Function.prototype.call.bind(Object.prototype.hasOwnProperty);
	// stringify is JSON.stringify through a replacer function: goja's native stringify never checks
	// for an interrupt and its cycle check is linear in the depth, so without a JavaScript call per
	// value a deep structure keeps it busy (quadratic, on a Go stack as deep as the value) beyond
	// every budget. The replacer makes each value an interrupt point and refuses values nested more
	// than MAX_DEPTH levels. A list replacer is emulated (plain objects keep the list's key order).
	// cur is the state of the stringify in progress (saved and restored around a nested one, which
	// a replacer or toJSON may start): one shared guard function instead of a closure per call,
	// which in goja costs more than the stringify of a small value.
	var cur = null, states = [], depth = 0;
	function guard(key, v) {
		var st = cur;
		if (st.fn !== null) v = apply(st.fn, this, [key, v]);
		if (v === null || typeof v !== "object") return v;
		var stack = st.stack, holder = this;
		while (stack.length > 0 && stack[stack.length - 1] !== holder) stack.pop();
		var list = st.list;
		if (list !== null && !isArray(v)) {
			var tag = tagOf(v);
			if (tag !== "[object Number]" && tag !== "[object String]" && tag !== "[object Boolean]" && tag !== "[object BigInt]") {
				var o = {};
				for (var j = 0; j < list.length; j++) {
					var p = list[j], pv = v[p];
					if (pv !== undefined) defineProperty(o, p, {value: pv, writable: true, enumerable: true, configurable: true});
				}
				v = o;
			}
		}
		stack.push(v);
		if (stack.length > MAX_DEPTH) throw new RangeErrorCtor("JSON.stringify: the value is nested more than " + MAX_DEPTH + " levels deep");
		return v;
	}
	function stringify(value, replacer, space) {
		// One state per nesting level, reused (a run stringifies every binding argument).
		var st = states[depth];
		if (st === undefined) {
			st = {fn: null, list: null, stack: []};
			states[depth] = st;
		}
		if (typeof replacer === "function") {
			st.fn = replacer;
		} else if (isArray(replacer)) {
			var list = [], seen = {};
			for (var i = 0; i < replacer.length; i++) {
				var it = replacer[i], t = typeof it, k;
				if (t === "string") k = it;
				else if (t === "number") k = StringCtor(it);
				else if (t === "object" && it !== null && (tagOf(it) === "[object String]" || tagOf(it) === "[object Number]")) k = StringCtor(it);
				else continue;
				if (!hasOwn(seen, k)) { seen[k] = true; list.push(k); }
			}
			st.list = list;
		}
		var prev = cur;
		cur = st;
		depth++;
		try {
			return nativeStringify(value, guard, space);
		} finally {
			depth--;
			cur = prev;
			st.fn = null;
			st.list = null;
			st.stack.length = 0;
		}
	}
	function errText(e) {
		var name = e.name, msg = e.message;
		name = name === undefined ? "Error" : StringCtor(name);
		msg = msg === undefined ? "" : StringCtor(msg);
		if (name.length > MAX_TEXT) name = name.slice(0, MAX_TEXT + 1);
		if (msg.length > MAX_TEXT) msg = msg.slice(0, MAX_TEXT + 1);
		return msg ? name + ": " + msg : name;
	}
	function fmt(v) {
		var t = typeof v;
		if (t === "string") return v;
		if (t === "undefined") return "undefined";
		if (t === "function") return "[Function: " + (v.name ? StringCtor(v.name) : "(anonymous)") + "]";
		if (t === "bigint") return StringCtor(v) + "n";
		if (t === "symbol") return v.toString();
		if (v === null || t !== "object") return StringCtor(v);
		if (v instanceof ErrorCtor) return errText(v);
		try { var s = stringify(v); if (s !== undefined) return s; } catch (e) {}
		try { return StringCtor(v); } catch (e) { return "[object]"; }
	}
	function format() {
		var s = "";
		for (var i = 0; i < arguments.length; i++) { if (i > 0) s += " "; s += fmt(arguments[i]); }
		return s;
	}
	// cap cuts a failure text to MAX_TEXT + 1 UTF-16 units (the host sees it is over and says so) before the host copies it (a thrown value
	// may be a string of a hundred megabytes).
	function cap(s) { return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT + 1) : s; }
	function describe(e) {
		try {
			if (e !== null && typeof e === "object" && (e instanceof ErrorCtor || typeof e.message === "string")) {
				var st = e.stack;
				return [cap(errText(e)), typeof st === "string" ? cap(st) : ""];
			}
			if (typeof e === "string") return ["Uncaught " + cap(e), ""];
			return ["Uncaught " + cap(fmt(e)), ""];
		} catch (x) {
			return ["Uncaught exception (not printable)", ""];
		}
	}
	function makeError(message, code, name, details) {
		var e = new ErrorCtor(message);
		if (code) defineProperty(e, "code", {value: code, writable: true, enumerable: true, configurable: true});
		if (name) defineProperty(e, "name", {value: name, writable: true, enumerable: false, configurable: true});
		if (details) {
			var keys = Object.keys(details);
			for (var i = 0; i < keys.length; i++) {
				var k = keys[i];
				if (k === "message" || k === "code" || k === "name" || k === "stack") continue;
				defineProperty(e, k, {value: String(details[k]), writable: true, enumerable: true, configurable: true});
			}
		}
		return e;
	}
	function rangeError(message) { return new RangeErrorCtor(message); }
	function syntaxError(message) { return new SyntaxErrorCtor(message); }
	// trampoline calls run (the host's function that evaluates the program) from JavaScript, so
	// the engine runs the jobs the program queued only when trampoline returns, after the host
	// learnt the program's promise: a job can then tell whether the program had settled.
	function trampoline(run) { run(); }
	// The operations of JSON.stringify the host's serialization of binding arguments (argjson.go)
	// performs here, having no exact Go equivalent: IsArray (of a Proxy), Object.keys (of an object
	// other than an ordinary one), and a property read with any key or of a primitive.
	var keys = Object.keys;
	function get(o, k) { return o[k]; }
	// The constructors of async and generator functions, which no global names.
	var intrinsics = [(async function () {}).constructor, (function* () {}).constructor];
	defineProperty(JSON, "stringify", {value: stringify, writable: true, enumerable: false, configurable: true});
	return [format, describe, makeError, stringify, parse, rangeError, syntaxError, trampoline, isArray, keys, get, intrinsics];
})
