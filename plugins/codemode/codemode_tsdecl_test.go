package codemode

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/evanw/esbuild/pkg/api"

	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

func TestC4_TypeScript(t *testing.T) {
	deep := strings.Repeat(`{"type":"array","items":`, 40) + `{"type":"string"}` + strings.Repeat("}", 40)
	cases := []struct{ name, schema, want string }{
		{"object", `{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"number"}},"required":["path"]}`,
			`{ offset?: number; path: string; }`},
		{"scalars", `{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"boolean"},"c":{"type":"null"}},"required":["a","b","c"]}`,
			`{ a: number; b: boolean; c: null; }`},
		{"array of union", `{"type":"array","items":{"enum":["a","b"]}}`, `("a" | "b")[]`},
		{"array of array", `{"type":"array","items":{"type":"array","items":{"type":"number"}}}`, `number[][]`},
		{"array without items", `{"type":"array"}`, `unknown[]`},
		{"const", `{"const":"x\"y"}`, `"x\"y"`},
		{"enum mixed", `{"enum":[1,"a",true,null,1.0]}`, `1 | "a" | true | null`},
		{"enum non scalar", `{"enum":[{"a":1}]}`, `unknown`},
		{"bare object", `{"type":"object"}`, `Record<string, unknown>`},
		{"index signature", `{"type":"object","additionalProperties":{"type":"number"}}`, `{ [key: string]: number }`},
		{"closed empty", `{"type":"object","additionalProperties":false}`, `Record<string, never>`},
		{"quoted names", `{"type":"object","properties":{"a-b":{"type":"string"},"1x":{"type":"string"},"$ok_1":{"type":"string"},"":{"type":"string"},"é":{"type":"string"}}}`,
			`{ ""?: string; $ok_1?: string; "1x"?: string; "a-b"?: string; "é"?: string; }`},
		{"untyped properties", `{"properties":{"a":{}}}`, `{ a?: unknown; }`},
		{"ref", `{"$ref":"#/x"}`, `unknown`},
		{"ref property", `{"type":"object","properties":{"mode":{"enum":["a","b"]},"xs":{"type":"array","items":{"type":"integer"}},"ref":{"$ref":"#/x"}},"required":["mode"]}`,
			`{ mode: "a" | "b"; ref?: unknown; xs?: number[]; }`},
		{"oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}}}`, `{ a?: unknown; }`},
		// CT3: a type array is the union of its types.
		{"type array", `{"type":["string","null"]}`, `string | null`},
		{"type array of array", `{"type":"array","items":{"type":["null","array"],"items":{"type":"number"}}}`, `(null | number[])[]`},
		{"type array object", `{"type":["object","null"],"properties":{"a":{"type":"string"}},"required":["a"]}`, `{ a: string; } | null`},
		{"type array duplicate", `{"type":["integer","number"]}`, `number`},
		{"type array empty", `{"type":[]}`, `unknown`},
		{"type array non string", `{"type":["string",1]}`, `unknown`},
		{"type array unknown member", `{"type":["string","date"]}`, `unknown`},
		{"unknown type", `{"type":"date"}`, `unknown`},
		{"format ignored", `{"type":"string","format":"email"}`, `string`},
		{"invalid json", `{"type":`, `unknown`},
		{"empty", ``, `unknown`},
		{"not an object", `"string"`, `unknown`},
		{"too deep", deep, tsDeepWant()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := typeScript([]byte(tc.schema)); got != tc.want {
				t.Fatalf("typeScript(%s) =\n%s\nwant\n%s", tc.schema, got, tc.want)
			}
		})
	}
}

// tsDeepWant is 40 nested arrays where only the first 33 levels render.
func tsDeepWant() string { return "unknown" + strings.Repeat("[]", 33) }

