package canonjson

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestIsCanonical pins the fast path's answer on inputs near the edges of
// the canonical form: each "yes" is Canonicalize's fixed point, each "no" is
// something Canonicalize changes or rejects.
func TestIsCanonical(t *testing.T) {
	yes := []string{
		`{}`, `[]`, `""`, `0`, `-1`, `9007199254740991`, `-9007199254740991`, `1.5`, `1e+21`, `1e-7`,
		`0.000001`, `1.7976931348623157e+308`, `true`, `false`, `null`, `"\"\\\b\f\n\r\t"`,
		`"\u0000\u001f\u000b"`, "\"h\u00e9llo \u4e16\u754c \u2028\x7f\"", "\"\xef\xbf\xbd\"",
		`{"a":[1,2.5,{"b":{}}],"c":"x"}`, `{"a":{"a":1},"b":{"a":2}}`,
		strings.Repeat("[", 64) + strings.Repeat("]", 64),
	}
	no := []string{
		``, ` {}`, `{} `, `{ }`, `[1, 2]`, `-0`, `01`, `1.0`, `1e2`, `1E-7`, `1.50`, `9007199254740992`,
		`1e400`, `1e17`, `"\/"`, `"\u0041"`, `"\u001F"`, `"\u000a"`, `"\ud83d\ude00"`, "\"\xff\"",
		"\"a\nb\"", `{"a":1,"a":2}`, `{"a":{"x":1,"x":2}}`, `[1,]`, `{"a":1,}`, `tru`, `nul`, `"x`,
		strings.Repeat("[", 65) + strings.Repeat("]", 65), `{"a":1}{}`, `NaN`,
	}
	for _, s := range yes {
		if !IsCanonical([]byte(s), Options{}) {
			t.Errorf("IsCanonical(%q) = false, want true", s)
		}
		if out, err := canonicalize([]byte(s), DefaultMaxDepth); err != nil || string(out) != s {
			t.Errorf("test case %q is not canonical: %q, %v", s, out, err)
		}
	}
	for _, s := range no {
		if IsCanonical([]byte(s), Options{}) {
			t.Errorf("IsCanonical(%q) = true, want false", s)
		}
	}
	// Past the key budget the scan gives up; Canonicalize still decides.
	var b strings.Builder
	b.WriteByte('{')
	for i := range maxFastKeys + 1 {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strings.Repeat("x", i) + `":1`)
	}
	b.WriteByte('}')
	many := []byte(b.String())
	if IsCanonical(many, Options{}) {
		t.Errorf("IsCanonical accepted %d keys, past its budget of %d", maxFastKeys+1, maxFastKeys)
	}
	if out, err := Canonicalize(many, Options{}); err != nil || !bytes.Equal(out, many) {
		t.Errorf("Canonicalize(%d keys) = %q, %v", maxFastKeys+1, out, err)
	}
}

// TestCanonicalizeCopiesCanonicalInput: the fast path returns a copy, as
// the slow path does, so a caller that changes its input afterwards does
// not change the canonical bytes it was given.
func TestCanonicalizeCopiesCanonicalInput(t *testing.T) {
	in := []byte(`{"a":1}`)
	for _, f := range []func([]byte, Options) ([]byte, error){Canonicalize, CanonicalizeObject} {
		out, err := f(in, Options{})
		if err != nil {
			t.Fatal(err)
		}
		in[2] = 'b'
		if string(out) != `{"a":1}` {
			t.Fatalf("output aliases the input: %q", out)
		}
		in[2] = 'a'
	}
}

// FuzzFastPathAgrees checks the scan-only fast path against the full
// scanner: whatever IsCanonical accepts, the full scanner accepts and
// returns unchanged; and whatever the full scanner returns unchanged,
// IsCanonical accepts unless it holds more keys than the fast scan's budget.
func FuzzFastPathAgrees(f *testing.F) {
	for _, s := range canonSeeds() {
		f.Add([]byte(s))
	}
	for _, s := range []string{`{"a":{"a":1},"b":[1.5,1e+21,"\u001f\n"]}`, `"\u000a"`, `-0`, `1e-7`, `{"a":1,"a":2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		fast := IsCanonical(in, Options{})
		out, err := canonicalize(in, DefaultMaxDepth)
		same := err == nil && bytes.Equal(out, in)
		if fast && !same {
			t.Fatalf("IsCanonical(%q) = true, but the full scanner gives %q, %v", in, out, err)
		}
		if same && !fast && bytes.Count(in, []byte{'"'}) < 2*maxFastKeys {
			t.Fatalf("IsCanonical(%q) = false for the full scanner's fixed point", in)
		}
		if fast && !json.Valid(in) {
			t.Fatalf("IsCanonical accepted invalid JSON %q", in)
		}
		obj, oerr := CanonicalizeObject(in, Options{})
		if fast && in[0] == '{' && (oerr != nil || !bytes.Equal(obj, in)) {
			t.Fatalf("CanonicalizeObject(%q) = %q, %v", in, obj, oerr)
		}
	})
}

// BenchmarkCanonicalize200B compares, for a ~200-byte argument object
// already in canonical form, the fast path, the full scanner and
// encoding/json's validity check.
func BenchmarkCanonicalize200B(b *testing.B) {
	in, err := canonicalize([]byte(benchArgs), DefaultMaxDepth)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		f    func() bool
	}{
		{"IsCanonical", func() bool { return IsCanonical(in, Options{}) }},
		{"CanonicalizeObject", func() bool { _, err := CanonicalizeObject(in, Options{}); return err == nil }},
		{"full-scanner", func() bool { _, err := canonicalize(in, DefaultMaxDepth); return err == nil }},
		{"json.Valid", func() bool { return json.Valid(in) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				if !bc.f() {
					b.Fatal("rejected")
				}
			}
		})
	}
}
