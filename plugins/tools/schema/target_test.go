package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// fz* are argument types with every key-matching rule encoding/json has:
// tags, Go names, invalid tag names, "-" and "-,", case and Unicode
// folding, promotion from embedded structs (by value, by pointer,
// unexported), shadowing and ties that drop a field. Every field is a
// string with omitempty, so marshalling a decoded value shows exactly
// which fields a key reached.
type fzKeys struct {
	Path    string `json:"path,omitempty"`
	Kind    string `json:"kind,omitempty"`
	Secret  string `json:"secret,omitempty"`
	Upper   string `json:"UPPER,omitempty"`
	Mixed   string `json:",omitempty"`
	Strasse string `json:"straße,omitempty"`
	Sigma   string `json:"σ,omitempty"`
	//lint:ignore SA5008 a field named "-" is one of the rules under test
	Dash    string `json:"-,omitempty"`
	Skipped string `json:"-"`
	//lint:ignore SA5008 an invalid tag name (the Go name is used instead) is one of the rules under test
	BadTag  string `json:"a\\b,omitempty"`
	Shadow  string `json:"shadow,omitempty"`
	Dup     string `json:"dup,omitempty"`
	DUP     string `json:"DUP,omitempty"`
	ignored string //lint:ignore U1000 an unexported field is never decoded
	FzInner
	*FzPtr
	fzHidden
	FzTieA
	FzTieB
}

type FzInner struct {
	Inner  string `json:"inner,omitempty"`
	Shadow string `json:"shadow,omitempty"`
}

type FzPtr struct {
	Pointed string `json:"pointed,omitempty"`
}

type fzHidden struct {
	Promoted string `json:"promoted,omitempty"`
}

type FzTieA struct {
	Tie string `json:",omitempty"`
}

type FzTieB struct {
	Tie string `json:",omitempty"`
}

// fzOuter reaches fzKeys through maps, slices, arrays and pointers.
type fzOuter struct {
	M  map[string]fzKeys    `json:"m"`
	LM []map[string]*fzKeys `json:"lm"`
	A  [1]fzKeys            `json:"a"`
}

// fieldOf reports which JSON field name the key reaches when encoding/json
// decodes {key: "v"} into fzKeys ("\x00none" for none).
func fieldOf(t *testing.T, key string) string {
	t.Helper()
	var x fzKeys
	if err := json.Unmarshal(object(key, "v"), &x); err != nil {
		t.Fatalf("decode %q: %v", key, err)
	}
	got := marshalled(t, x)
	for name := range got {
		return name
	}
	return "\x00none"
}

func marshalled(t *testing.T, x fzKeys) map[string]string {
	t.Helper()
	b, err := json.Marshal(x)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// object writes {"k1":"v1",...} with the keys in the order given.
func object(kv ...string) []byte {
	b := []byte{'{'}
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, ',')
		}
		b = canonjson.AppendString(b, kv[i])
		b = append(b, ':')
		b = canonjson.AppendString(b, kv[i+1])
	}
	return append(b, '}')
}

// keysRefused is what the Target refuses in args: the violations of
// [schema.ValidateArgsWith] for a spec accepting any object.
func keysRefused(tg *schema.Target, args []byte) []schema.Violation {
	return schema.ValidateArgsWith(nil, args, schema.ArgsOptions{Target: tg})
}

