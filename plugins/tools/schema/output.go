package schema

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// ErrUnsupportedSchema is the sentinel an [*OutputSchemaError] matches with
// errors.Is.
var ErrUnsupportedSchema = errors.New("schema: unsupported output schema")

// OutputSchemaError lists every way a structured-output schema falls outside
// the supported subset (see [AssertSupportedOutputSchema]). It matches
// [ErrUnsupportedSchema] with errors.Is.
type OutputSchemaError struct {
	// Violations are path-qualified (JSON pointers into the schema
	// document), sorted by path then message.
	Violations []Violation
}

// Error lists every violation on its own line.
func (e *OutputSchemaError) Error() string {
	var b strings.Builder
	b.WriteString("unsupported output schema:")
	for _, v := range e.Violations {
		b.WriteString("\n- ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Code returns "UNSUPPORTED_SCHEMA".
func (e *OutputSchemaError) Code() string { return "UNSUPPORTED_SCHEMA" }

// Unwrap returns [ErrUnsupportedSchema].
func (e *OutputSchemaError) Unwrap() error { return ErrUnsupportedSchema }

// The JSON Schema types of the structured-output subset, as bits.
const (
	kObject uint8 = 1 << iota
	kArray
	kString
	kNumber
	kInteger
	kBoolean
	kNull
)

var outputTypes = map[string]uint8{
	"object": kObject, "array": kArray, "string": kString, "number": kNumber,
	"integer": kInteger, "boolean": kBoolean, "null": kNull,
}

// typeNames lists the names of the types in mask, in the order of the
// constants.
func typeNames(mask uint8) []string {
	var out []string
	for _, n := range []string{"object", "array", "string", "number", "integer", "boolean", "null"} {
		if mask&outputTypes[n] != 0 {
			out = append(out, n)
		}
	}
	return out
}

// node is one compiled (sub)schema of the structured-output subset.
type node struct {
	types    uint8 // 0: any type
	props    map[string]*node
	idx      int // this schema's index among its parent's properties
	required []string
	closed   bool  // additionalProperties: false
	addl     *node // additionalProperties as a schema
	items    *node
	enum     []string // canonical scalars
	constv   *string  // canonical scalar
	min, max *float64
	minItems int  // -1: none
	maxItems int  // -1: none
	base64   bool // contentEncoding: base64
	never    bool // the schema false
}

// ValueSchema is a compiled structured-output schema: parse it once with
// [CompileValueSchema] (or [CompileOutputSchema]) and validate many values.
// It is immutable and safe for concurrent use.
type ValueSchema struct {
	root  *node
	canon []byte
}

// JSON returns the schema's canonical JSON (a fresh copy).
func (s *ValueSchema) JSON() json.RawMessage { return append(json.RawMessage(nil), s.canon...) }

// ObjectRoot reports whether the schema's root has the single type
// "object" (what MCP's outputSchema requires).
func (s *ValueSchema) ObjectRoot() bool { return s.root.types == kObject }

// AssertSupportedOutputSchema checks that schema is in the structured-output
// subset and returns nil, or an [*OutputSchemaError] listing EVERY violation.
//
// The schema must be lossless JSON (see [canonjson.Canonicalize]) whose root is an
// object schema with "type": "object" ([AssertSupportedValueSchema] accepts
// any root). Every subschema must be true (any value), false (no value)
// or a JSON object using only these keywords:
//
//   - type: one of object, array, string, number, integer, boolean, null,
//     or a non-empty array of distinct such names (a value matches when it
//     has one of them: ["null","array"] is how jsonschema-go describes a
//     Go slice);
//   - properties: an object whose values are schemas (only with a type
//     that includes object, or no type);
//   - required: an array of unique strings, each declared in properties;
//   - additionalProperties: a boolean or a schema (the schema every
//     undeclared property's value must match, as for a Go map);
//   - items: a single schema (tuple arrays are rejected; only with a type
//     that includes array, or no type);
//   - minItems, maxItems: non-negative integers (arrays);
//   - contentEncoding: "base64" (strings: standard base64 with padding, as
//     encoding/json carries a []byte);
//   - minimum, maximum: numbers (inclusive bounds on numbers and integers);
//   - enum: a non-empty array of strings, numbers, booleans or null, each
//     matching type when type is given;
//   - const: a string, number, boolean or null;
//   - the annotations description and title (strings), default (any JSON)
//     and examples (an array), which validation ignores.
//
// This is what github.com/google/jsonschema-go infers from a Go type (the
// go-sdk's mcp.AddTool schemas). Anything else — $ref, oneOf, anyOf, allOf,
// not, pattern, format, boolean schemas, ... — is rejected, naming the
// keyword and its path: a keyword the validator does not enforce would
// validate less than the schema promises.
func AssertSupportedOutputSchema(schema []byte) error {
	_, err := CompileOutputSchema(schema)
	return err
}

// AssertSupportedValueSchema is [AssertSupportedOutputSchema] for a schema
// of any root type (a tool whose value is a string or a list).
func AssertSupportedValueSchema(schema []byte) error {
	_, err := CompileValueSchema(schema)
	return err
}

// CompileOutputSchema checks schema as [AssertSupportedOutputSchema] does
// and returns it compiled.
func CompileOutputSchema(schema []byte) (*ValueSchema, error) {
	return compile(schema, true)
}

// CompileValueSchema checks schema as [AssertSupportedValueSchema] does and
// returns it compiled.
func CompileValueSchema(schema []byte) (*ValueSchema, error) {
	return compile(schema, false)
}

func compile(schema []byte, objectRoot bool) (*ValueSchema, error) {
	root, canon, vs := parseOutputSchema(schema, objectRoot)
	if len(vs) > 0 {
		return nil, &OutputSchemaError{Violations: vs}
	}
	return &ValueSchema{root: root, canon: canon}, nil
}

func parseOutputSchema(schema []byte, objectRoot bool) (*node, []byte, []Violation) {
	canon, err := canonjson.Canonicalize(schema, canonjson.Options{})
	if err != nil {
		var ce *canonjson.Error
		if safeerr.AsAny(err, &ce) {
			return nil, nil, []Violation{{Path: ce.Path, Message: fmt.Sprintf("schema is not lossless JSON (byte %d): %s", ce.Offset, ce.Reason)}}
		}
		return nil, nil, []Violation{{Message: err.Error()}}
	}
	root, err := decodeUseNumber(canon)
	if err != nil {
		return nil, nil, []Violation{{Message: "schema is not JSON: " + err.Error()}}
	}
	var vs []Violation
	m, ok := root.(map[string]any)
	if !ok {
		vs = append(vs, Violation{Message: "root schema must be an object schema, got " + jsonKind(root)})
		return nil, nil, sortViolations(vs)
	}
	if t, ok := m["type"].(string); objectRoot && (!ok || t != "object") {
		vs = append(vs, Violation{Path: "/type", Message: `root schema must have "type": "object"`})
	}
	n := checkOutputSchema(root, "", &vs)
	if len(vs) == 0 {
		return n, canon, nil
	}
	return nil, nil, sortViolations(vs)
}

// checkOutputSchema checks one (sub)schema, adding its violations to vs,
// and returns it compiled (meaningful only when vs stays empty).
func checkOutputSchema(sn any, path string, vs *[]Violation) *node {
	add := func(p, format string, a ...any) {
		*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf(format, a...)})
	}
	n := &node{minItems: -1, maxItems: -1}
	if b, ok := sn.(bool); ok {
		// The boolean schemas: true allows any value, false none.
		n.never = !b
		return n
	}
	m, ok := sn.(map[string]any)
	if !ok {
		add(path, "schema must be an object, got %s", jsonKind(sn))
		return n
	}
	if t, present := m["type"]; present {
		tp := path + "/type"
		switch x := t.(type) {
		case string:
			if b := outputTypes[x]; b != 0 {
				n.types = b
			} else {
				add(tp, "unsupported type %q", truncate(x, 40))
			}
		case []any:
			if len(x) == 0 {
				add(tp, "type array must not be empty")
			}
			for i, e := range x {
				s, _ := e.(string)
				b := outputTypes[s]
				switch {
				case b == 0:
					add(tp+"/"+strconv.Itoa(i), "unsupported type %s", truncate(jsonText(e), 40))
				case n.types&b != 0:
					add(tp+"/"+strconv.Itoa(i), "duplicate type %q", s)
				}
				n.types |= b
			}
		default:
			add(tp, "type must be a string or an array of strings, got %s", jsonKind(t))
		}
	}
	only := func(kp, kw string, mask uint8) {
		if n.types != 0 && n.types&mask == 0 {
			add(kp, "%s is only allowed with type %s, not %s", kw, strings.Join(typeNames(mask), " or "), strings.Join(typeNames(n.types), ", "))
		}
	}
	props, hasProps := m["properties"].(map[string]any)
	for _, k := range sortedKeys(m) {
		v := m[k]
		kp := path + "/" + escapePointer(k)
		switch k {
		case "type":
		case "properties":
			if !hasProps {
				add(kp, "properties must be an object, got %s", jsonKind(v))
				continue
			}
			only(kp, k, kObject)
			n.props = make(map[string]*node, len(props))
			for i, name := range sortedKeys(props) {
				c := checkOutputSchema(props[name], kp+"/"+escapePointer(name), vs)
				c.idx = i
				n.props[name] = c
			}
		case "required":
			arr, ok := v.([]any)
			if !ok {
				add(kp, "required must be an array of strings, got %s", jsonKind(v))
				continue
			}
			only(kp, k, kObject)
			seen := map[string]bool{}
			for i, e := range arr {
				ep := kp + "/" + strconv.Itoa(i)
				s, ok := e.(string)
				switch {
				case !ok:
					add(ep, "required entry must be a string, got %s", jsonKind(e))
				case seen[s]:
					add(ep, "duplicate required entry %q", truncate(s, 40))
				default:
					seen[s] = true
					n.required = append(n.required, s)
					if _, declared := props[s]; !declared {
						add(ep, "required property %q is not declared in properties", truncate(s, 40))
					}
				}
			}
		case "additionalProperties":
			only(kp, k, kObject)
			switch x := v.(type) {
			case bool:
				n.closed = !x
			case map[string]any:
				n.addl = checkOutputSchema(x, kp, vs)
			default:
				add(kp, "additionalProperties must be a boolean or a schema, got %s", jsonKind(v))
			}
		case "items":
			if _, ok := v.([]any); ok {
				add(kp, "items must be a single schema; tuple arrays are not supported")
				continue
			}
			only(kp, k, kArray)
			n.items = checkOutputSchema(v, kp, vs)
		case "minItems", "maxItems":
			only(kp, k, kArray)
			num, ok := v.(json.Number)
			c, err := strconv.Atoi(string(num))
			if !ok || err != nil || c < 0 {
				add(kp, "%s must be a non-negative integer, got %s", k, truncate(jsonText(v), 40))
				continue
			}
			if k == "minItems" {
				n.minItems = c
			} else {
				n.maxItems = c
			}
		case "minimum", "maximum":
			only(kp, k, kNumber|kInteger)
			num, ok := v.(json.Number)
			f, err := strconv.ParseFloat(string(num), 64)
			if !ok || err != nil {
				add(kp, "%s must be a number, got %s", k, jsonKind(v))
				continue
			}
			if k == "minimum" {
				n.min = &f
			} else {
				n.max = &f
			}
		case "enum":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				add(kp, "enum must be a non-empty array")
				continue
			}
			for i, e := range arr {
				ep := kp + "/" + strconv.Itoa(i)
				if !isScalar(e) {
					add(ep, "enum members must be strings, numbers, booleans or null, got %s", jsonKind(e))
					continue
				} else if n.types != 0 && !valueHasTypes(e, n.types) {
					add(ep, "enum member is %s, not %s", jsonKind(e), strings.Join(typeNames(n.types), " or "))
				}
				c, _ := canonScalar(e)
				n.enum = append(n.enum, c)
			}
		case "const":
			if !isScalar(v) {
				add(kp, "const must be a string, number, boolean or null, got %s", jsonKind(v))
				continue
			} else if n.types != 0 && !valueHasTypes(v, n.types) {
				add(kp, "const is %s, not %s", jsonKind(v), strings.Join(typeNames(n.types), " or "))
			}
			c, _ := canonScalar(v)
			n.constv = &c
		case "contentEncoding":
			only(kp, k, kString)
			if v != EncodingBase64 {
				add(kp, "contentEncoding must be %q, got %s", EncodingBase64, truncate(jsonText(v), 40))
				continue
			}
			n.base64 = true
		case "description", "title":
			if _, ok := v.(string); !ok {
				add(kp, "%s must be a string, got %s", k, jsonKind(v))
			}
		case "default":
		case "examples":
			if _, ok := v.([]any); !ok {
				add(kp, "examples must be an array, got %s", jsonKind(v))
			}
		default:
			add(kp, "unsupported keyword %q", truncate(k, 40))
		}
	}
	return n
}

