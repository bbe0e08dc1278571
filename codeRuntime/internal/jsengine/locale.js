// Locale-sensitive built-ins, installed by both engines' preludes (see locale.go). Neither engine
// has locale data: left alone, they answer plausibly but wrongly ("1234.5" for en-US, "01/15/2024",
// "C" sorted before "a", "i" upper-cased to "I" in Turkish; goja compares strings right but
// ignores locales and options, so it keeps its own comparison behind the same checks). Here they
// answer as en-US does (Node, ICU) where that is exact, and throw a RangeError that says so for any
// other locale, option or input, never a wrong value.
(function (g, withCompare) {
	"use strict";
	var stringify = JSON.stringify, defineProperty = Object.defineProperty, apply = Reflect.apply, keys = Object.keys, isArray = Array.isArray,
		StringCtor = String, RangeErrorCtor = RangeError, TypeErrorCtor = TypeError, floor = Math.floor,
		numberValueOf = Number.prototype.valueOf, dateValueOf = Date.prototype.valueOf, strSlice = String.prototype.slice,
		strIndexOf = String.prototype.indexOf, strToLower = String.prototype.toLowerCase, strCharCodeAt = String.prototype.charCodeAt,
		regexpTest = RegExp.prototype.test, dp = Date.prototype,
		getters = {
			local: [dp.getFullYear, dp.getMonth, dp.getDate, dp.getHours, dp.getMinutes, dp.getSeconds],
			utc: [dp.getUTCFullYear, dp.getUTCMonth, dp.getUTCDate, dp.getUTCHours, dp.getUTCMinutes, dp.getUTCSeconds]
		};
	function unsupported(what) {
		throw new RangeErrorCtor(what + " is not supported by this runtime, which formats and compares for en-US only");
	}
	// checkLocale accepts no locale, "en" or "en-US" (or a list starting with one).
	function checkLocale(name, locales) {
		if (locales === undefined) return;
		var l = locales;
		if (isArray(l)) {
			if (l.length === 0) return;
			l = l[0];
		}
		l = StringCtor(l);
		if (l !== "en-US" && l !== "en") unsupported(name + " with the locale " + stringify(l));
	}
	function define(o, name, f) {
		var holder = {[name]() { return apply(f, this, arguments); }};
		defineProperty(holder[name], "length", {value: 0, configurable: true});
		defineProperty(o, name, {value: holder[name], writable: true, enumerable: false, configurable: true});
	}

	// Numbers: grouping by thousands, at most three fraction digits, rounded half away from zero
	// from the shortest decimal form of the number (as ICU does).
	function group(int) {
		var out = "";
		while (int.length > 3) {
			out = "," + apply(strSlice, int, [int.length - 3]) + out;
			int = apply(strSlice, int, [0, int.length - 3]);
		}
		return int + out;
	}
	function formatNumber(x) {
		if (x !== x) return "NaN";
		var neg = x < 0 || (x === 0 && 1 / x < 0);
		if (neg) x = -x;
		if (x === Infinity) return (neg ? "-" : "") + "\u221e";
		// The shortest decimal form, as digits and the position of the decimal point.
		var s = StringCtor(x), e = 0, i = apply(strIndexOf, s, ["e"]);
		if (i >= 0) {
			e = +apply(strSlice, s, [i + 1]);
			s = apply(strSlice, s, [0, i]);
		}
		var dot = apply(strIndexOf, s, ["."]), digits, point;
		if (dot < 0) { digits = s; point = s.length; } else { digits = apply(strSlice, s, [0, dot]) + apply(strSlice, s, [dot + 1]); point = dot; }
		point += e;
		// Keep three digits after the point, rounding the rest half up.
		var keep = point + 3;
		if (keep < 0) { digits = "0"; point = 1; }
		else if (keep < digits.length) {
			var up = apply(strCharCodeAt, digits, [keep]) >= 53, d = apply(strSlice, digits, [0, keep]), arr = [];
			for (var k = 0; k < d.length; k++) arr[k] = apply(strCharCodeAt, d, [k]) - 48;
			for (var j = arr.length - 1; up && j >= 0; j--) {
				if (arr[j] === 9) { arr[j] = 0; } else { arr[j]++; up = false; }
			}
			d = "";
			for (var m = 0; m < arr.length; m++) d += arr[m];
			if (up) { d = "1" + d; point++; }
			digits = d;
		}
		while (digits.length < point) digits += "0";
		var int = point <= 0 ? "0" : apply(strSlice, digits, [0, point]), frac = point <= 0 ? digits : apply(strSlice, digits, [point]);
		while (point < 0) { frac = "0" + frac; point++; }
		while (frac.length > 0 && apply(strCharCodeAt, frac, [frac.length - 1]) === 48) frac = apply(strSlice, frac, [0, frac.length - 1]);
		while (int.length > 1 && apply(strCharCodeAt, int, [0]) === 48) int = apply(strSlice, int, [1]);
		return (neg ? "-" : "") + group(int) + (frac.length > 0 ? "." + frac : "");
	}
	define(Number.prototype, "toLocaleString", function (locales, options) {
		var x = apply(numberValueOf, this, []);
		checkLocale("Number.prototype.toLocaleString", locales);
		if (options !== undefined) unsupported("Number.prototype.toLocaleString with options");
		return formatNumber(x);
	});

	// Dates: M/D/YYYY and h:mm:ss AM (a narrow no-break space before AM or PM), in the local time
	// zone or, with the option timeZone "UTC", in UTC.
	function zone(name, options) {
		if (options === undefined) return getters.local;
		if (options === null || typeof options !== "object") unsupported(name + " with options " + StringCtor(options));
		var ks = keys(options);
		for (var i = 0; i < ks.length; i++) {
			if (ks[i] !== "timeZone") unsupported(name + " with the option " + ks[i]);
		}
		var tz = options.timeZone;
		if (tz === undefined) return getters.local;
		tz = StringCtor(tz);
		if (tz === "UTC" || tz === "Etc/UTC") return getters.utc;
		unsupported(name + " with the time zone " + stringify(tz));
	}
	function parts(d, get) {
		var out = [];
		for (var i = 0; i < get.length; i++) out[i] = apply(get[i], d, []);
		if (out[0] < 1 || out[0] > 9999) unsupported("a date outside the years 1 to 9999");
		return out;
	}
	function dateText(p) { return (p[1] + 1) + "/" + p[2] + "/" + p[0]; }
	function timeText(p) {
		var h = p[3] % 12;
		if (h === 0) h = 12;
		return h + ":" + (p[4] < 10 ? "0" : "") + p[4] + ":" + (p[5] < 10 ? "0" : "") + p[5] + "\u202f" + (p[3] < 12 ? "AM" : "PM");
	}
	function dateMethod(name, format) {
		define(dp, name, function (locales, options) {
			var t = apply(dateValueOf, this, []);
			checkLocale("Date.prototype." + name, locales);
			var get = zone("Date.prototype." + name, options);
			if (t !== t) return "Invalid Date";
			return format(parts(this, get));
		});
	}
	dateMethod("toLocaleDateString", dateText);
	dateMethod("toLocaleTimeString", timeText);
	dateMethod("toLocaleString", function (p) { return dateText(p) + ", " + timeText(p); });

	// Arrays: the elements are formatted without the locales and options (the engines' own
	// toLocaleString is ECMAScript's, not ECMA-402's), which is right for en-US and no options only.
	var arrayToLocale = Array.prototype.toLocaleString;
	define(Array.prototype, "toLocaleString", function (locales, options) {
		if (this === null || this === undefined) throw new TypeErrorCtor("Array.prototype.toLocaleString called on null or undefined");
		checkLocale("Array.prototype.toLocaleString", locales);
		if (options !== undefined) unsupported("Array.prototype.toLocaleString with options");
		return apply(arrayToLocale, this, []);
	});

	// Case mapping: en-US's is the default one; another locale (Turkish maps "i" to "İ") throws.
	function caseMethod(name, native) {
		define(String.prototype, name, function (locales) {
			if (this === null || this === undefined) throw new TypeErrorCtor("String.prototype." + name + " called on null or undefined");
			var s = StringCtor(this);
			checkLocale("String.prototype." + name, locales);
			return apply(native, s, []);
		});
	}
	caseMethod("toLocaleUpperCase", String.prototype.toUpperCase);
	caseMethod("toLocaleLowerCase", strToLower);

	// localeCompare: goja's own order is right but ignores locales and options ("ä" after "z" in
	// Swedish, sensitivity, numeric): those throw, and the rest is goja's.
	if (!withCompare) {
		var nativeCompare = String.prototype.localeCompare;
		define(String.prototype, "localeCompare", function (that, locales, options) {
			if (this === null || this === undefined) throw new TypeErrorCtor("String.prototype.localeCompare called on null or undefined");
			var a = StringCtor(this), b = StringCtor(that);
			checkLocale("String.prototype.localeCompare", locales);
			if (options !== undefined) unsupported("String.prototype.localeCompare with options");
			return apply(nativeCompare, a, [b]);
		});
		return;
	}
	// QuickJS: ICU's order (letters case-insensitively, then lowercase first; spaces before digits
	// before letters) for text of ASCII letters, digits and spaces; other text throws.
	var plain = /^[A-Za-z0-9 ]*$/;
	define(String.prototype, "localeCompare", function (that, locales, options) {
		if (this === null || this === undefined) throw new TypeErrorCtor("String.prototype.localeCompare called on null or undefined");
		var a = StringCtor(this), b = StringCtor(that);
		checkLocale("String.prototype.localeCompare", locales);
		if (options !== undefined) unsupported("String.prototype.localeCompare with options");
		if (!apply(regexpTest, plain, [a]) || !apply(regexpTest, plain, [b])) {
			unsupported("String.prototype.localeCompare of text other than ASCII letters, digits and spaces");
		}
		var la = apply(strToLower, a, []), lb = apply(strToLower, b, []);
		if (la !== lb) return la < lb ? -1 : 1;
		if (a === b) return 0;
		return a > b ? -1 : 1; // the first difference is in case: lowercase ("a", 97) first
	});
})