// checkKeysAgainstEncodingJSON is the G1 property for one object of
// fzKeys, checked against encoding/json itself: the Target refuses it
// exactly when a key is not a field's exact name but encoding/json decodes
// it into a field; and when it does not, what a reader matching names
// exactly sees for each field is what the decoded value holds.
func checkKeysAgainstEncodingJSON(t *testing.T, keys ...string) {
	t.Helper()
	kv := make([]string, 0, 2*len(keys))
	for i, k := range keys {
		kv = append(kv, k, fmt.Sprint("v", i))
	}
	args := object(kv...)
	refused := keysRefused(schema.TargetFor[fzKeys](), args)
	exact := map[string]string{} // what a policy reading exact names sees
	var folded []string
	for i, k := range keys {
		switch f := fieldOf(t, k); {
		case f == k:
			exact[k] = kv[2*i+1]
		case f != "\x00none":
			folded = append(folded, k)
		}
	}
	if len(folded) > 0 {
		var paths, want []string
		for _, v := range refused {
			paths = append(paths, v.Path)
		}
		for _, k := range folded {
			want = append(want, "/"+strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1"))
		}
		slices.Sort(want)
		if !slices.Equal(paths, want) {
			t.Fatalf("keys %q: encoding/json folds %q, Target refused %v", keys, folded, refused)
		}
		return
	}
	if refused != nil {
		t.Fatalf("keys %q: nothing folds, but Target refused %v", keys, refused)
	}
	var x fzKeys
	if err := json.Unmarshal(args, &x); err != nil {
		t.Fatal(err)
	}
	if got := marshalled(t, x); !maps.Equal(got, exact) {
		t.Fatalf("keys %q: the Go value holds %v, a reader of exact names sees %v", keys, got, exact)
	}
	// The same object below a map, a slice of maps of pointers and an
	// array is refused exactly when it is refused alone.
	nested := fmt.Sprintf(`{"m":{"k":%s},"lm":[{"k":%s}],"a":[%s]}`, args, args, args)
	if vs := keysRefused(schema.TargetFor[fzOuter](), []byte(nested)); vs != nil {
		t.Fatalf("nested %s: %v", nested, vs)
	}
}

// TestG1_TargetMatchesEncodingJSONKeyRules pins each key-matching rule of
// encoding/json (Go 1.26) against the real decoder.
func TestG1_TargetMatchesEncodingJSONKeyRules(t *testing.T) {
	for _, keys := range [][]string{
		{"path"}, {"PATH"}, {"path", "PATH"}, {"PATH", "path"}, {"Path"},
		{"kind"}, {"\u212aind"}, {"KIND"},
		{"secret"}, {"\u017fecret"}, {"SECRET"},
		{"UPPER"}, {"upper"},
		{"Mixed"}, {"mixed"},
		{"straße"}, {"STRASSE"}, {"STRAẞE"}, {"Straße"},
		{"σ"}, {"Σ"}, {"ς"},
		{"-"}, {"Skipped"}, {"skipped"},
		{"BadTag"}, {"a\\b"}, {"badtag"},
		{"shadow"}, {"SHADOW"}, {"Shadow"},
		{"dup", "DUP"}, {"Dup"}, {"dUP"},
		{"ignored"}, {"inner"}, {"INNER"}, {"pointed"}, {"Pointed"}, {"promoted"}, {"PROMOTED"},
		{"Tie"}, {"tie"}, {"TIE"}, {"FzTieA"}, {"FzInner"},
		{"unknown"}, {""}, {"path", "unknown"},
	} {
		checkKeysAgainstEncodingJSON(t, keys...)
	}
}

// FuzzTargetKeys checks the G1 property for fuzzed pairs of keys against
// encoding/json itself.
func FuzzTargetKeys(f *testing.F) {
	for _, seed := range [][2]string{
		{"path", "PATH"}, {"\u212aind", "kind"}, {"secret", "\u017fecret"}, {"tie", "TIE"},
		{"shadow", "Shadow"}, {"dup", "dUp"}, {"-", "a\\b"}, {"σ", "ς"}, {"promoted", "Promoted"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if !utf8.ValidString(a) || !utf8.ValidString(b) || a == b {
			return // canonical arguments never carry these
		}
		checkKeysAgainstEncodingJSON(t, a, b)
	})
}

type g1Ints struct {
	IDs   map[int8]string       `json:"ids"`
	U     map[uint]string       `json:"u"`
	Addr  map[netip.Addr]string `json:"addr"`
	Lower map[lowerKey]string   `json:"lower"`
	Fold  map[foldKey]string    `json:"fold"`
}

// lowerKey is a string map key that decodes lower-cased (and is written
// as the string itself).
type lowerKey string

func (k *lowerKey) UnmarshalText(b []byte) error {
	*k = lowerKey(strings.ToLower(string(b)))
	return nil
}

// foldKey decodes case-insensitively and has no way back to text.
type foldKey struct{ s string }

func (k *foldKey) UnmarshalText(b []byte) error {
	k.s = strings.ToLower(string(b))
	return nil
}

// TestG1_MapKeysMustBeInTheGoKeysCanonicalForm: keys encoding/json would
// decode to the same Go key ("1", "01", "+1") cannot hide one another.
func TestG1_MapKeysMustBeInTheGoKeysCanonicalForm(t *testing.T) {
	tg := schema.TargetFor[g1Ints]()
	for args, want := range map[string]string{
		`{"ids":{"1":"a","-1":"b","0":"c"},"u":{"7":"x"},"addr":{"::1":"a","1.2.3.4":"b"}}`: "",
		`{"ids":{"1":"a","01":"b"}}`:                           "/ids/01: map key is not in canonical form",
		`{"ids":{"+1":"a"}}`:                                   "/ids/+1: map key is not in canonical form",
		`{"ids":{"-0":"a"}}`:                                   "/ids/-0: map key is not in canonical form",
		`{"u":{"007":"a"}}`:                                    "/u/007: map key is not in canonical form",
		`{"addr":{"::FFFF:1.2.3.4":"a"}}`:                      `/addr/::FFFF:1.2.3.4: map key is not in canonical form: it decodes to the key written "::ffff:1.2.3.4"`,
		`{"addr":{"0:0:0:0:0:0:0:1":"a","::1":"b"}}`:           "/addr/0:0:0:0:0:0:0:1: map key is not in canonical form",
		`{"lower":{"a":"x","b":"y"},"fold":{"a":"x","b":"y"}}`: "",
		`{"lower":{"A":"x"}}`:                                  `/lower/A: map key is not in canonical form: it decodes to the key written "a"`,
		`{"fold":{"a":"x","A":"y"}}`:                           `/fold/a: map key decodes to the same Go key as "A"`,
	} {
		vs := keysRefused(tg, []byte(args))
		if want == "" {
			if vs != nil {
				t.Errorf("%s: %v", args, vs)
			}
			continue
		}
		if len(vs) != 1 || !strings.HasPrefix(vs[0].String(), want) {
			t.Errorf("%s: %v, want %s", args, vs, want)
		}
	}
	// A key that does not decode at all is Decode's to report.
	var x g1Ints
	vs := tg.Decode([]byte(`{"ids":{"300":"a"}}`), &x)
	if len(vs) != 1 || vs[0].Path != "/ids/300" || !strings.Contains(vs[0].Message, "map key does not decode into int8") {
		t.Errorf("Decode = %v", vs)
	}
}

type g1Level int

func (l *g1Level) UnmarshalText(b []byte) error {
	if string(b) != "low" {
		return errors.New("not low")
	}
	*l = 1
	return nil
}

type g1Leaves struct {
	I8    int8              `json:"i8"`
	U16   uint16            `json:"u16"`
	I     int               `json:"i"`
	U64   uint64            `json:"u64"`
	F32   float32           `json:"f32"`
	F64   float64           `json:"f64"`
	B     []byte            `json:"b"`
	T     time.Time         `json:"t"`
	PT    *time.Time        `json:"pt"`
	Level g1Level           `json:"level"`
	S     string            `json:"s"`
	Ok    bool              `json:"ok"`
	Sub   *g1Leaves         `json:"-"`
	Arr   [2]uint8          `json:"arr"`
	Quote map[string]quoted `json:"quote"`
}

type quoted struct {
	N int `json:"n,string"`
}

// TestG1_DerivedSchemaCarriesTheTypesContract: the JSON Schema derived
// from a struct states what its Go types accept, in exact JSON numbers.
func TestG1_DerivedSchemaCarriesTheTypesContract(t *testing.T) {
	spec, err := schema.FromStruct[g1Leaves]()
	if err != nil {
		t.Fatal(err)
	}
	out, err := spec.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`"i8":{"type":"integer","minimum":-128,"maximum":127}`,
		`"u16":{"type":"integer","minimum":0,"maximum":65535}`,
		`"i":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991}`,
		`"u64":{"type":"integer","minimum":0,"maximum":9007199254740991}`,
		`"f32":{"type":"number","minimum":-3.4028234663852886e+38,"maximum":3.4028234663852886e+38}`,
		`"f64":{"type":"number"}`,
		`"b":{"type":"string","contentEncoding":"base64"}`,
		`"t":{"type":"string","format":"date-time"}`,
		`"pt":{"type":"string","format":"date-time"}`,
		`"level":{"type":"string"}`,
		`"arr":{"type":"array","items":{"type":"integer","minimum":0,"maximum":255}}`,
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("schema lacks %s:\n%s", want, out)
		}
	}
	if c, err := canonjson.Canonicalize(out, canonjson.Options{}); err != nil || string(c) != string(out) {
		t.Errorf("schema is not canonical JSON: %v", err)
	}
	// The structured-output subset is another vocabulary: it still refuses
	// the refinements it does not check rather than silently ignoring them.
	if err := schema.AssertSupportedOutputSchema(out); err == nil || !strings.Contains(err.Error(), "format") {
		t.Errorf("output subset accepted refinements: %v", err)
	}
}

