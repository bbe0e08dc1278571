package tools_test

import (
	"encoding/json"
	"fmt"
	"math"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// Execution.Arg hands plugin code the package's own Value: its kinds and
// typed reads are strict (a string "true" is not true, a string "12" is
// not a number), so a policy cannot be fooled by a value of another type.
func TestValueReadsAreStrictAndTyped(t *testing.T) {
	for _, tc := range []struct {
		raw   string
		kind  tools.ValueKind
		str   string
		b     bool
		i     int64
		float float64
	}{
		{``, tools.KindMissing, "", false, 0, 0},
		{`null`, tools.KindNull, "", false, 0, 0},
		{`true`, tools.KindBool, "true", true, 0, 0},
		{`false`, tools.KindBool, "false", false, 0, 0},
		{`"true"`, tools.KindString, "true", false, 0, 0},
		{`"12"`, tools.KindString, "12", false, 0, 0},
		{`"a\"b\u00e9"`, tools.KindString, `a"bé`, false, 0, 0},
		{`-12.75`, tools.KindNumber, "-12.75", false, -12, -12.75},
		{`1e300`, tools.KindNumber, "1e300", false, math.MaxInt64, 1e300},
		{`[1,2]`, tools.KindArray, "[1,2]", false, 0, 0},
		{`{"a":1}`, tools.KindObject, `{"a":1}`, false, 0, 0},
	} {
		v := tools.Value{Raw: tc.raw}
		if v.Kind() != tc.kind || v.String() != tc.str || v.Bool() != tc.b || v.Int() != tc.i || v.Float() != tc.float || v.Exists() != (tc.raw != "") {
			t.Errorf("%s: kind %v string %q bool %v int %d float %v", tc.raw, v.Kind(), v.String(), v.Bool(), v.Int(), v.Float())
		}
	}
	v := tools.Value{Raw: `{"a.b":{"":[10,{"c":"d"}]}}`}
	if got := v.Get("a.b", "", "1", "c").String(); got != "d" {
		t.Errorf("Get = %q", got)
	}
	if v.Get("a", "b").Exists() || v.Get("a.b", "", "01").Exists() {
		t.Error("Get matched a path that is not there")
	}
	var m map[string]any
	if err := v.Get("a.b").Decode(&m); err != nil || len(m) != 1 {
		t.Errorf("Decode: %v %v", m, err)
	}
	if tools.KindArray.String() != "array" || tools.ValueKind(200).String() != "invalid" {
		t.Error("kind names")
	}
}

// FuzzValue: for any lossless JSON value (what canonical arguments hold),
// Value's kind, string and number reads agree with encoding/json.
func FuzzValue(f *testing.F) {
	for _, s := range []string{`null`, `true`, `"a\u00e9\"\\"`, `-0.5`, `12`, `[1,{"a":2}]`, `{"":1,"a.b":[true]}`, `"\ud83d\ude00"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		canon, err := canonjson.Canonicalize([]byte(raw), canonjson.Options{})
		if err != nil {
			return
		}
		v := tools.Value{Raw: string(canon)}
		var want any
		if err := json.Unmarshal(canon, &want); err != nil {
			t.Fatalf("canonical %s does not decode: %v", canon, err)
		}
		kind := map[string]tools.ValueKind{"<nil>": tools.KindNull, "bool": tools.KindBool, "float64": tools.KindNumber, "string": tools.KindString, "map[string]interface {}": tools.KindObject, "[]interface {}": tools.KindArray}[fmt.Sprintf("%T", want)]
		if want == nil {
			kind = tools.KindNull
		}
		if v.Kind() != kind {
			t.Fatalf("%s: kind %v, want %v", canon, v.Kind(), kind)
		}
		switch w := want.(type) {
		case string:
			if v.String() != w {
				t.Fatalf("%s: String %q, want %q", canon, v.String(), w)
			}
		case float64:
			if v.Float() != w {
				t.Fatalf("%s: Float %v, want %v", canon, v.Float(), w)
			}
		case bool:
			if v.Bool() != w {
				t.Fatalf("%s: Bool %v, want %v", canon, v.Bool(), w)
			}
		}
	})
}
