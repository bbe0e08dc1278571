package schema

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// ErrInvalidArgs is the sentinel an [*ArgsError] matches with errors.Is.
var ErrInvalidArgs = errors.New("schema: invalid arguments")

// Violation is one way a value fails a schema.
type Violation struct {
	// Path is the JSON pointer (RFC 6901) of the offending value, such as
	// "/items/2/name"; "" is the root. For a missing required property it is
	// the path the property would have.
	Path string
	// Message says what is wrong, in lower case.
	Message string
}

// String renders the violation as "path: message", with "(root)" for the
// empty path.
func (v Violation) String() string {
	return pathOrRoot(v.Path) + ": " + v.Message
}

func sortViolations(vs []Violation) []Violation {
	slices.SortFunc(vs, func(a, b Violation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	return slices.Compact(vs)
}

// ArgsError is the typed error a tool returns when model-generated arguments
// fail its [Spec]. Its message lists every violation so the model can
// self-correct; it matches [ErrInvalidArgs] with errors.Is.
type ArgsError struct {
	// Tool is the tool's name; it may be empty.
	Tool string
	// Violations lists every problem, as returned by [ValidateArgs].
	Violations []Violation
}

// Error lists every violation on its own line:
//
//	invalid arguments for tool "read_file":
//	- /path: required property is missing
//	- /limit: expected number, got string
func (e *ArgsError) Error() string {
	var b strings.Builder
	b.WriteString("invalid arguments")
	if e.Tool != "" {
		b.WriteString(" for tool ")
		b.WriteString(strconv.Quote(e.Tool))
	}
	b.WriteByte(':')
	for _, v := range e.Violations {
		b.WriteString("\n- ")
		b.WriteString(v.String())
	}
	return b.String()
}

// Code returns "INVALID_ARGS", the structured failure class reported on the
// tool result.
func (e *ArgsError) Code() string { return "INVALID_ARGS" }

// Unwrap returns [ErrInvalidArgs].
func (e *ArgsError) Unwrap() error { return ErrInvalidArgs }

// ValidateArgs checks tool-call arguments (canonical JSON, as produced by
// [canonjson.CanonicalizeObject]) against s, the way the equivalent JSON Schema from
// [Spec.JSONSchema] would: the root must be an object; each required property
// must be present; each present property must have the declared JSON type
// ("integer" means a number with no fractional part, so 1.0 is an integer);
// enum members are compared by JSON equality; numbers must lie within
// Minimum and Maximum, a "date-time" string must be RFC 3339 as Go's
// time.Time reads it and a "base64" string must be standard base64 as
// encoding/json reads a []byte (so these keywords, which JSON Schema
// treats as annotations, are asserted here); nested objects and array
// items are checked recursively. Extra keys are allowed, defaults are not applied,
// and an object without Properties or an array without Items is only
// type-checked. A property whose own type is unknown is reported rather than
// skipped.
//
// It returns every violation, sorted by path then message, or nil when the
// arguments are valid. It never panics; input that is not JSON is reported as
// a violation at the root.
func ValidateArgs(s Spec, args []byte) []Violation {
	return ValidateArgsWith(s, args, ArgsOptions{})
}

// ArgsOptions tunes [ValidateArgsWith].
type ArgsOptions struct {
	// Target, when set, also reports every key that the Go type the
	// arguments will be decoded into would read differently from a
	// reader matching names exactly (see [Target]): a key that is not a
	// struct field's name but that encoding/json would decode into one
	// ("PATH" for "path", at any depth, below maps, slices and pointers
	// too), and map keys that are not in their Go key's canonical form.
	Target *Target
}

// ValidateArgsWith is [ValidateArgs] with options, over one decode of the
// arguments.
func ValidateArgsWith(s Spec, args []byte, o ArgsOptions) []Violation {
	v, err := decodeUseNumber(args)
	if err != nil {
		return []Violation{{Message: "arguments are not valid JSON: " + err.Error()}}
	}
	var vs []Violation
	obj, ok := v.(map[string]any)
	if !ok {
		vs = append(vs, Violation{Message: "expected object, got " + jsonKind(v)})
	} else {
		validateObject(s, obj, "", 0, &vs)
	}
	if o.Target != nil {
		vs = append(vs, o.Target.checkKeys(v)...)
	}
	if len(vs) == 0 {
		return nil
	}
	return sortViolations(vs)
}

func decodeUseNumber(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the top-level value")
	}
	return v, nil
}

func validateObject(s Spec, obj map[string]any, path string, depth int, vs *[]Violation) {
	if depth > maxSpecDepth {
		*vs = append(*vs, Violation{Path: path, Message: "value nested too deeply"})
		return
	}
	for _, name := range sortedKeys(s) {
		p := s[name]
		pp := path + "/" + escapePointer(name)
		val, present := obj[name]
		if !present {
			if p.Required {
				*vs = append(*vs, Violation{Path: pp, Message: "required property is missing"})
			}
			continue
		}
		validateValue(p, val, pp, depth+1, vs)
	}
}

func validateValue(p Prop, val any, path string, depth int, vs *[]Violation) {
	if depth > maxSpecDepth {
		*vs = append(*vs, Violation{Path: path, Message: "value nested too deeply"})
		return
	}
	got := jsonKind(val)
	switch p.Type {
	case TypeString, TypeNumber, TypeBoolean, TypeObject, TypeArray:
		if got != p.Type {
			*vs = append(*vs, Violation{Path: path, Message: "expected " + p.Type + ", got " + got})
			return
		}
	case TypeInteger:
		if got != "number" {
			*vs = append(*vs, Violation{Path: path, Message: "expected integer, got " + got})
			return
		}
		if !isIntegral(string(val.(json.Number))) {
			*vs = append(*vs, Violation{Path: path, Message: "expected integer, got number with a fractional part"})
			return
		}
	default:
		*vs = append(*vs, Violation{Path: path, Message: fmt.Sprintf("schema declares unknown type %q", p.Type)})
		return
	}
	if len(p.Enum) > 0 {
		cv, ok := canonScalar(val)
		found := false
		members := make([]string, 0, len(p.Enum))
		for _, m := range p.Enum {
			b, err := canonjson.CanonicalizeValue(m)
			if err != nil {
				continue
			}
			members = append(members, string(b))
			if ok && string(b) == cv {
				found = true
			}
		}
		if !found {
			*vs = append(*vs, Violation{Path: path, Message: "must be one of " + strings.Join(members, ", ") + ", got " + truncate(cv, 64)})
		}
	}
	if msg := refinementViolation(p, val); msg != "" {
		*vs = append(*vs, Violation{Path: path, Message: msg})
	}
	switch x := val.(type) {
	case map[string]any:
		if p.Properties != nil {
			validateObject(p.Properties, x, path, depth, vs)
		}
	case []any:
		if p.Items != nil {
			for i, e := range x {
				validateValue(*p.Items, e, path+"/"+strconv.Itoa(i), depth+1, vs)
			}
		}
	}
}

// jsonKind names the JSON type of a value decoded with UseNumber.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// canonScalar returns the canonical JSON text of a scalar decoded with
// UseNumber, for JSON-equality comparison; ok is false for containers.
func canonScalar(v any) (string, bool) {
	switch x := v.(type) {
	case nil:
		return "null", true
	case bool:
		return strconv.FormatBool(x), true
	case string:
		return string(canonjson.AppendString(nil, x)), true
	case json.Number:
		b, err := canonjson.Canonicalize([]byte(x), canonjson.Options{})
		if err != nil {
			return string(x), true
		}
		return string(b), true
	case []any:
		return "array", false
	default:
		return "object", false
	}
}

// refinementViolation checks a value already of p's type against p's
// Minimum, Maximum, Format and ContentEncoding, returning what is wrong or
// "".
func refinementViolation(p Prop, val any) string {
	switch x := val.(type) {
	case json.Number:
		if p.Minimum == nil && p.Maximum == nil {
			return ""
		}
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil && !safeerr.Is(err, strconv.ErrRange) {
			return ""
		}
		if p.Minimum != nil && f < *p.Minimum {
			return "must be at least " + formatNumber(*p.Minimum) + ", got " + truncate(string(x), 64)
		}
		if p.Maximum != nil && f > *p.Maximum {
			return "must be at most " + formatNumber(*p.Maximum) + ", got " + truncate(string(x), 64)
		}
	case string:
		if p.Format == FormatDateTime {
			var t time.Time
			if err := t.UnmarshalText([]byte(x)); err != nil {
				return "must be an RFC 3339 date-time (format date-time): " + truncate(err.Error(), 120)
			}
		}
		if p.ContentEncoding == EncodingBase64 {
			if _, err := base64.StdEncoding.DecodeString(x); err != nil {
				return "must be standard base64 (contentEncoding base64): " + err.Error()
			}
		}
	}
	return ""
}