// TestG1_ValidationAndDecodeAgreeOnLeaves: a value the derived schema
// refuses is located by validation; a value the Go type refuses beyond the
// schema is located by Decode; neither lets an undecodable value through.
func TestG1_ValidationAndDecodeAgreeOnLeaves(t *testing.T) {
	spec, err := schema.FromStruct[g1Leaves]()
	if err != nil {
		t.Fatal(err)
	}
	tg := schema.TargetFor[g1Leaves]()
	for args, want := range map[string]string{
		`{"i8":300}`:                    "/i8: must be at most 127, got 300",
		`{"i8":-129}`:                   "/i8: must be at least -128, got -129",
		`{"u16":-1}`:                    "/u16: must be at least 0, got -1",
		`{"i":1e+21}`:                   "/i: must be at most 9007199254740991, got 1e+21",
		`{"u64":-1e+21}`:                "/u64: must be at least 0",
		`{"f32":1e+300}`:                "/f32: must be at most 3.4028234663852886e+38",
		`{"b":"!!"}`:                    "/b: must be standard base64 (contentEncoding base64): illegal base64 data at input byte 0",
		`{"t":"yesterday"}`:             "/t: must be an RFC 3339 date-time (format date-time)",
		`{"pt":"2024-13-01T00:00:00Z"}`: "/pt: must be an RFC 3339 date-time",
		`{"level":"high"}`:              "/level: cannot decode into schema_test.g1Level: not low",
		`{"arr":[1,256]}`:               "/arr/1: must be at most 255",
		`{"quote":{"k":{"n":1}}}`:       "/quote/k/n: cannot decode into int: invalid use of ,string struct tag",
		`{"quote":{"k":{"n":"x"}}}`:     "/quote/k/n: cannot decode into int: invalid use of ,string struct tag",
		`{"quote":{"k":[]}}`:            "/quote/k: cannot decode array into schema_test.quoted",
	} {
		vs := schema.ValidateArgsWith(spec, []byte(args), schema.ArgsOptions{Target: tg})
		if vs == nil {
			var x g1Leaves
			vs = tg.Decode([]byte(args), &x)
		}
		if len(vs) != 1 || !strings.HasPrefix(vs[0].String(), want) {
			t.Errorf("%s: %v, want %s", args, vs, want)
		}
	}
	var x g1Leaves
	ok := `{"i8":-128,"u16":65535,"i":9007199254740991,"f32":3.4028234663852886e+38,"b":"aGk=","t":"2024-05-01T14:00:00.5+02:00","level":"low","arr":[1,2,3],"quote":{"k":{"n":"7"}}}`
	if vs := schema.ValidateArgsWith(spec, []byte(ok), schema.ArgsOptions{Target: tg}); vs != nil {
		t.Fatal(vs)
	}
	if vs := tg.Decode([]byte(ok), &x); vs != nil || x.Quote["k"].N != 7 || x.Arr != [2]uint8{1, 2} {
		t.Fatalf("%v %+v", vs, x)
	}
	if vs := tg.Decode([]byte(ok), x); len(vs) != 1 || !strings.Contains(vs[0].Message, "Decode needs a non-nil *schema_test.g1Leaves") {
		t.Errorf("Decode(non-pointer) = %v", vs)
	}
}