// jsonText is v (decoded with UseNumber) as JSON text, for messages.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return jsonKind(v)
	}
	return string(b)
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, bool, string, json.Number:
		return true
	}
	return false
}

// valueHasTypes reports whether a value decoded with UseNumber has one of
// the types in mask.
func valueHasTypes(v any, mask uint8) bool {
	switch x := v.(type) {
	case nil:
		return mask&kNull != 0
	case bool:
		return mask&kBoolean != 0
	case string:
		return mask&kString != 0
	case json.Number:
		return mask&kNumber != 0 || mask&kInteger != 0 && isIntegral(string(x))
	case []any:
		return mask&kArray != 0
	case map[string]any:
		return mask&kObject != 0
	}
	return false
}

// ValidateStructuredValue validates value (JSON) against schema (a
// structured-output schema of any root type, see
// [AssertSupportedValueSchema]) and returns path-qualified violations,
// sorted by path then message, or nil when the value is valid.
//
// It is total: it never panics and never fails itself. A schema outside the
// supported subset yields one violation per schema problem at the root
// path, each message naming the schema path; a value that is not lossless
// JSON yields a violation at the path where [canonjson.Canonicalize]
// stopped. To validate many values against one schema, compile it once
// ([CompileValueSchema]) and use [ValueSchema.Validate].
func ValidateStructuredValue(schema, value []byte) []Violation {
	root, _, svs := parseOutputSchema(schema, false)
	if len(svs) > 0 {
		out := make([]Violation, len(svs))
		for i, v := range svs {
			out[i] = Violation{Message: "unsupported output schema: " + v.String()}
		}
		return sortViolations(out)
	}
	_, vs := (&ValueSchema{root: root}).Validate(value)
	return vs
}

