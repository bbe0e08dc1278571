package codemode

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// This file renders the TypeScript declaration of the Code Mode SDK (the
// tools:sdk prompt section): each visible tool as an async function on the
// global tools object, its argument type derived from its JSON Schema.

// sdkTool is one tool the SDK declares: its wire schema and its declared
// output schema (nil for a text-only tool, whose calls resolve to its
// text).
type sdkTool struct {
	systemprompt.ToolSchema
	Output json.RawMessage
}

// sdkErrorDecl declares what a failed tool call rejects with
// ([ToolCallError]).
const sdkErrorDecl = `/** What a failed tool call rejects with (catch it with try/catch). */
interface ToolCallError extends Error {
  /** The tool that was called. */
  tool: string;
  /** Why it failed: "DENIED", "INVALID_ARGS", "TOOL_ERROR", "TOOL_TIMEOUT", ... */
  code: string;
}
`

// declareTools is [declareSDK] of text-only tools.
func declareTools(ts []systemprompt.ToolSchema) string {
	out := make([]sdkTool, len(ts))
	for i, t := range ts {
		out[i] = sdkTool{ToolSchema: t}
	}
	return declareSDK(out)
}

// declareSDK renders the Code Mode SDK declaration of a set of tools:
//
//	interface ToolCallError extends Error { tool: string; code: string; }
//	interface ToolOutputMap {
//	  name: <output type>;
//	  "exotic-name": string;
//	}
//	declare const tools: {
//	  /** description */
//	  name(args: { ... }): Promise<ToolOutputMap["name"]>;
//	  "exotic-name"(args: ...): Promise<ToolOutputMap["exotic-name"]>;
//	}
//
// Tools are sorted lexicographically by name (ties broken by description,
// parameters and output), so the text is byte-identical for the same set
// in any input order. Names that are not ASCII JavaScript identifiers
// become quoted keys; argument and output types come from typeScript, so
// it never fails. Empty Parameters mean any object. A tool's output type
// is what its call resolves to: its declared output schema's type
// (unknown where TypeScript cannot express it), or string for a text-only
// tool.
func declareSDK(tools []sdkTool) string {
	sorted := slices.Clone(tools)
	slices.SortFunc(sorted, func(a, b sdkTool) int {
		return cmp.Or(
			strings.Compare(a.Name, b.Name),
			strings.Compare(a.Description, b.Description),
			bytes.Compare(a.Parameters, b.Parameters),
			bytes.Compare(a.Output, b.Output),
		)
	})
	var b strings.Builder
	b.WriteString(sdkErrorDecl)
	if len(sorted) == 0 {
		b.WriteString("interface ToolOutputMap {}\ndeclare const tools: {}")
		return b.String()
	}
	b.WriteString("/** What each tool's call resolves to. */\ninterface ToolOutputMap {\n")
	for _, t := range sorted {
		out := "string"
		if len(t.Output) > 0 {
			out = tsFromBytes(t.Output, "  ")
		}
		b.WriteString("  ")
		b.WriteString(tsPropName(t.Name))
		b.WriteString(": ")
		b.WriteString(out)
		b.WriteString(";\n")
	}
	b.WriteString("}\ndeclare const tools: {\n")
	for _, t := range sorted {
		if t.Description != "" {
			tsJSDoc(&b, t.Description, "  ")
		}
		args := "Record<string, unknown>"
		if len(bytes.TrimSpace(t.Parameters)) > 0 {
			args = tsFromBytes(t.Parameters, "  ")
		}
		b.WriteString("  ")
		b.WriteString(tsPropName(t.Name))
		b.WriteString("(args: ")
		b.WriteString(args)
		b.WriteString("): Promise<ToolOutputMap[")
		b.WriteString(tsQuote(t.Name))
		b.WriteString("]>;\n")
	}
	b.WriteString("}")
	return b.String()
}

// tsMaxDepth bounds TypeScript rendering; deeper schemas render as unknown.
const tsMaxDepth = 32

