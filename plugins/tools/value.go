package tools

import (
	"encoding/json"
	"math"

	"github.com/tidwall/gjson"
)

// Value is one JSON value read from a call's arguments ([Execution.Arg]):
// its JSON text, exactly as in the canonical arguments. The zero Value is
// a value that does not exist (a key that matched nothing). Reading a
// Value decodes only that value, never the rest of the arguments.
type Value struct {
	// Raw is the value's JSON text; "" when it does not exist.
	Raw string
}

// ValueKind is the JSON type of a [Value].
type ValueKind uint8

// The kinds of a [Value].
const (
	KindMissing ValueKind = iota // the value does not exist
	KindNull
	KindBool
	KindNumber
	KindString
	KindObject
	KindArray
)

var kindNames = [...]string{"missing", "null", "boolean", "number", "string", "object", "array"}

// String returns the kind's name: "missing", "null", "boolean", "number",
// "string", "object" or "array".
func (k ValueKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "invalid"
}

func (v Value) parse() gjson.Result { return gjson.Parse(v.Raw) }

// Exists reports whether the value exists.
func (v Value) Exists() bool { return v.Raw != "" }

// Kind returns the value's JSON type.
func (v Value) Kind() ValueKind {
	if v.Raw == "" {
		return KindMissing
	}
	r := v.parse()
	switch r.Type {
	case gjson.Null:
		return KindNull
	case gjson.False, gjson.True:
		return KindBool
	case gjson.Number:
		return KindNumber
	case gjson.String:
		return KindString
	}
	if r.IsArray() {
		return KindArray
	}
	return KindObject
}

// String returns a string value's text (unescaped); "" for a null or
// missing value; the JSON text of any other value (a number as written,
// true, false, an object or array whole).
func (v Value) String() string {
	switch r := v.parse(); r.Type {
	case gjson.String:
		return r.Str
	case gjson.Null:
		return ""
	default: // numbers as written, true, false, objects and arrays whole
		return r.Raw
	}
}

// Bool reports whether the value is JSON true (a string "true" or a
// number is not).
func (v Value) Bool() bool { return v.Kind() == KindBool && v.parse().Type == gjson.True }

// Int returns a number's integer part (toward zero, clamped to the int64
// range); 0 for anything that is not a number.
func (v Value) Int() int64 {
	if v.Kind() != KindNumber {
		return 0
	}
	f := v.parse().Num
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	// Canonical arguments hold integers up to 2^53-1 exactly; the float
	// is exact for them.
	return int64(f)
}

// Float returns a number as a float64; 0 for anything that is not a
// number.
func (v Value) Float() float64 {
	if v.Kind() != KindNumber {
		return 0
	}
	return v.parse().Num
}

// Get reads a value inside v by keys, as [Execution.Arg] reads the
// arguments: each key is a property name, matched exactly whatever
// characters it holds, or, where the value is an array, an element index
// in decimal without sign or leading zero. With no keys it returns v.
func (v Value) Get(keys ...string) Value {
	if v.Raw == "" {
		return Value{}
	}
	r := v.parse()
	for _, k := range keys {
		if r = argChild(r, k); !r.Exists() {
			return Value{}
		}
	}
	return Value{Raw: r.Raw}
}

// Decode unmarshals the value into dst (a pointer), as encoding/json
// does; a missing value decodes as null (dst is left unchanged).
func (v Value) Decode(dst any) error {
	raw := v.Raw
	if raw == "" {
		raw = "null"
	}
	return json.Unmarshal([]byte(raw), dst)
}

// argChild returns the member key of object v or element key of array v.
func argChild(v gjson.Result, key string) gjson.Result {
	switch {
	case v.IsObject():
		if key == "" {
			// gjson paths cannot name the empty key.
			var found gjson.Result
			v.ForEach(func(k, val gjson.Result) bool {
				if k.Str == "" {
					found = val
					return false
				}
				return true
			})
			return found
		}
		return v.Get(gjson.Escape(key))
	case v.IsArray():
		if !isIndex(key) {
			return gjson.Result{}
		}
		return v.Get(key)
	}
	return gjson.Result{}
}

// isIndex reports whether key is an array index as JSON Pointer writes one:
// "0", or decimal digits without a leading zero (and short enough to be an
// int).
func isIndex(key string) bool {
	if key == "" || len(key) > 9 || len(key) > 1 && key[0] == '0' {
		return false
	}
	for i := 0; i < len(key); i++ {
		if key[i] < '0' || key[i] > '9' {
			return false
		}
	}
	return true
}
