package canonjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestP3_CanonicalAccepts(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"whitespace removed", " { \"a\" : [ 1 , 2 ] ,\n\t\"b\":true } ", `{"a":[1,2],"b":true}`},
		{"key order preserved", `{"b":1,"a":2}`, `{"b":1,"a":2}`},
		{"scalars", `[null,true,false,"x"]`, `[null,true,false,"x"]`},
		{"one point zero", `1.0`, `1`},
		{"minus zero", `-0`, `0`},
		{"minus zero float", `-0.0e5`, `0`},
		{"hundred", `100`, `100`},
		{"hundred exp", `1e2`, `100`},
		{"1e21", `1e21`, `1e+21`},
		{"just below safe", `9.007199254740991e15`, `9007199254740991`},
		{"1e-7", `1e-7`, `1e-7`},
		{"1e-6", `0.000001`, `0.000001`},
		{"fraction", `1.50`, `1.5`},
		{"negative exp form", `-1.25E+30`, `-1.25e+30`},
		{"shortest round trip", `0.1000000000000000055511151231257827`, `0.1`},
		{"max safe integer", `9007199254740991`, `9007199254740991`},
		{"min safe integer", `-9007199254740991`, `-9007199254740991`},
		{"big float exponent form", `1.5e21`, `1.5e+21`},
		{"underflow to zero", `1e-400`, `0`},
		{"max float", `1.7976931348623157e308`, `1.7976931348623157e+308`},
		{"string escapes", `"\u0041\/\b\f\n\r\t\u0001\u001f\"\\"`, `"A/\b\f\n\r\t\u0001\u001f\"\\"`},
		{"no html escaping", `"<a>&\u003c"`, `"<a>&<"`},
		{"surrogate pair", `"\ud83d\ude00"`, `"😀"`},
		{"raw utf8", `"héllo 世界"`, `"héllo 世界"`},
		{"u2028 raw", `"\u2028"`, "\"\u2028\""},
		{"del raw", `"\u007f"`, "\"\x7f\""},
		{"empty containers", `[{},[],""]`, `[{},[],""]`},
		{"nul escape", `"\u0000"`, `"\u0000"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonicalize([]byte(tc.in), Options{})
			if err != nil {
				t.Fatalf("Canonicalize(%q): %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonicalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestP3_CanonicalRejects(t *testing.T) {
	deep := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	cases := []struct {
		name, in   string
		opts       Options
		path       string
		reasonPart string
	}{
		{"syntax", `{"a":}`, Options{}, "/a", "invalid character"},
		{"empty", ``, Options{}, "", "unexpected end"},
		{"trailing data", `{} {}`, Options{}, "", "after the top-level value"},
		{"trailing comma", `[1,]`, Options{}, "/1", "invalid character"},
		{"leading zero", `01`, Options{}, "", "leading zero"},
		{"nan", `NaN`, Options{}, "", "invalid character"},
		{"bom", "\ufeff{}", Options{}, "", "invalid character"},
		{"invalid utf8", "{\"a\":[\"\xff\"]}", Options{}, "/a/0", "invalid UTF-8"},
		{"invalid utf8 key", "{\"\xc3\":1}", Options{}, "", "invalid UTF-8"},
		{"raw control char", "\"a\nb\"", Options{}, "", "control character"},
		{"bad escape", `"\x"`, Options{}, "", "invalid escape"},
		{"lone high surrogate", `{"k":"\ud800"}`, Options{}, "/k", "lone surrogate"},
		{"lone low surrogate", `["\udc00"]`, Options{}, "/0", "lone surrogate"},
		{"high then non-low", `"\ud800\u0041"`, Options{}, "", "lone surrogate"},
		{"duplicate key", `{"a":{"x":1,"x":2}}`, Options{}, "/a/x", "duplicate object key"},
		{"duplicate key after unescape", `{"a":1,"\u0061":2}`, Options{}, "/a", "duplicate object key"},
		{"duplicate key many", `{"a":1,"b":1,"c":1,"d":1,"e":1,"f":1,"g":1,"h":1,"i":1,"j":1,"a":2}`, Options{}, "/a", "duplicate object key"},
		{"unsafe integer", `{"id":9007199254740992}`, Options{}, "/id", "exceeds 2^53-1"},
		{"unsafe negative integer", `[-9007199254740993]`, Options{}, "/0", "exceeds 2^53-1"},
		{"huge integer", `123456789012345678901234567890`, Options{}, "", "exceeds 2^53-1"},
		{"unsafe integer in exponent form", `{"x":1e17}`, Options{}, "/x", "beyond 2^53-1"},
		{"unsafe integer with fraction", `9007199254740993.0`, Options{}, "", "beyond 2^53-1"},
		{"float overflow", `{"x":1e400}`, Options{}, "/x", "overflows float64"},
		{"negative float overflow", `-1.8e308`, Options{}, "", "overflows float64"},
		{"too deep default", deep, Options{}, "/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0", "nesting deeper"},
		{"too deep option", `{"a":{"b":{}}}`, Options{MaxDepth: 2}, "/a/b", "nesting deeper"},
		{"too large", `"abcdef"`, Options{MaxBytes: 4}, "", "larger than"},
		{"pointer escaping", `{"a/b":{"c~d":[1,]}}`, Options{}, "/a~1b/c~0d/1", "invalid character"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Canonicalize([]byte(tc.in), tc.opts)
			if err == nil {
				t.Fatalf("Canonicalize(%q) = %q, want error", tc.in, out)
			}
			if !errors.Is(err, ErrNotLossless) {
				t.Fatalf("error %v does not wrap ErrNotLossless", err)
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("error %T is not *Error", err)
			}
			if ce.Path != tc.path {
				t.Errorf("Path = %q, want %q (%v)", ce.Path, tc.path, err)
			}
			if !strings.Contains(ce.Reason, tc.reasonPart) {
				t.Errorf("Reason = %q, want it to contain %q", ce.Reason, tc.reasonPart)
			}
			if ce.Offset < 0 || ce.Offset > len(tc.in) {
				t.Errorf("Offset %d out of range", ce.Offset)
			}
		})
	}
}

func TestP3_CanonicalErrorOffset(t *testing.T) {
	_, err := Canonicalize([]byte(`{"a":1,"a":2}`), Options{})
	var ce *Error
	if !errors.As(err, &ce) || ce.Offset != 7 {
		t.Fatalf("got %v, want duplicate reported at byte 7", err)
	}
	if got, want := err.Error(), "non-lossless JSON at /a (byte 7): duplicate object key (readers disagree on first-wins vs last-wins)"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
}

func TestP3_CanonicalizeObject(t *testing.T) {
	for _, in := range []string{"", "  \n", "null", " null "} {
		got, err := CanonicalizeObject([]byte(in), Options{})
		if err != nil || string(got) != "{}" {
			t.Errorf("CanonicalizeObject(%q) = %q, %v; want {}", in, got, err)
		}
	}
	got, err := CanonicalizeObject([]byte(` {"z": 1.0, "a": [ ] } `), Options{})
	if err != nil || string(got) != `{"z":1,"a":[]}` {
		t.Errorf("got %q, %v", got, err)
	}
	for _, in := range []string{`[]`, `"x"`, `1`, `true`, ` [1]`, `nul`, `{"a":1,"a":1}`} {
		if _, err := CanonicalizeObject([]byte(in), Options{}); !errors.Is(err, ErrNotLossless) {
			t.Errorf("CanonicalizeObject(%q) err = %v, want ErrNotLossless", in, err)
		}
	}
}

func TestP3_CanonicalizeValue(t *testing.T) {
	got, err := CanonicalizeValue(map[string]any{"b": 1.0, "a": "<&>", "c": []int{1}})
	if err != nil || string(got) != `{"a":"<&>","b":1,"c":[1]}` {
		t.Fatalf("got %q, %v", got, err)
	}
	if _, err := CanonicalizeValue(int64(1) << 60); !errors.Is(err, ErrNotLossless) {
		t.Errorf("2^60: err = %v, want ErrNotLossless", err)
	}
	if _, err := CanonicalizeValue(math.NaN()); err == nil {
		t.Error("NaN: want error")
	}
	if _, err := CanonicalizeValue(make(chan int)); err == nil {
		t.Error("chan: want error")
	}
	// encoding/json would write invalid UTF-8 as U+FFFD: refused, while a
	// real U+FFFD is kept.
	if _, err := CanonicalizeValue([]any{"x\xfe"}); !errors.Is(err, ErrNotLossless) {
		t.Errorf("CanonicalizeValue(invalid UTF-8) err = %v, want ErrNotLossless", err)
	}
	if b, err := CanonicalizeValue(map[string]any{"a": []string{"é", "\ufffd"}}); err != nil || string(b) != `{"a":["é","`+"\ufffd"+`"]}` {
		t.Errorf("valid value: %s, %v", b, err)
	}
}

// TestP3_ESNumberFormatting compares against known JavaScript outputs.
func TestP3_ESNumberFormatting(t *testing.T) {
	cases := map[float64]string{
		1:                      "1",
		-1.5:                   "-1.5",
		123456789:              "123456789",
		0.30000000000000004:    "0.30000000000000004",
		1e21:                   "1e+21",
		1.5e21:                 "1.5e+21",
		1e-6:                   "0.000001",
		1.5e-7:                 "1.5e-7",
		5e-324:                 "5e-324",
		math.MaxFloat64:        "1.7976931348623157e+308",
		123e-20:                "1.23e-18",
		999999999999999999999:  "1e+21",
		100000000000000000000:  "100000000000000000000",
		0.000123:               "0.000123",
		2.5:                    "2.5",
		9007199254740992:       "9007199254740992",
		-0.0000001:             "-1e-7",
		12345678901234567890.0: "12345678901234567000",
	}
	for f, want := range cases {
		if got := string(AppendNumber(nil, f)); got != want {
			t.Errorf("AppendNumber(%v) = %q, want %q", f, got, want)
		}
	}
}

// TestAppendNumberWritesNonFiniteAsNull: NaN and the infinities have no
// JSON form; AppendNumber writes null, as JSON.stringify does, never a
// token that is not JSON.
func TestAppendNumberWritesNonFiniteAsNull(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		if got := string(AppendNumber([]byte("x"), f)); got != "xnull" {
			t.Errorf("AppendNumber(%v) = %q, want null appended", f, got)
		}
	}
}

// FuzzAppendNumber checks that every finite number is written as JSON that
// reads back as the same float64 and that Canonicalize leaves unchanged
// when it accepts it (it refuses integers beyond 2^53-1).
func FuzzAppendNumber(f *testing.F) {
	for _, x := range []float64{0, 1, -1.5, 1e21, 1e-7, 5e-324, math.MaxFloat64, 9007199254740993, 0.1} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		out := AppendNumber(nil, x)
		if math.IsNaN(x) || math.IsInf(x, 0) {
			if string(out) != "null" {
				t.Fatalf("AppendNumber(%v) = %q, want null", x, out)
			}
			return
		}
		back, err := strconv.ParseFloat(string(out), 64)
		if err != nil || back != x || !json.Valid(out) {
			t.Fatalf("AppendNumber(%v) = %q, reads back as %v (%v)", x, out, back, err)
		}
		if canon, err := Canonicalize(out, Options{}); err == nil && !bytes.Equal(canon, out) {
			t.Fatalf("Canonicalize(%q) = %q, not unchanged", out, canon)
		}
	})
}

func canonSeeds() []string {
	return []string{
		`{}`, `{"a":[1,2.5,-0,1e21,"x\u0000y",true,null,{"b":{}}]}`, `"\ud83d\ude00"`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `"\ud800"`, `"\udc00x"`, "\"\xff\"",
		`9007199254740992`, `-9007199254740993`, `1e400`, `-1e309`, `[1,]`, `{} x`,
		strings.Repeat("[", 70) + strings.Repeat("]", 70), `01`, `1.`, `-`, `"\u12"`,
		"\ufeff1", `0.1`, `1E-7`, `123.456e+10`, `"<>&\u2028"`, "\"\t\"", ` `,
	}
}

// FuzzCanonicalize checks that accepted input canonicalizes to valid,
// idempotent JSON that decodes to the same value as the input.
func FuzzCanonicalize(f *testing.F) {
	for _, s := range canonSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := Canonicalize(in, Options{})
		if err != nil {
			var ce *Error
			if !errors.As(err, &ce) || !errors.Is(err, ErrNotLossless) {
				t.Fatalf("error %v is not a *Error wrapping ErrNotLossless", err)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("output %q of %q is not valid JSON", out, in)
		}
		again, err := Canonicalize(out, Options{})
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", in, out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("accepted %q but encoding/json rejects it: %v", in, err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("output %q rejected by encoding/json: %v", out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("value changed: %q (%#v) -> %q (%#v)", in, a, out, b)
		}
		if _, err := CanonicalizeObject(in, Options{}); err == nil && out[0] != '{' && string(out) != "null" {
			t.Fatalf("CanonicalizeObject accepted non-object %q", in)
		}
	})
}

func BenchmarkCanonicalize(b *testing.B) {
	in := []byte(benchArgs)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonicalize(in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchArgs is a typical ~200-byte tool-call argument object.
const benchArgs = `{"path": "/home/user/project/src/main.go", "offset": 120, "limit": 400,
 "mode": "text", "options": {"follow": true, "encoding": "utf-8"}, "tags": ["a", "b", "c"], "note": "read the \"main\" file"}`