// Validate checks value against s. It returns the value in canonical form
// (see [canonjson.Canonicalize]) and nil when it is valid; otherwise nil
// and the path-qualified violations, sorted by path then message. A value
// that is not lossless JSON is one violation at the path where
// canonicalization stopped.
//
// Semantics: type (integer means a number with no fractional part; a type
// array matches any of its types), enum and const by JSON equality,
// minimum and maximum inclusively, minItems and maxItems, required
// properties (reported at the missing property's path), declared
// properties recursively, additionalProperties (false: each extra key
// reported at its path; a schema: each extra key's value checked against
// it), items for every element.
func (s *ValueSchema) Validate(value []byte) (json.RawMessage, []Violation) {
	canon, err := canonjson.Canonicalize(value, canonjson.Options{})
	if err != nil {
		var ce *canonjson.Error
		if safeerr.AsAny(err, &ce) {
			return nil, []Violation{{Path: ce.Path, Message: fmt.Sprintf("value is not lossless JSON (byte %d): %s", ce.Offset, ce.Reason)}}
		}
		return nil, []Violation{{Message: err.Error()}}
	}
	if vs := validateCanon(s.root, canon); len(vs) > 0 {
		return nil, sortViolations(vs)
	}
	return canon, nil
}

func validateStructured(n *node, val any, path string, vs *[]Violation) {
	add := func(p, format string, a ...any) {
		*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf(format, a...)})
	}
	if n.never {
		add(path, "no value is allowed here (schema false)")
		return
	}
	if n.types != 0 && !valueHasTypes(val, n.types) {
		got := jsonKind(val)
		if n.types&(kInteger|kNumber) == kInteger && got == "number" {
			got = "number with a fractional part"
		}
		add(path, "expected %s, got %s", strings.Join(typeNames(n.types), " or "), got)
		return
	}
	if n.enum != nil {
		cv, scalar := canonScalar(val)
		if !scalar || !slices.Contains(n.enum, cv) {
			add(path, "must be one of %s, got %s", strings.Join(n.enum, ", "), truncate(cv, 64))
		}
	}
	if n.constv != nil {
		cv, scalar := canonScalar(val)
		if !scalar || *n.constv != cv {
			add(path, "must be %s, got %s", *n.constv, truncate(cv, 64))
		}
	}
	switch x := val.(type) {
	case json.Number:
		if n.min == nil && n.max == nil {
			return
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !safeerr.Is(err, strconv.ErrRange) {
			return // canonical JSON numbers parse
		}
		if n.min != nil && f < *n.min {
			add(path, "must be at least %s, got %s", formatNumber(*n.min), truncate(string(x), 64))
		}
		if n.max != nil && f > *n.max {
			add(path, "must be at most %s, got %s", formatNumber(*n.max), truncate(string(x), 64))
		}
	case string:
		if n.base64 {
			if _, err := base64.StdEncoding.DecodeString(x); err != nil {
				add(path, "must be standard base64 (contentEncoding base64): %s", err.Error())
			}
		}
	case map[string]any:
		for _, name := range n.required {
			if _, present := x[name]; !present {
				add(path+"/"+escapePointer(name), "required property is missing")
			}
		}
		for k, v := range x {
			if ps, declared := n.props[k]; declared {
				validateStructured(ps, v, path+"/"+escapePointer(k), vs)
			} else if n.addl != nil {
				validateStructured(n.addl, v, path+"/"+escapePointer(k), vs)
			} else if n.closed {
				add(path+"/"+escapePointer(k), "additional property is not allowed")
			}
		}
	case []any:
		if n.minItems >= 0 && len(x) < n.minItems {
			add(path, "must have at least %d items, got %d", n.minItems, len(x))
		}
		if n.maxItems >= 0 && len(x) > n.maxItems {
			add(path, "must have at most %d items, got %d", n.maxItems, len(x))
		}
		if n.items != nil {
			for i, e := range x {
				validateStructured(n.items, e, path+"/"+strconv.Itoa(i), vs)
			}
		}
	}
}

// ValidateArgs checks tool-call arguments (canonical JSON, as produced by
// [canonjson.CanonicalizeObject]) against s, whose root must accept an
// object, over one decode: the root must be an object, then s's rules
// (see [ValueSchema.Validate]); with o.Target, also every key the Go type
// would read differently from a reader matching names exactly (see
// [ArgsOptions]). It returns every violation, sorted by path then message,
// or nil.
func (s *ValueSchema) ValidateArgs(args []byte, o ArgsOptions) []Violation {
	v, err := decodeUseNumber(args)
	if err != nil {
		return []Violation{{Message: "arguments are not valid JSON: " + err.Error()}}
	}
	var vs []Violation
	if _, ok := v.(map[string]any); !ok {
		vs = append(vs, Violation{Message: "expected object, got " + jsonKind(v)})
	} else {
		validateStructured(s.root, v, "", &vs)
	}
	if o.Target != nil {
		vs = append(vs, o.Target.checkKeys(v)...)
	}
	if len(vs) == 0 {
		return nil
	}
	return sortViolations(vs)
}
