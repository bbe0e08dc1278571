package coderuntime

// quickjsPrelude is evaluated in every QuickJS VM before the program. It takes the host functions
// the runtime registered as globals (and deletes those globals), builds the console and the binding
// namespace, removes the globals no program may reach, and evaluates to the helpers the host calls
// into the VM with. Nothing it defines is reachable from the program except console, the namespace
// and the guards it installs on built-ins.
//
// The host functions:
//   - __qjsCall(name, argsJSON) starts a binding call and returns its id;
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
const quickjsPrelude = `(function (MAX_PENDING, MAX_RESULT, MAX_TEXT, MAX_ARRAY) {
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
		slice = String.prototype.slice, isArray = Array.isArray;

	function cap(s) {
		if (s.length <= MAX_TEXT) return s;
		return apply(slice, s, [0, MAX_TEXT]) + "... (" + (s.length - MAX_TEXT) + " more characters)";
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
			try { s = stringify(arg); } catch (e) {
				return rejected(name + ": the argument is not JSON-serializable: " + describe(e)[0], "INVALID_ARGUMENTS", "TypeError");
			}
			if (s === undefined) return rejected(name + ": the argument is not JSON-serializable (a function or symbol)", "INVALID_ARGUMENTS", "TypeError");
			args = s;
		}
		var id = hostCall(name, args);
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
		try { s = stringify(v); } catch (e) { return "3" + describe(e)[0]; }
		if (s === undefined) return "3";
		return "1" + s;
	}
	return [run, complete, outcome, namespace];
})`