type panicky struct{}

func (*panicky) UnmarshalJSON([]byte) error { panic("boom") }

// TestG1_DecodeContainsPanickingUnmarshalers: Decode never panics, even when
// a type's own decoder does.
func TestG1_DecodeContainsPanickingUnmarshalers(t *testing.T) {
	type withPanicky struct {
		P panicky `json:"p"`
	}
	var x withPanicky
	vs := schema.TargetFor[withPanicky]().Decode([]byte(`{"p":1}`), &x)
	if len(vs) != 1 || !strings.Contains(vs[0].Message, "panicked: boom") {
		t.Fatalf("%v", vs)
	}
}

// TestG1_SpecRefinementsAreValidated: the new keywords are checked like
// the rest of the DSL.
func TestG1_SpecRefinementsAreValidated(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for name, tc := range map[string]struct {
		p    schema.Prop
		want string
	}{
		"minimum on string":      {schema.Prop{Type: "string", Minimum: f(1)}, `minimum is only allowed on types number and integer, not "string"`},
		"maximum not finite":     {schema.Prop{Type: "number", Maximum: f(math.Inf(1))}, "maximum is not a finite number"},
		"bound not lossless":     {schema.Prop{Type: "integer", Maximum: f(1 << 60)}, "maximum 1152921504606846976 is an integer beyond 2^53-1"},
		"min above max":          {schema.Prop{Type: "integer", Minimum: f(2), Maximum: f(1)}, "minimum 2 is greater than maximum 1"},
		"format on integer":      {schema.Prop{Type: "integer", Format: "date-time"}, `format is only allowed on type string, not "integer"`},
		"unknown format":         {schema.Prop{Type: "string", Format: "email"}, `unknown format "email"`},
		"unknown encoding":       {schema.Prop{Type: "string", ContentEncoding: "base32"}, `unknown contentEncoding "base32"`},
		"encoding on array":      {schema.Prop{Type: "array", ContentEncoding: "base64"}, "contentEncoding is only allowed on type string"},
		"default out of range":   {schema.Prop{Type: "integer", Maximum: f(127), Default: 300}, "default 300 must be at most 127"},
		"enum member not a date": {schema.Prop{Type: "string", Format: "date-time", Enum: []any{"2024-01-01T00:00:00Z", "soon"}}, `enum member 1 "soon" must be an RFC 3339 date-time`},
	} {
		err := schema.Spec{"a": tc.p}.Validate()
		if !errors.Is(err, schema.ErrInvalidSpec) || !strings.Contains(err.Error(), "/a: "+tc.want) {
			t.Errorf("%s: %v, want %s", name, err, tc.want)
		}
	}
	if _, err := schema.FromStruct[struct {
		N int8 `json:"n" dsh:"default=300"`
	}](); err == nil || !strings.Contains(err.Error(), "default 300 must be at most 127") {
		t.Errorf("int8 default 300: %v", err)
	}
}