func TestC4_TypeScriptJSDoc(t *testing.T) {
	js := `{"type":"object","properties":{
	  "path":{"type":"string","description":"Absolute path */ alert(1) /*"},
	  "opts":{"type":"object","properties":{"deep":{"type":"boolean","description":"line1\nline2"}}},
	  "plain":{"type":"number"}
	},"required":["path"]}`
	want := `{
  opts?: {
    /**
     * line1
     * line2
     */
    deep?: boolean;
  };
  /** Absolute path *\/ alert(1) /* */
  path: string;
  plain?: number;
}`
	if got := typeScript([]byte(js)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestC4_DeclareToolsDeterministic(t *testing.T) {
	read, err := schema.Spec{
		"path":  {Type: "string", Required: true, Description: "Absolute file path"},
		"limit": {Type: "integer"},
	}.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	tools := []systemprompt.ToolSchema{
		{Name: "read_file", Description: "Read a file from disk.", Parameters: read},
		{Name: "exotic-name", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"oneOf":[]}}}`)},
		{Name: "bash", Description: "Run a shell command.", Parameters: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "noargs"},
		{Name: "broken", Parameters: json.RawMessage(`{not json`)},
	}
	want := sdkErrorDecl + `/** What each tool's call resolves to. */
interface ToolOutputMap {
  bash: string;
  broken: string;
  "exotic-name": string;
  noargs: string;
  read_file: string;
}
declare const tools: {
  /** Run a shell command. */
  bash(args: { command: string; }): Promise<ToolOutputMap["bash"]>;
  broken(args: unknown): Promise<ToolOutputMap["broken"]>;
  "exotic-name"(args: { x?: unknown; }): Promise<ToolOutputMap["exotic-name"]>;
  noargs(args: Record<string, unknown>): Promise<ToolOutputMap["noargs"]>;
  /** Read a file from disk. */
  read_file(args: {
    limit?: number;
    /** Absolute file path */
    path: string;
  }): Promise<ToolOutputMap["read_file"]>;
}`
	got := declareTools(tools)
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	rev := slices.Clone(tools)
	slices.Reverse(rev)
	if declareTools(rev) != got {
		t.Fatal("output depends on input order")
	}
	if tools[0].Name != "read_file" {
		t.Fatal("DeclareTools mutated its input")
	}
	if got := declareTools(nil); got != sdkErrorDecl+"interface ToolOutputMap {}\ndeclare const tools: {}" {
		t.Fatalf("empty = %q", got)
	}
}

// tsSeeds are schemas in and out of what TypeScript can express.
var tsSeeds = []string{
	`{"type":"object","properties":{"a":{"type":"array","items":{"enum":[1,"x",null]}}},"required":["a"],"additionalProperties":false}`,
	`{"type":"object","properties":{"a":{"$ref":"#"},"b":{"type":["string"]}},"required":["c"]}`,
	`{"type":"object","properties":{"n":{"type":"integer","const":3}}}`,
	`[]`, `{`, `{"type":"object","a":1,"a":2}`, `true`,
}

func FuzzTypeScript(f *testing.F) {
	for _, s := range tsSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"object","properties":{"a b":{"description":"*/\n\u2028x","type":"array","items":{"enum":["x",1]}}}}`))
	f.Add([]byte(`{"type":"object","additionalProperties":{"type":"object","additionalProperties":{}}}`))
	f.Fuzz(func(t *testing.T, js []byte) {
		a := typeScript(js)
		if a == "" || a != typeScript(js) {
			t.Fatalf("empty or not deterministic: %q", a)
		}
		d := strings.TrimPrefix(declareTools([]systemprompt.ToolSchema{{Name: string(js), Description: string(js), Parameters: js}, {Name: "x"}}), sdkErrorDecl)
		// The same schema as an output type: deterministic, and it cannot
		// close the fence either.
		o := declareSDK([]sdkTool{{ToolSchema: systemprompt.ToolSchema{Name: string(js)}, Output: js}})
		if o != declareSDK([]sdkTool{{ToolSchema: systemprompt.ToolSchema{Name: string(js)}, Output: js}}) || strings.Contains(o, "```") {
			t.Fatalf("output declaration not deterministic or fenced: %q", o)
		}
		if strings.Count(d, "\n  /**") > 2 && !strings.Contains(string(js), "\n") {
			t.Fatalf("unexpected JSDoc split: %q", d)
		}
		// A comment opened by a description must not be closed early.
		for _, line := range strings.Split(d, "\n") {
			trimmed := strings.TrimSpace(line)
			if strings.HasPrefix(trimmed, "/**") || strings.HasPrefix(trimmed, "* ") {
				body := strings.TrimSuffix(trimmed, "*/")
				if strings.Contains(body[min(3, len(body)):], "*/") {
					t.Fatalf("comment closed early in %q", line)
				}
			}
		}
	})
}

// TestC4_DescriptionsCannotCloseTheFence: a description holding a run of
// backticks cannot end the fenced block the SDK declaration is shown in.
func TestC4_DescriptionsCannotCloseTheFence(t *testing.T) {
	out := declareTools([]systemprompt.ToolSchema{{Name: "x", Description: "Use ```bash fences``` here.", Parameters: json.RawMessage(`{"type":"object"}`)}})
	if strings.Contains(out, "```") {
		t.Fatalf("declaration contains a fence:\n%s", out)
	}
}

// TestC4_LongBacktickRunsCannotCloseTheFence: the fence guard also holds
// for runs of four or more backticks, whose leftover after one replacement
// would otherwise still be a fence.
func TestC4_LongBacktickRunsCannotCloseTheFence(t *testing.T) {
	for _, d := range []string{"````", "`````", "a``````b", "x\n````\ny"} {
		out := declareTools([]systemprompt.ToolSchema{{Name: "x", Description: d, Parameters: json.RawMessage(`{"type":"object","properties":{"p":{"type":"string","description":"` + strings.ReplaceAll(d, "\n", `\n`) + `"}}}`)}})
		if strings.Contains(out, "```") {
			t.Errorf("description %q: declaration contains a fence:\n%s", d, out)
		}
	}
	// Quoted keys and string literals keep their value, with the
	// backticks escaped.
	out := declareTools([]systemprompt.ToolSchema{{Name: "x", Parameters: json.RawMessage(`{"type":"object","properties":{"` + "```" + `":{"enum":["` + "```" + `sh","b"]},"c":{"const":"` + "````" + `"}}}`)}})
	want := `x(args: { "\u0060\u0060\u0060"?: "\u0060\u0060\u0060sh" | "b"; c?: "\u0060\u0060\u0060\u0060"; }): Promise<ToolOutputMap["x"]>;`
	if strings.Contains(out, "```") || !strings.Contains(out, want) {
		t.Errorf("declaration:\n%s\nwant line %s", out, want)
	}
}

// TestC4_TypeScriptIgnoresRefinements: the ranges, formats and encodings a
// schema derived from a Go struct carries do not change the TypeScript
// type the SDK declares.
func TestC4_TypeScriptIgnoresRefinements(t *testing.T) {
	spec, err := schema.FromStruct[struct {
		I8 int8      `json:"i8"`
		T  time.Time `json:"t"`
		B  []byte    `json:"b"`
	}]()
	if err != nil {
		t.Fatal(err)
	}
	out, err := spec.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	if ts := typeScript(out); ts != "{ b?: string; i8?: number; t?: string; }" {
		t.Errorf("typeScript(%s) = %s", out, ts)
	}
}

// TestC4_ReservedWordToolNamesAreQuoted: a tool named like a reserved or modifier word (new would
// declare a constructor signature, get a getter) is declared with a quoted key, and the declaration
// still parses as TypeScript.
func TestC4_ReservedWordToolNamesAreQuoted(t *testing.T) {
	var tools []systemprompt.ToolSchema
	for _, n := range []string{"new", "get", "delete", "readonly", "plain"} {
		tools = append(tools, systemprompt.ToolSchema{Name: n, Parameters: json.RawMessage(`{"type":"object","properties":{"new":{"type":"string"}}}`)})
	}
	decl := declareTools(tools)
	for _, want := range []string{`"new"(args: { "new"?: string; })`, `"get"(args:`, `"delete"(args:`, `"readonly"(args:`, "  plain(args:"} {
		if !strings.Contains(decl, want) {
			t.Errorf("declaration lacks %q:\n%s", want, decl)
		}
	}
	res := api.Transform(decl, api.TransformOptions{Loader: api.LoaderTS})
	if len(res.Errors) > 0 {
		t.Fatalf("declaration does not parse: %v\n%s", res.Errors[0].Text, decl)
	}
}

// TestCT2_DeclareSDKOutputTypes pins the output types of the SDK: each
// tool's entry in ToolOutputMap is its declared output schema's type
// (unknown where TypeScript cannot express it), a text-only tool's is
// string, and each function returns its entry.
func TestCT2_DeclareSDKOutputTypes(t *testing.T) {
	got := declareSDK([]sdkTool{
		{ToolSchema: systemprompt.ToolSchema{Name: "ls", Parameters: json.RawMessage(`{"type":"object"}`)},
			Output: json.RawMessage(`{"type":"object","properties":{"entries":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"size":{"type":"integer"}},"required":["name","size"]}}},"required":["entries"]}`)},
		{ToolSchema: systemprompt.ToolSchema{Name: "count"}, Output: json.RawMessage(`{"type":"integer"}`)},
		{ToolSchema: systemprompt.ToolSchema{Name: "maybe"}, Output: json.RawMessage(`{"type":["null","array"],"items":{"type":"string"}}`)},
		{ToolSchema: systemprompt.ToolSchema{Name: "odd-one"}, Output: json.RawMessage(`{"oneOf":[{"type":"string"}]}`)},
		{ToolSchema: systemprompt.ToolSchema{Name: "say"}},
	})
	want := sdkErrorDecl + `/** What each tool's call resolves to. */
interface ToolOutputMap {
  count: number;
  ls: { entries: { name: string; size: number; }[]; };
  maybe: null | string[];
  "odd-one": unknown;
  say: string;
}
declare const tools: {
  count(args: Record<string, unknown>): Promise<ToolOutputMap["count"]>;
  ls(args: Record<string, unknown>): Promise<ToolOutputMap["ls"]>;
  maybe(args: Record<string, unknown>): Promise<ToolOutputMap["maybe"]>;
  "odd-one"(args: Record<string, unknown>): Promise<ToolOutputMap["odd-one"]>;
  say(args: Record<string, unknown>): Promise<ToolOutputMap["say"]>;
}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// The declaration is valid TypeScript (esbuild parses it).
	if r := api.Transform(got, api.TransformOptions{Loader: api.LoaderTS}); len(r.Errors) > 0 {
		t.Fatalf("not TypeScript: %v", r.Errors)
	}
}
