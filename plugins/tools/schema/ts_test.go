package schema

import (
	"slices"
	"strings"
	"testing"
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
		{"oneOf", `{"type":"object","properties":{"a":{"oneOf":[{"type":"string"}]}}}`, `{ a?: unknown; }`},
		{"type array", `{"type":["string","null"]}`, `unknown`},
		{"unknown type", `{"type":"date"}`, `unknown`},
		{"format ignored", `{"type":"string","format":"email"}`, `string`},
		{"invalid json", `{"type":`, `unknown`},
		{"empty", ``, `unknown`},
		{"not an object", `"string"`, `unknown`},
		{"too deep", deep, tsDeepWant()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := TypeScript([]byte(tc.schema)); got != tc.want {
				t.Fatalf("TypeScript(%s) =\n%s\nwant\n%s", tc.schema, got, tc.want)
			}
		})
	}
}

// tsDeepWant is 40 nested arrays where only the first 33 levels render.
func tsDeepWant() string { return "unknown" + strings.Repeat("[]", 33) }

func TestC4_TypeScriptJSDoc(t *testing.T) {
	schema := `{"type":"object","properties":{
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
	if got := TypeScript([]byte(schema)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}

func TestC4_DeclareToolsDeterministic(t *testing.T) {
	read, err := Spec{
		"path":  {Type: "string", Required: true, Description: "Absolute file path"},
		"limit": {Type: "integer"},
	}.JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	tools := []ToolDecl{
		{Name: "read_file", Description: "Read a file from disk.", Parameters: read},
		{Name: "exotic-name", Parameters: []byte(`{"type":"object","properties":{"x":{"oneOf":[]}}}`)},
		{Name: "bash", Description: "Run a shell command.", Parameters: []byte(`{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}`)},
		{Name: "noargs"},
		{Name: "broken", Parameters: []byte(`{not json`)},
	}
	want := `declare const tools: {
  /** Run a shell command. */
  bash(args: { command: string; }): Promise<unknown>;
  broken(args: unknown): Promise<unknown>;
  "exotic-name"(args: { x?: unknown; }): Promise<unknown>;
  noargs(args: Record<string, unknown>): Promise<unknown>;
  /** Read a file from disk. */
  read_file(args: {
    limit?: number;
    /** Absolute file path */
    path: string;
  }): Promise<unknown>;
}`
	got := DeclareTools(tools)
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	rev := slices.Clone(tools)
	slices.Reverse(rev)
	if DeclareTools(rev) != got {
		t.Fatal("output depends on input order")
	}
	if tools[0].Name != "read_file" {
		t.Fatal("DeclareTools mutated its input")
	}
	if got := DeclareTools(nil); got != "declare const tools: {}" {
		t.Fatalf("empty = %q", got)
	}
}

func FuzzTypeScript(f *testing.F) {
	for _, s := range outputSchemaSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"type":"object","properties":{"a b":{"description":"*/\n\u2028x","type":"array","items":{"enum":["x",1]}}}}`))
	f.Add([]byte(`{"type":"object","additionalProperties":{"type":"object","additionalProperties":{}}}`))
	f.Fuzz(func(t *testing.T, schema []byte) {
		a := TypeScript(schema)
		if a == "" || a != TypeScript(schema) {
			t.Fatalf("empty or not deterministic: %q", a)
		}
		d := DeclareTools([]ToolDecl{{Name: string(schema), Description: string(schema), Parameters: schema}, {Name: "x"}})
		if strings.Count(d, "\n  /**") > 2 && !strings.Contains(string(schema), "\n") {
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