type fzInner struct {
	N int8   `json:"n"`
	S string `json:"s"`
}

// fzDescribed has only leaves the derived schema describes fully.
type fzDescribed struct {
	I8  int8       `json:"i8"`
	U16 uint16     `json:"u16"`
	I   int        `json:"i"`
	U64 uint64     `json:"u64"`
	F32 float32    `json:"f32"`
	F64 float64    `json:"f64"`
	B   []byte     `json:"b"`
	T   time.Time  `json:"t"`
	PT  *time.Time `json:"pt"`
	S   string     `json:"s"`
	Ok  bool       `json:"ok"`
	Arr [2]uint8   `json:"arr"`
	L   []int16    `json:"l"`
	In  fzInner    `json:"in"`
	P   *fzInner   `json:"p"`
	Ls  []fzInner  `json:"ls"`
}

// FuzzTargetDecode: Decode fails exactly when json.Unmarshal does, always
// with a located reason, and never panics; for a type the derived schema
// describes fully, arguments that pass validation always decode (the
// schema carries the type's contract).
func FuzzTargetDecode(f *testing.F) {
	for _, s := range []string{
		`{"i8":127,"u16":0,"i":-9007199254740991,"f32":1.5,"b":"aGk=","t":"2024-05-01T14:00:00Z","arr":[1,2,3],"l":[-32768],"in":{"n":1},"ls":[{"s":"x"}]}`,
		`{"i8":128}`, `{"u64":-1}`, `{"f32":1e+39}`, `{"b":"a"}`, `{"t":"2024-05-01"}`, `{"pt":null,"p":null}`,
		`{"ls":[{"n":1e+21}]}`, `{"in":[]}`, `{"arr":[256]}`, `{"l":[1,"2"]}`, `{"m":{"k":{"path":"/a","PATH":"/b"}}}`,
		`{"lm":[{"k":{"kind":"x"}}],"a":[{"Path":"/x"},{"path":"/y"}]}`,
	} {
		f.Add([]byte(s))
	}
	spec, err := schema.FromStruct[fzDescribed]()
	if err != nil {
		f.Fatal(err)
	}
	described := schema.TargetFor[fzDescribed]()
	outer := schema.TargetFor[fzOuter]()
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := canonjson.CanonicalizeObject(data, canonjson.Options{})
		if err != nil {
			return
		}
		var a, b fzDescribed
		vs, uerr := described.Decode(args, &a), json.Unmarshal(args, &b)
		if (vs == nil) != (uerr == nil) {
			t.Fatalf("%s: Decode %v, json.Unmarshal %v", args, vs, uerr)
		}
		for _, v := range vs {
			if v.Message == "" {
				t.Fatalf("%s: violation without a reason: %v", args, vs)
			}
		}
		if schema.ValidateArgsWith(spec, args, schema.ArgsOptions{Target: described}) == nil && vs != nil {
			t.Fatalf("%s passes the derived schema but does not decode: %v", args, vs)
		}
		var o, p fzOuter
		vs, uerr = outer.Decode(args, &o), json.Unmarshal(args, &p)
		if (vs == nil) != (uerr == nil) {
			t.Fatalf("%s: Decode %v, json.Unmarshal %v", args, vs, uerr)
		}
		_ = keysRefused(outer, args)
	})
}