// typeScript renders a JSON Schema as a TypeScript type expression. It is
// total (it never panics and never fails) and deterministic.
//
//   - type object with properties -> { name: T; opt?: T } (properties in
//     sorted order; required ones without "?"; names that are not ASCII
//     JavaScript identifiers are JSON-quoted). When any property has a
//     description the object is written one property per line, each
//     described property preceded by a JSDoc comment (with "*/" neutralized).
//   - type object without properties -> an index signature
//     { [key: string]: T } when additionalProperties is a schema,
//     Record<string, never> when it is false, else Record<string, unknown>.
//   - type array -> T[] (unions parenthesized), unknown[] without items.
//   - string, number, integer (as number), boolean, null.
//   - a type array -> the union of each type's rendering (the schema's
//     other keywords applying to each), e.g. ["string","null"] ->
//     string | null; an empty array or a member that is not a string ->
//     unknown.
//   - enum and const -> a union of literals (non-scalar members -> unknown).
//   - a schema without type but with properties or items is treated as an
//     object or array.
//
// Constructs it cannot express become unknown: $ref, oneOf, anyOf, allOf,
// not, if/then/else, unknown type names, non-object schemas,
// malformed or non-lossless JSON, and nesting deeper than 32 levels.
// Refinements that do not change the base type (format, pattern, minimum,
// ...) are ignored.
func typeScript(schema []byte) string {
	return tsFromBytes(schema, "")
}

func tsFromBytes(schema []byte, indent string) string {
	canon, err := canonjson.Canonicalize(schema, canonjson.Options{})
	if err != nil {
		return "unknown"
	}
	// Canonical JSON is exactly one valid value: decoding cannot fail.
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return "unknown"
	}
	t, _ := tsType(v, indent, 0)
	return t
}

var tsUnexpressible = []string{"$ref", "oneOf", "anyOf", "allOf", "not", "if", "then", "else", "$dynamicRef", "$recursiveRef", "patternProperties", "dependentSchemas", "prefixItems"}

// tsType renders node; union reports whether the result is a top-level union
// (so that an array of it needs parentheses).
func tsType(node any, indent string, depth int) (typ string, union bool) {
	m, ok := node.(map[string]any)
	if !ok || depth > tsMaxDepth {
		return "unknown", false
	}
	for _, k := range tsUnexpressible {
		if _, bad := m[k]; bad {
			return "unknown", false
		}
	}
	if c, ok := m["const"]; ok {
		s, ok := tsLiteral(c)
		if !ok {
			return "unknown", false
		}
		return tsNoFence(s), false
	}
	if e, ok := m["enum"]; ok {
		arr, ok := e.([]any)
		if !ok || len(arr) == 0 {
			return "unknown", false
		}
		lits := make([]string, 0, len(arr))
		for _, x := range arr {
			s, ok := tsLiteral(x)
			if !ok {
				return "unknown", false
			}
			s = tsNoFence(s)
			if !slices.Contains(lits, s) {
				lits = append(lits, s)
			}
		}
		return strings.Join(lits, " | "), len(lits) > 1
	}
	t, hasType := m["type"]
	var typName string
	if hasType {
		if arr, ok := t.([]any); ok {
			return tsTypeUnion(m, arr, indent, depth)
		}
		s, ok := t.(string)
		if !ok {
			return "unknown", false
		}
		typName = s
	} else if _, ok := m["properties"]; ok {
		typName = "object"
	} else if _, ok := m["items"]; ok {
		typName = "array"
	}
	switch typName {
	case "string", "boolean", "null", "number":
		return typName, false
	case "integer":
		return "number", false
	case "array":
		items, ok := m["items"]
		if !ok {
			return "unknown[]", false
		}
		it, u := tsType(items, indent, depth+1)
		if u {
			it = "(" + it + ")"
		}
		return it + "[]", false
	case "object":
		return tsObject(m, indent, depth), false
	default:
		return "unknown", false
	}
}

// tsTypeUnion renders m whose type is the array types: the union of m
// rendered with each type (duplicates once), unknown when types is empty,
// holds a non-string, or a member renders as unknown (the union would
// be unknown anyway).
func tsTypeUnion(m map[string]any, types []any, indent string, depth int) (string, bool) {
	if len(types) == 0 {
		return "unknown", false
	}
	members := make([]string, 0, len(types))
	for _, x := range types {
		name, ok := x.(string)
		if !ok {
			return "unknown", false
		}
		one := maps.Clone(m)
		one["type"] = name
		t, _ := tsType(one, indent, depth)
		if t == "unknown" {
			return "unknown", false
		}
		if !slices.Contains(members, t) {
			members = append(members, t)
		}
	}
	return strings.Join(members, " | "), len(members) > 1
}

