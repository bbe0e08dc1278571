package quickjs

// quickjsPrelude is evaluated in every QuickJS VM before the program. It takes the host functions
// the runtime registered as globals (and deletes those globals), builds the console and the binding
// namespace, removes the globals no program may reach, and evaluates to the helpers the host calls
// into the VM with. Nothing it defines is reachable from the program except console, the namespace
// and the guards it installs on built-ins.
//
// The host functions:
//   - __qjsCall(name, argsJSON) starts a binding call and returns its id, or 0 when the program's
//     promise has settled (the call is refused: no binding call reaches the host after that);
//   - __qjsLog(level, text) appends a log line (it aborts the run past MaxLogBytes);
//   - __qjsSettled() tells the host the program's promise settled.
//
// The helpers, an array in this order:
//   - run(promise): watches the program's promise;
//   - complete(id, ok, payload, code, name, detailsJSON): settles binding call id; ok with an empty
//     payload resolves to undefined, ok with a payload resolves to JSON.parse(payload), not ok
//     rejects with an Error of message payload;
//   - outcome(): a string whose first character says how the program ended: "0" pending, "1" then
//     the JSON of the returned value (nothing for undefined), "2" then message NUL stack of the
//     thrown value, "3" then why the value is not serializable, "4" then the length of a returned
//     string too long for MaxResultBytes;
//   - namespace(name, names): installs the namespace; false when name is taken.
const quickjsPrelude = `(function (MAX_PENDING, MAX_RESULT, MAX_TEXT, MAX_ARRAY, MAX_STRING) {
	"use strict";
	var g = globalThis;
	var hostCall = g.__qjsCall, hostLog = g.__qjsLog, hostSettled = g.__qjsSettled;
	delete g.__qjsCall; delete g.__qjsLog; delete g.__qjsSettled;
	var REMOVED = ["ArrayBuffer", "SharedArrayBuffer", "DataView", "Atomics", "Int8Array", "Uint8Array",
		"Uint8ClampedArray", "Int16Array", "Uint16Array", "Int32Array", "Uint32Array", "Float16Array",
		"Float32Array", "Float64Array", "BigInt64Array", "BigUint64Array"];
	for (var i = 0; i < REMOVED.length; i++) delete g[REMOVED[i]];

	var stringify = JSON.stringify, parse = JSON.parse, ErrorCtor = Error, RangeErrorCtor = RangeError,
		TypeErrorCtor = TypeError, PromiseCtor = Promise, StringCtor = String, defineProperty = Object.defineProperty,
		keys = Object.keys, apply = Reflect.apply, then = Promise.prototype.then, MapCtor = Map,
		mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete,
		slice = String.prototype.slice, isArray = Array.isArray, floor = Math.floor;

	function cap(s) {
		if (s.length <= MAX_TEXT) return s;
		var keep = MAX_TEXT > 64 ? MAX_TEXT - 64 : MAX_TEXT;
		return apply(slice, s, [0, keep]) + "... (" + (s.length - keep) + " more characters)";
	}
	function errText(e) {
		var name = e.name, msg = e.message;
		name = name === undefined ? "Error" : StringCtor(name);
		msg = msg === undefined ? "" : StringCtor(msg);
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
	function describe(e) {
		try {
			if (e !== null && typeof e === "object" && (e instanceof ErrorCtor || typeof e.message === "string")) {
				var st = e.stack;
				return [cap(errText(e)), typeof st === "string" ? cap(st) : ""];
			}
			return [cap("Uncaught " + fmt(e)), ""];
		} catch (x) {
			return ["Uncaught exception (not printable)", ""];
		}
	}
	function makeError(message, code, name, details) {
		var e = new ErrorCtor(message);
		if (code) defineProperty(e, "code", {value: code, writable: true, enumerable: true, configurable: true});
		if (name) defineProperty(e, "name", {value: name, writable: true, enumerable: false, configurable: true});
		if (details) {
			var ks = keys(details);
			for (var i = 0; i < ks.length; i++) {
				var k = ks[i];
				if (k === "message" || k === "code" || k === "name" || k === "stack") continue;
				defineProperty(e, k, {value: StringCtor(details[k]), writable: true, enumerable: true, configurable: true});
			}
		}
		return e;
	}

	// Guards. QuickJS checks for an interrupt only between instructions and in some built-ins (not
	// in the array ones): a built-in that loops natively over a program-chosen length keeps the VM
	// busy beyond every budget, so those refuse a length above MAX_ARRAY, like the goja backend's.
	var arrProto = Array.prototype, defineData = function (o, name, f) {
		defineProperty(o, name, {value: f, writable: true, enumerable: false, configurable: true});
	};
	function tooLong() {
		throw new RangeErrorCtor("the array or array-like object is longer than " + MAX_ARRAY + " elements, the limit for this built-in");
	}
	function checkLen(o) {
		if (o !== null && (typeof o === "object" || typeof o === "function") && o.length > MAX_ARRAY) tooLong();
	}
	function guard(o, name, check) {
		var orig = o[name];
		if (typeof orig !== "function") return;
		var holder = {[name]() { check(this, arguments); return apply(orig, this, arguments); }};
		defineProperty(holder[name], "length", {value: orig.length, configurable: true});
		defineData(o, name, holder[name]);
	}
	var thisLen = function (self) { checkLen(self); };
	var ARRAY_LOOPS = ["concat", "copyWithin", "entries", "every", "fill", "filter", "find", "findIndex", "findLast",
		"findLastIndex", "flat", "flatMap", "forEach", "includes", "indexOf", "join", "keys", "lastIndexOf", "map",
		"reduce", "reduceRight", "reverse", "shift", "slice", "some", "sort", "splice", "toLocaleString",
		"toReversed", "toSorted", "toSpliced", "toString", "unshift", "values", "with"];
	for (var i = 0; i < ARRAY_LOOPS.length; i++) guard(arrProto, ARRAY_LOOPS[i], thisLen);
	defineProperty(arrProto, Symbol.iterator, {value: arrProto.values, writable: true, enumerable: false, configurable: true});
	var isConcatSpreadable = Symbol.isConcatSpreadable;
	// concat's result is as long as its receiver and arguments together: their total is capped,
	// not each one.
	guard(arrProto, "concat", function (self, args) {
		var total = 0;
		function add(a) {
			if (a !== null && typeof a === "object" && (isArray(a) || a[isConcatSpreadable])) {
				checkLen(a);
				total += a.length;
			} else {
				total++;
			}
			if (total > MAX_ARRAY) tooLong();
		}
		add(self);
		for (var i = 0; i < args.length; i++) add(args[i]);
	});
	guard(Array, "from", function (self, args) { checkLen(args[0]); });
	guard(JSON, "stringify", function (self, args) { checkLen(args[0]); });

	// String.prototype.replace and replaceAll keep going after the VM ran out of memory (each later
	// match retries the allocation), so one call of a big replaceAll holds the VM for minutes: a
	// string pattern with a string replacement (without $ patterns) whose result would be longer
	// than MAX_STRING is refused up front. The count stops as soon as the bound is passed.
	var strProto = String.prototype, indexOf = strProto.indexOf;
	function checkReplace(all) {
		return function (self, args) {
			var pat = args[0], rep = args[1];
			if (typeof pat !== "string" || typeof rep !== "string" || apply(indexOf, rep, ["$"]) >= 0) return;
			if (self === null || self === undefined) return;
			var str = StringCtor(self), n = str.length, pl = pat.length, rl = rep.length;
			if (rl <= pl) return;
			var maxMatches = all ? (pl === 0 ? n + 1 : floor(n / pl)) : 1;
			if (n + maxMatches * (rl - pl) <= MAX_STRING) return;
			var total = n, at = 0;
			for (;;) {
				var i = apply(indexOf, str, [pat, at]);
				if (i < 0) return;
				total += rl - pl;
				if (total > MAX_STRING) throw new RangeErrorCtor("Invalid string length");
				if (!all) return;
				at = i + (pl === 0 ? 1 : pl);
				if (at > n) return;
			}
		};
	}
	guard(strProto, "replace", checkReplace(false));
	guard(strProto, "replaceAll", checkReplace(true));

	// The string amplifiers: a result longer than MAX_STRING (Config.MaxStringLength) is a
	// RangeError, as in the goja engine. Each converts its receiver and arguments once, then calls
	// the original with the converted values.
	function strLenError() { throw new RangeErrorCtor("Invalid string length"); }
	function thisString(self, name) {
		if (self === null || self === undefined || typeof self === "symbol") throw new TypeErrorCtor("String.prototype." + name + " called on " + (typeof self === "symbol" ? "a symbol" : "null or undefined"));
		return StringCtor(self);
	}
	function replaceMethod(o, name, f) {
		var holder = {[name]() { return apply(f, this, arguments); }};
		defineProperty(holder[name], "length", {value: o[name].length, configurable: true});
		defineData(o, name, holder[name]);
	}
	var origRepeat = strProto.repeat, origPadStart = strProto.padStart, origPadEnd = strProto.padEnd,
		origStrConcat = strProto.concat, origJoin = arrProto.join;
	replaceMethod(strProto, "repeat", function (count) {
		var s = thisString(this, "repeat"), n = NumberCtor(count);
		if (n > 0 && n !== Infinity && s.length * floor(n) > MAX_STRING) strLenError();
		return apply(origRepeat, s, [n]);
	});
	function pad(orig, name) {
		return function (maxLength, fill) {
			var s = thisString(this, name), n = NumberCtor(maxLength);
			if (n > MAX_STRING && n > s.length) strLenError();
			var args = [n];
			if (arguments.length > 1 && fill !== undefined) args[1] = StringCtor(fill);
			return apply(orig, s, args);
		};
	}
	replaceMethod(strProto, "padStart", pad(origPadStart, "padStart"));
	replaceMethod(strProto, "padEnd", pad(origPadEnd, "padEnd"));
	replaceMethod(strProto, "concat", function () {
		var s = thisString(this, "concat"), total = s.length, args = [];
		for (var i = 0; i < arguments.length; i++) {
			var a = StringCtor(arguments[i]);
			total += a.length;
			if (total > MAX_STRING) strLenError();
			args[i] = a;
		}
		return apply(origStrConcat, s, args);
	});
	// join: the separators and the string elements together, as in the goja engine (another
	// element's text is its toString's, each capped on its own; a nested array's is its join's).
	replaceMethod(arrProto, "join", function (sep) {
		var o = this;
		if (o === null || o === undefined) throw new TypeErrorCtor("Array.prototype.join called on null or undefined");
		checkLen(o);
		var n = NumberCtor(o.length);
		n = n > 0 ? floor(n) : 0;
		var sepStr = sep === undefined ? "," : StringCtor(sep);
		var total = n > 0 ? (n - 1) * sepStr.length : 0;
		if (total > MAX_STRING) strLenError();
		for (var i = 0; i < n; i++) {
			var e = o[i];
			if (typeof e === "string" && (total += e.length) > MAX_STRING) strLenError();
		}
		return apply(origJoin, o, [sepStr]);
	});

	// BigInt.asUintN and asIntN: QuickJS answers some calls wrongly (asUintN(64, -1n) is -1n), so
	// they are computed here; a result beyond the largest BigInt is a RangeError.
	var BigIntCtor = BigInt, NumberCtor = Number, MAX_BIGINT_BITS = 1 << 20;
	function toIndex(v) {
		var n = NumberCtor(v);
		n = n !== n ? 0 : (n < 0 ? -floor(-n) : floor(n));
		if (n < 0 || n > 9007199254740991) throw new RangeErrorCtor("invalid index");
		return n;
	}
	function toBigInt(v) {
		if (typeof v === "number") throw new TypeErrorCtor("cannot convert a number to a BigInt");
		return BigIntCtor(v);
	}
	function asUintN(bits, v) {
		bits = toIndex(bits); v = toBigInt(v);
		if (bits === 0) return 0n;
		if (bits >= MAX_BIGINT_BITS) {
			if (v >= 0n) return v;
			throw new RangeErrorCtor("BigInt is too large");
		}
		var m = 1n << BigIntCtor(bits), r = v % m;
		return r < 0n ? r + m : r;
	}
	function asIntN(bits, v) {
		bits = toIndex(bits); v = toBigInt(v);
		if (bits === 0) return 0n;
		if (bits >= MAX_BIGINT_BITS) return v;
		var m = 1n << BigIntCtor(bits), r = v % m;
		if (r < 0n) r += m;
		return r >= (m >> 1n) ? r - m : r;
	}
	defineData(BigIntCtor, "asUintN", {asUintN(bits, bigint) { return asUintN(bits, bigint); }}.asUintN);
	defineData(BigIntCtor, "asIntN", {asIntN(bits, bigint) { return asIntN(bits, bigint); }}.asIntN);

	// WeakRef: QuickJS frees a target that only a WeakRef references at once, so
	// new WeakRef({}).deref() is undefined in the same job, where the language keeps the target
	// alive (KeepDuringJob). Each WeakRef made here keeps its target alive as long as the WeakRef
	// itself lives, which the language allows (when a target is collected is up to the engine).
	var NativeWeakRef = g.WeakRef;
	if (typeof NativeWeakRef === "function") {
		var construct = Reflect.construct, keepAlive = new WeakMap(), weakMapSet = WeakMap.prototype.set;
		var WeakRefCtor = function WeakRef(target) {
			if (new.target === undefined) throw new TypeErrorCtor("Constructor WeakRef requires 'new'");
			var w = construct(NativeWeakRef, [target], new.target);
			apply(weakMapSet, keepAlive, [w, target]);
			return w;
		};
		WeakRefCtor.prototype = NativeWeakRef.prototype;
		defineProperty(WeakRefCtor, "prototype", {writable: false, enumerable: false, configurable: false});
		defineProperty(NativeWeakRef.prototype, "constructor", {value: WeakRefCtor, writable: true, enumerable: false, configurable: true});
		defineProperty(g, "WeakRef", {value: WeakRefCtor, writable: true, enumerable: false, configurable: true});
	}

	/*LOCALE*/
	var console = {};
	var LEVELS = ["log", "info", "warn", "error", "debug"];
	for (var i = 0; i < LEVELS.length; i++) {
		(function (level) {
			var o = {[level]() { hostLog(level, apply(format, undefined, arguments)); }};
			defineProperty(console, level, {value: o[level], writable: true, enumerable: true, configurable: true});
		})(LEVELS[i]);
	}
	defineProperty(g, "console", {value: console, writable: true, enumerable: false, configurable: true});

	// Binding calls.
	var calls = new MapCtor(), pending = 0, settled = false, state = 0, outcomeValue;
	function rejected(msg, code, name) {
		var e = makeError(msg, code, name);
		return new PromiseCtor(function (_, reject) { reject(e); });
	}
	function call(ns, name, arg) {
		if (settled) return rejected(ns + "." + name + ": coderuntime: run settled", "RUN_SETTLED", "Error");
		if (pending >= MAX_PENDING) return rejected(name + ": too many pending binding calls (limit " + MAX_PENDING + ")", "TOO_MANY_CALLS", "RangeError");
		var args = "{}";
		if (arg !== undefined) {
			var s;
			try { checkLen(arg); s = stringify(arg); } catch (e) {
				return rejected(name + ": the argument is not JSON-serializable: " + describe(e)[0], "INVALID_ARGUMENTS", "TypeError");
			}
			if (s === undefined) return rejected(name + ": the argument is not JSON-serializable (a function or symbol)", "INVALID_ARGUMENTS", "TypeError");
			args = s;
		}
		var id = hostCall(name, args);
		if (id === 0) return rejected(ns + "." + name + ": coderuntime: run settled", "RUN_SETTLED", "Error");
		pending++;
		var resolveFn, rejectFn;
		var p = new PromiseCtor(function (res, rej) { resolveFn = res; rejectFn = rej; });
		apply(mapSet, calls, [id, [resolveFn, rejectFn]]);
		return p;
	}
	function complete(id, ok, payload, code, name, details) {
		var c = apply(mapGet, calls, [id]);
		if (c === undefined) return;
		apply(mapDelete, calls, [id]);
		pending--;
		if (!ok) {
			c[1](makeError(payload, code, name, details ? parse(details) : undefined));
			return;
		}
		if (payload === "") { c[0](undefined); return; }
		var v;
		try { v = parse(payload); } catch (e) {
			c[1](makeError(name + ": the binding returned invalid JSON", "INVALID_RESULT", ""));
			return;
		}
		c[0](v);
	}
	function namespace(ns, names) {
		if (ns in g) return false;
		var o = {};
		for (var i = 0; i < names.length; i++) {
			(function (name) {
				var holder = {[name](arg) { return call(ns, name, arg); }};
				defineProperty(o, name, {value: holder[name], writable: true, enumerable: true, configurable: true});
			})(names[i]);
		}
		defineProperty(g, ns, {value: o, writable: true, enumerable: false, configurable: true});
		return true;
	}

	function run(p) {
		apply(then, p, [function (v) {
			settled = true; state = 1; outcomeValue = v; hostSettled();
		}, function (e) {
			settled = true; state = 2; outcomeValue = e; hostSettled();
		}]);
	}
	function outcome() {
		if (state === 0) return "0";
		var v = outcomeValue;
		if (state === 2) { var d = describe(v); return "2" + d[0] + "\u0000" + d[1]; }
		if (v === undefined) return "1";
		if (typeof v === "string" && v.length + 2 > MAX_RESULT) return "4" + v.length;
		var s;
		try { checkLen(v); s = stringify(v); } catch (e) { return "3" + describe(e)[0]; }
		if (s === undefined) return "3";
		return "1" + s;
	}
	return [run, complete, outcome, namespace];
})`
