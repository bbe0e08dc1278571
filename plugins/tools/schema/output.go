package schema

import (
	"encoding/json"
	"errors"
	"fmt"
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

var outputTypes = map[string]bool{
	"object": true, "array": true, "string": true, "number": true,
	"integer": true, "boolean": true, "null": true,
}

// AssertSupportedOutputSchema checks that schema is in the structured-output
// subset and returns nil, or an [*OutputSchemaError] listing EVERY violation.
//
// The schema must be lossless JSON (see [canonjson.Canonicalize]) whose root is an
// object schema with "type": "object". Every (sub)schema must be a JSON
// object using only these keywords:
//
//   - type: a single string, one of object, array, string, number, integer,
//     boolean, null (type arrays are rejected);
//   - properties: an object whose values are schemas (only with type object
//     or no type);
//   - required: an array of unique strings, each declared in properties;
//   - additionalProperties: a boolean (schemas are rejected);
//   - items: a single schema (tuple arrays are rejected; only with type
//     array or no type);
//   - enum: a non-empty array of strings, numbers, booleans or null, each
//     matching type when type is given;
//   - const: a string, number, boolean or null;
//   - the annotations description and title (strings), default (any JSON)
//     and examples (an array), which validation ignores.
//
// Anything else — $ref, oneOf, anyOf, allOf, not, pattern, format, minimum,
// boolean schemas, ... — is rejected, naming the keyword and its path: a
// keyword the validator does not enforce would validate less than the schema
// promises.
func AssertSupportedOutputSchema(schema []byte) error {
	_, vs := parseOutputSchema(schema)
	if len(vs) == 0 {
		return nil
	}
	return &OutputSchemaError{Violations: vs}
}

func parseOutputSchema(schema []byte) (any, []Violation) {
	canon, err := canonjson.Canonicalize(schema, canonjson.Options{})
	if err != nil {
		var ce *canonjson.Error
		if safeerr.AsAny(err, &ce) {
			return nil, []Violation{{Path: ce.Path, Message: fmt.Sprintf("schema is not lossless JSON (byte %d): %s", ce.Offset, ce.Reason)}}
		}
		return nil, []Violation{{Message: err.Error()}}
	}
	root, err := decodeUseNumber(canon)
	if err != nil {
		return nil, []Violation{{Message: "schema is not JSON: " + err.Error()}}
	}
	var vs []Violation
	if m, ok := root.(map[string]any); !ok {
		vs = append(vs, Violation{Message: "root schema must be an object schema, got " + jsonKind(root)})
	} else {
		if t, ok := m["type"].(string); !ok || t != "object" {
			vs = append(vs, Violation{Path: "/type", Message: `root schema must have "type": "object"`})
		}
		checkOutputSchema(root, "", &vs)
	}
	if len(vs) == 0 {
		return root, nil
	}
	return nil, sortViolations(vs)
}

func checkOutputSchema(node any, path string, vs *[]Violation) {
	add := func(p, format string, a ...any) {
		*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf(format, a...)})
	}
	m, ok := node.(map[string]any)
	if !ok {
		add(path, "schema must be an object, got %s", jsonKind(node))
		return
	}
	typ := ""
	if t, present := m["type"]; present {
		switch x := t.(type) {
		case string:
			if outputTypes[x] {
				typ = x
			} else {
				add(path+"/type", "unsupported type %q", truncate(x, 40))
			}
		case []any:
			add(path+"/type", "type arrays are not supported; use a single type string")
		default:
			add(path+"/type", "type must be a string, got %s", jsonKind(t))
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
			if typ != "" && typ != "object" {
				add(kp, "properties is only allowed with type object, not %s", typ)
			}
			for _, name := range sortedKeys(props) {
				checkOutputSchema(props[name], kp+"/"+escapePointer(name), vs)
			}
		case "required":
			arr, ok := v.([]any)
			if !ok {
				add(kp, "required must be an array of strings, got %s", jsonKind(v))
				continue
			}
			if typ != "" && typ != "object" {
				add(kp, "required is only allowed with type object, not %s", typ)
			}
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
					if _, declared := props[s]; !declared {
						add(ep, "required property %q is not declared in properties", truncate(s, 40))
					}
				}
			}
		case "additionalProperties":
			if _, ok := v.(bool); !ok {
				add(kp, "additionalProperties must be a boolean, got %s", jsonKind(v))
			}
			if typ != "" && typ != "object" {
				add(kp, "additionalProperties is only allowed with type object, not %s", typ)
			}
		case "items":
			if _, ok := v.([]any); ok {
				add(kp, "items must be a single schema; tuple arrays are not supported")
				continue
			}
			if typ != "" && typ != "array" {
				add(kp, "items is only allowed with type array, not %s", typ)
			}
			checkOutputSchema(v, kp, vs)
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
				} else if typ != "" && !valueHasType(e, typ) {
					add(ep, "enum member is %s, not %s", jsonKind(e), typ)
				}
			}
		case "const":
			if !isScalar(v) {
				add(kp, "const must be a string, number, boolean or null, got %s", jsonKind(v))
			} else if typ != "" && !valueHasType(v, typ) {
				add(kp, "const is %s, not %s", jsonKind(v), typ)
			}
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
}

