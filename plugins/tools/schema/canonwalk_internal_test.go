package schema

import (
	"reflect"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// FuzzCanonWalkAgreesWithDecodedWalk: the one-pass validator over
// canonical bytes (what every tool value goes through) reports exactly
// what the validator over the decoded value reports.
func FuzzCanonWalkAgreesWithDecodedWalk(f *testing.F) {
	schemas := []string{
		`{"type":"object","properties":{"n":{"type":["null","integer"],"minimum":1,"maximum":3},"l":{"type":"array","minItems":1,"maxItems":2,"items":{"enum":["a",1,null]}},"m":{"type":"object","additionalProperties":{"type":"number"}},"b":{"type":"string","contentEncoding":"base64"},"c":{"const":"x\\"y"},"never":false,"any":true},"required":["n","z"],"additionalProperties":false}`,
		`{"type":["array","string"],"items":{"type":"object","properties":{"k\\u00e9/~":{"type":"integer"}},"required":["k\\u00e9/~"]}}`,
	}
	values := []string{
		`{"n":4,"l":[],"m":{"x":"1"},"b":"!","never":1,"any":{"y":[]},"c":"x\"y","extra":[1,{"a":2}]}`,
		`{"n":null,"l":["a",1.0,null,true],"m":{},"b":"aGk=","z":1}`,
		`[{"ké/~":1.5},{},"s",3]`, `"str"`, `{}`, `[]`, `null`, `1e400`, `-0`,
	}
	for _, s := range schemas {
		for _, v := range values {
			f.Add(s, v)
		}
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		vs, err := CompileValueSchema([]byte(schema))
		if err != nil {
			return
		}
		canon, err := canonjson.Canonicalize([]byte(value), canonjson.Options{})
		if err != nil {
			return
		}
		decoded, err := decodeUseNumber(canon)
		if err != nil {
			t.Fatalf("canonical value does not decode: %v", err)
		}
		var want []Violation
		validateStructured(vs.root, decoded, "", &want)
		got := validateCanon(vs.root, canon)
		if len(want) > 0 {
			want = sortViolations(want)
		}
		if len(got) > 0 {
			got = sortViolations(got)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("schema %s value %s:\n canon %v\ndecoded %v", schema, canon, got, want)
		}
	})
}

// FuzzValidateEncodedIsValidate: the one-pass path for encoding/json's
// output returns exactly what canonicalizing and validating returns, for
// any bytes (it takes the fast path only when the bytes are canonical).
func FuzzValidateEncodedIsValidate(f *testing.F) {
	for _, v := range []string{
		`{"entries":[{"name":"a","size":2}],"total":5}`, `{"total":5,"entries":null}`,
		`{"a":1,"a":2}`, `{"m":{"b":1,"a":2}}`, `{"m":{"a":1,"a":1}}`, ` {}`, `{"s":"\u003c\u2028x\n"}`,
		`1.50`, `-0`, `1e21`, `123456789012345678`, `"\ud800"`, `tru`, `[[[[]]]]`, `{"s":"é\u007f"}`,
	} {
		f.Add(`{"type":"object","properties":{"entries":{"type":["null","array"],"items":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},"required":["name","size"],"additionalProperties":false}},"total":{"type":"integer"},"m":{"type":"object","additionalProperties":{"type":"integer"}}}}`, v)
		f.Add(`true`, v)
	}
	f.Fuzz(func(t *testing.T, schema, value string) {
		vs, err := CompileValueSchema([]byte(schema))
		if err != nil {
			return
		}
		c1, v1 := vs.Validate([]byte(value))
		c2, v2 := vs.ValidateEncoded([]byte(value))
		if string(c1) != string(c2) || !reflect.DeepEqual(v1, v2) {
			t.Fatalf("value %q:\nValidate        %s %v\nValidateEncoded %s %v", value, c1, v1, c2, v2)
		}
	})
}

// FuzzTagKeys: the struct tag parser that refuses unknown tags is total
// and agrees with reflect.StructTag: every key it lists is one Lookup
// finds, and a well-formed tag's keys are all listed.
func FuzzTagKeys(f *testing.F) {
	for _, s := range []string{`json:"a" jsonschema:"d"`, `json:"a,omitempty" required:"true"`, `a:"\"x\"" b:"y"`, `json:"a`, `:"x"`, ` x:"1"  y:"2" `, "k:\"\\u00e9\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tag string) {
		keys, err := tagKeys(tag)
		st := reflect.StructTag(tag)
		for _, k := range keys {
			if _, ok := st.Lookup(k); !ok {
				t.Fatalf("tag %q: key %q listed but Lookup does not find it", tag, k)
			}
		}
		_ = err
	})
}
