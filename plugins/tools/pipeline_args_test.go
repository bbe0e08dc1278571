package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// exoticKeys are property names that mean something in gjson path syntax.
var exoticKeys = []string{
	"file.path", "@this", "a|b", "#", "*", "?", "", `a\b`, "!true", "[0]", "{a}", "..", "a.b.c",
	"@reverse", "#(a)", "@", `\`, "x*", "é", " ", "\n", `"`, "0", "-1", "a.#", "a\x00b",
}

// withExecution runs one call of a tool whose body hands its *Execution to
// f (arguments as given, so they are canonicalized by the pipeline).
func withExecution(t testing.TB, args []byte, f func(*tools.Execution)) {
	t.Helper()
	e := newEnv(t)
	d := echo("probe", "ok")
	d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		f(x)
		return tools.Output{}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	c := call("probe", "")
	c.Arguments = args
	if res := e.reg.Execute(context.Background(), c); res.IsError {
		t.Fatalf("probe call failed: %s %q (args %s)", code(res), text(res), args)
	}
}

// TestP3_ArgReadsAPropertyByItsNameWhateverItsCharacters: Execution.Arg
// takes property names, not gjson paths: a policy reading a property whose
// name holds '.', '|', '#', '@', '*', '?', ... reads that property (what the
// tool decodes), never a decoy the path syntax would select instead.
func TestP3_ArgReadsAPropertyByItsNameWhateverItsCharacters(t *testing.T) {
	obj := map[string]any{
		"file": map[string]any{"path": "decoy: file → path"},
		"a":    map[string]any{"b": map[string]any{"c": "decoy: a → b → c"}, "#": "decoy: a → #"},
		"this": "decoy: this",
		"b":    "decoy: b",
	}
	for i, k := range exoticKeys {
		obj[k] = fmt.Sprint("value ", i)
	}
	args, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	withExecution(t, args, func(x *tools.Execution) {
		for i, k := range exoticKeys {
			if got, want := x.Arg(k).String(), fmt.Sprint("value ", i); got != want {
				t.Errorf("Arg(%q) = %q, want %q", k, got, want)
			}
		}
	})
}

// TestP3_ArgWalksObjectsAndArraysByKeys: several keys walk down objects by
// name and arrays by index (decimal, no sign or leading zero, as a JSON
// Pointer).
func TestP3_ArgWalksObjectsAndArraysByKeys(t *testing.T) {
	args := []byte(`{"outer.key":{"inner|key":[10,{"#":"deep","0":"zero"}]},"file":{"path":"nested"},"file.path":"flat","list":[1,2,3]}`)
	withExecution(t, args, func(x *tools.Execution) {
		for _, tc := range []struct {
			keys []string
			want string // Raw; "" = does not exist
		}{
			{[]string{"outer.key", "inner|key", "1", "#"}, `"deep"`},
			{[]string{"outer.key", "inner|key", "1", "0"}, `"zero"`},
			{[]string{"outer.key", "inner|key", "0"}, `10`},
			{[]string{"outer.key", "inner|key", "01"}, ``},
			{[]string{"outer.key", "inner|key", "-1"}, ``},
			{[]string{"outer.key", "inner|key", "+1"}, ``},
			{[]string{"outer.key", "inner|key", "2"}, ``},
			{[]string{"outer.key", "inner|key", "#"}, ``},
			{[]string{"outer.key", "inner|key", "99999999999999999999"}, ``},
			{[]string{"list", "2"}, `3`},
			{[]string{"file.path"}, `"flat"`},
			{[]string{"file", "path"}, `"nested"`},
			{[]string{"file.path", "x"}, ``},
			{[]string{"missing"}, ``},
		} {
			got := x.Arg(tc.keys...)
			if got.Raw != tc.want || got.Exists() != (tc.want != "") {
				t.Errorf("Arg(%q) = %q (exists %v), want %q", tc.keys, got.Raw, got.Exists(), tc.want)
			}
		}
		if got := x.Arg(); got.Raw != x.ArgsString() {
			t.Errorf("Arg() = %s, want the whole object", got.Raw)
		}
	})
}

// FuzzArg: for any property names, Arg reads the same value as decoding
// the arguments into map[string]any and indexing it, through objects and
// arrays.
func FuzzArg(f *testing.F) {
	for _, k := range exoticKeys {
		f.Add(k, "path", `"v"`)
		f.Add("file", k, `{"a":[1,2]}`)
	}
	f.Add("a\\", ".b", `null`)
	f.Add("\u2028", "\\u0041", `1.5e3`)
	f.Fuzz(func(t *testing.T, k1, k2, raw string) {
		var v any
		if json.Unmarshal([]byte(raw), &v) != nil {
			v = raw
		}
		obj := map[string]any{
			k1:       map[string]any{k2: v, "decoy": 1},
			"decoy":  []any{v, map[string]any{k2: "in array"}},
			k1 + ".": "decoy",
		}
		args, err := json.Marshal(obj)
		if err != nil {
			t.Skip()
		}
		var want map[string]any
		if err := json.Unmarshal(args, &want); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t)
		d := echo("probe", "ok")
		d.Execute = func(_ context.Context, x *tools.Execution) (tools.Output, error) {
			// The keys as the pipeline's canonical arguments hold them (JSON
			// replaced invalid UTF-8 in the fuzzed keys).
			for a, av := range want {
				checkArg(t, x, av, a)
				if m, ok := av.(map[string]any); ok {
					for b, bv := range m {
						checkArg(t, x, bv, a, b)
					}
				}
				if l, ok := av.([]any); ok {
					for i, iv := range l {
						checkArg(t, x, iv, a, fmt.Sprint(i))
						if m, ok := iv.(map[string]any); ok {
							for b, bv := range m {
								checkArg(t, x, bv, a, fmt.Sprint(i), b)
							}
						}
					}
				}
			}
			return tools.Output{}, nil
		}
		mustRegister(t, e.reg, e.root, d)
		c := call("probe", "")
		c.Arguments = args
		if res := e.reg.Execute(context.Background(), c); res.IsError && code(res) != tools.CodeInvalidArgs {
			t.Fatalf("%s %q", code(res), text(res))
		}
	})
}

func checkArg(t *testing.T, x *tools.Execution, want any, keys ...string) {
	t.Helper()
	r := x.Arg(keys...)
	if !r.Exists() {
		t.Errorf("Arg(%q) does not exist, want %v", keys, want)
		return
	}
	var got any
	if err := json.Unmarshal([]byte(r.Raw), &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Arg(%q) = %s, want %v", keys, r.Raw, want)
	}
}