func isScalar(v any) bool {
	switch v.(type) {
	case nil, bool, string, json.Number:
		return true
	}
	return false
}

// valueHasType reports whether a value decoded with UseNumber is of the JSON
// Schema type typ.
func valueHasType(v any, typ string) bool {
	k := jsonKind(v)
	if typ == "integer" {
		return k == "number" && isIntegral(string(v.(json.Number)))
	}
	return k == typ
}

// ValidateStructuredValue validates value (JSON) against schema (a
// structured-output schema) and returns path-qualified violations, sorted by
// path then message, or nil when the value is valid.
//
// It is total: it never panics and never fails itself. A schema outside the
// supported subset (see [AssertSupportedOutputSchema]) yields one violation
// per schema problem at the root path, each message naming the schema path;
// a value that is not lossless JSON yields a violation at the path where
// [canonjson.Canonicalize] stopped.
//
// Semantics: type (integer means a number with no fractional part), enum and
// const by JSON equality, required properties (reported at the missing
// property's path), declared properties recursively, additionalProperties
// false (each extra key reported at its path), items for every element.
func ValidateStructuredValue(schema, value []byte) []Violation {
	root, svs := parseOutputSchema(schema)
	if len(svs) > 0 {
		out := make([]Violation, len(svs))
		for i, v := range svs {
			out[i] = Violation{Message: "unsupported output schema: " + v.String()}
		}
		return sortViolations(out)
	}
	canon, err := canonjson.Canonicalize(value, canonjson.Options{})
	if err != nil {
		var ce *canonjson.Error
		if safeerr.AsAny(err, &ce) {
			return []Violation{{Path: ce.Path, Message: fmt.Sprintf("value is not lossless JSON (byte %d): %s", ce.Offset, ce.Reason)}}
		}
		return []Violation{{Message: err.Error()}}
	}
	val, err := decodeUseNumber(canon)
	if err != nil {
		return []Violation{{Message: "value is not JSON: " + err.Error()}}
	}
	var vs []Violation
	validateStructured(root, val, "", &vs)
	if len(vs) == 0 {
		return nil
	}
	return sortViolations(vs)
}

func validateStructured(schema, val any, path string, vs *[]Violation) {
	m, _ := schema.(map[string]any)
	add := func(p, format string, a ...any) {
		*vs = append(*vs, Violation{Path: p, Message: fmt.Sprintf(format, a...)})
	}
	if t, ok := m["type"].(string); ok && !valueHasType(val, t) {
		got := jsonKind(val)
		if t == "integer" && got == "number" {
			got = "number with a fractional part"
		}
		add(path, "expected %s, got %s", t, got)
		return
	}
	if enum, ok := m["enum"].([]any); ok {
		cv, scalar := canonScalar(val)
		found := false
		members := make([]string, 0, len(enum))
		for _, e := range enum {
			ce, _ := canonScalar(e)
			members = append(members, ce)
			if scalar && ce == cv {
				found = true
			}
		}
		if !found {
			add(path, "must be one of %s, got %s", strings.Join(members, ", "), truncate(cv, 64))
		}
	}
	if c, ok := m["const"]; ok {
		cc, _ := canonScalar(c)
		cv, scalar := canonScalar(val)
		if !scalar || cc != cv {
			add(path, "must be %s, got %s", cc, truncate(cv, 64))
		}
	}
	switch x := val.(type) {
	case map[string]any:
		props, _ := m["properties"].(map[string]any)
		if req, ok := m["required"].([]any); ok {
			for _, r := range req {
				name, _ := r.(string)
				if _, present := x[name]; !present {
					add(path+"/"+escapePointer(name), "required property is missing")
				}
			}
		}
		for _, k := range sortedKeys(x) {
			kp := path + "/" + escapePointer(k)
			if ps, declared := props[k]; declared {
				validateStructured(ps, x[k], kp, vs)
			} else if ap, ok := m["additionalProperties"].(bool); ok && !ap {
				add(kp, "additional property is not allowed")
			}
		}
	case []any:
		if items, ok := m["items"]; ok {
			for i, e := range x {
				validateStructured(items, e, path+"/"+strconv.Itoa(i), vs)
			}
		}
	}
}