func tsObject(m map[string]any, indent string, depth int) string {
	props, ok := m["properties"].(map[string]any)
	if _, present := m["properties"]; present && !ok {
		return "unknown"
	}
	if len(props) == 0 {
		switch ap := m["additionalProperties"].(type) {
		case map[string]any:
			t, _ := tsType(ap, indent, depth+1)
			return "{ [key: string]: " + t + " }"
		case bool:
			if !ap {
				return "Record<string, never>"
			}
		}
		return "Record<string, unknown>"
	}
	required := map[string]bool{}
	if req, ok := m["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				required[s] = true
			}
		}
	}
	names := slices.Sorted(maps.Keys(props))
	multiline := false
	for _, n := range names {
		if pm, ok := props[n].(map[string]any); ok {
			if d, ok := pm["description"].(string); ok && d != "" {
				multiline = true
				break
			}
		}
	}
	var b strings.Builder
	if !multiline {
		b.WriteString("{ ")
		for i, n := range names {
			if i > 0 {
				b.WriteString(" ")
			}
			t, _ := tsType(props[n], indent, depth+1)
			b.WriteString(tsPropName(n))
			if !required[n] {
				b.WriteByte('?')
			}
			b.WriteString(": ")
			b.WriteString(t)
			b.WriteByte(';')
		}
		b.WriteString(" }")
		return b.String()
	}
	inner := indent + "  "
	b.WriteString("{\n")
	for _, n := range names {
		if pm, ok := props[n].(map[string]any); ok {
			if d, ok := pm["description"].(string); ok && d != "" {
				tsJSDoc(&b, d, inner)
			}
		}
		t, _ := tsType(props[n], inner, depth+1)
		b.WriteString(inner)
		b.WriteString(tsPropName(n))
		if !required[n] {
			b.WriteByte('?')
		}
		b.WriteString(": ")
		b.WriteString(t)
		b.WriteString(";\n")
	}
	b.WriteString(indent)
	b.WriteByte('}')
	return b.String()
}

// tsJSDoc writes a JSDoc comment for text at indent. "*/" is neutralized
// as "*\/" so the comment cannot be closed early; line breaks become comment
// lines.
func tsJSDoc(b *strings.Builder, text, indent string) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	text = strings.ReplaceAll(text, "\u2028", "\n")
	text = strings.ReplaceAll(text, "\u2029", "\n")
	text = strings.ReplaceAll(text, "*/", "*\\/")
	// The declaration is shown inside a fenced block of the prompt: a run
	// of backticks must not close the fence.
	// Repeat: one pass over a run of four or more leaves "```" behind.
	for strings.Contains(text, "```") {
		text = strings.ReplaceAll(text, "```", "`\u200b``")
	}
	lines := strings.Split(strings.TrimRight(text, "\n "), "\n")
	if len(lines) == 1 {
		b.WriteString(indent + "/** " + lines[0] + " */\n")
		return
	}
	b.WriteString(indent + "/**\n")
	for _, l := range lines {
		b.WriteString(strings.TrimRight(indent+" * "+l, " ") + "\n")
	}
	b.WriteString(indent + " */\n")
}

// tsPropName returns name as a TypeScript property key: bare when it is an
// ASCII JavaScript identifier that is not a reserved or modifier word,
// JSON-quoted otherwise (a member named new, bare, would declare a
// constructor; get, set, readonly and the like read as modifiers).
func tsPropName(name string) string {
	if isIdent(name) && !tsReservedWords[name] {
		return name
	}
	return tsQuote(name)
}

// tsQuote returns name as a TypeScript string literal on one line that
// cannot close the declaration's fence.
func tsQuote(name string) string {
	s := string(canonjson.AppendString(nil, name))
	// U+2028 and U+2029 are legal in JSON strings and ES2019 string literals,
	// but escape them anyway so the declaration never spans lines.
	s = strings.ReplaceAll(s, "\u2028", `\u2028`)
	return tsNoFence(strings.ReplaceAll(s, "\u2029", `\u2029`))
}

// tsNoFence escapes the backticks of a JSON-quoted string literal as
// \u0060 when it holds a run of three, so the literal (same value) cannot
// close the fenced block the declaration is shown in.
func tsNoFence(lit string) string {
	if !strings.Contains(lit, "```") {
		return lit
	}
	return strings.ReplaceAll(lit, "`", `\u0060`)
}

// tsLiteral returns the canonical JSON text of a scalar decoded with
// UseNumber, which is also its TypeScript literal type; ok is false for
// arrays and objects.
func tsLiteral(v any) (lit string, ok bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		return string(canonjson.AppendString(nil, x)), true
	case json.Number:
		// Already canonical: it was decoded from canonical JSON.
		return string(x), true
	}
	return "", false
}

// tsReservedWords are the words tsPropName quotes: JavaScript's reserved
// words (strict mode included) and TypeScript's member modifiers.
var tsReservedWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`break case catch class const continue debugger default delete do else enum
		export extends false finally for function if import in instanceof new null return super switch this throw
		true try typeof var void while with yield let static implements interface package private protected public
		await async get set readonly declare abstract accessor override is keyof infer unique asserts satisfies as
		type namespace module global constructor`) {
		m[w] = true
	}
	return m
}()
