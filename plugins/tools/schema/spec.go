package schema

import (
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// The property types a [Prop] may declare.
const (
	TypeString  = "string"
	TypeNumber  = "number"
	TypeInteger = "integer"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
)

// maxSpecDepth bounds recursion over a Spec, which can be made cyclic by
// aliasing maps or Items pointers.
const maxSpecDepth = 64

// ErrInvalidSpec is wrapped by every error [Spec.Validate], [Spec.JSONSchema]
// and [FromStruct] return for a malformed spec.
var ErrInvalidSpec = errors.New("schema: invalid spec")

// Prop describes one tool parameter in the author-facing schema DSL. It is
// the Go form of the TypeScript SchemaSpec entry
// `{ type, required?, description?, enum?, default?, properties?, items? }`.
type Prop struct {
	// Type is one of "string", "number", "integer", "boolean", "object",
	// "array".
	Type string
	// Required marks the property as required in its enclosing object.
	Required bool
	// Description is carried into the JSON Schema and shown to the model.
	Description string
	// Enum, when non-empty, lists the allowed values. Only scalar types may
	// have an enum, and every member must be of the property's type.
	Enum []any
	// Default documents the value the tool assumes when the property is
	// absent. It is NOT applied by [ValidateArgs]. It must be JSON data of
	// the property's type.
	Default any
	// Properties describes the members of an "object" property. Nil means
	// any object (type-checked only).
	Properties Spec
	// Items describes the elements of an "array" property. Nil means any
	// array (type-checked only).
	Items *Prop
	// Minimum and Maximum, when set, bound a "number" or "integer"
	// property, inclusively (JSON Schema minimum and maximum). Each must be
	// finite and losslessly representable in JSON (an integral magnitude
	// between 2^53-1 and 1e21 is not; see [canonjson.Canonicalize]), and Minimum must
	// not exceed Maximum.
	Minimum, Maximum *float64
	// Format, when set, constrains a "string" property; the only format is
	// "date-time": an RFC 3339 date-time as Go's time.Time reads it
	// ("2024-05-01T12:00:00Z", "2024-05-01T14:00:00.5+02:00").
	Format string
	// ContentEncoding, when set, says how a "string" property encodes
	// bytes; the only encoding is "base64": standard base64 with padding,
	// as encoding/json reads a []byte.
	ContentEncoding string
}

// The values [Prop.Format] and [Prop.ContentEncoding] may take.
const (
	FormatDateTime = "date-time"
	EncodingBase64 = "base64"
)

// Spec is the author-facing parameter schema of a tool: the top-level
// argument object's properties by name. The zero value (nil) accepts any
// object.
type Spec map[string]Prop

// Validate checks the spec itself: every type is known, enums appear only on
// scalar types with members of that type, Items only on arrays, Properties
// only on objects, defaults are JSON of the declared type, Minimum and
// Maximum appear only on numbers and integers (see [Prop.Minimum]), Format
// and ContentEncoding only on strings with a known value, enum members and
// scalar defaults satisfy those refinements, no property name is empty, no
// property name, description, enum member or default string is invalid
// UTF-8, and nesting is at most 64 levels (which also catches cycles).
// All problems are reported, sorted, one per line, each prefixed with its
// position in the spec ("/name", "/name/properties/child", "/name/items");
// the error wraps [ErrInvalidSpec].
func (s Spec) Validate() error {
	var errs []string
	v := &specValidator{onPath: map[uintptr]bool{}, errs: &errs}
	v.spec(s, "", 0)
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(errs)
	return fmt.Errorf("%w:\n- %s", ErrInvalidSpec, strings.Join(errs, "\n- "))
}

// specValidator walks a Spec, detecting cycles made by aliasing maps or
// Items pointers (which would otherwise make every walker loop).
type specValidator struct {
	onPath map[uintptr]bool
	errs   *[]string
}

func (v *specValidator) spec(s Spec, path string, depth int) {
	errs := v.errs
	if depth > maxSpecDepth {
		*errs = append(*errs, pathOrRoot(path)+": spec nested deeper than 64 levels")
		return
	}
	if s == nil {
		return
	}
	id := reflect.ValueOf(s).Pointer()
	if v.onPath[id] {
		*errs = append(*errs, pathOrRoot(path)+": cyclic spec (a Properties map contains itself)")
		return
	}
	v.onPath[id] = true
	defer delete(v.onPath, id)
	for _, name := range sortedKeys(s) {
		if name == "" {
			*errs = append(*errs, pathOrRoot(path)+": empty property name")
		}
		if !utf8.ValidString(name) {
			*errs = append(*errs, pathOrRoot(path)+fmt.Sprintf(": property name %q is not valid UTF-8", name))
		}
		v.prop(s[name], path+"/"+escapePointer(name), depth+1)
	}
}

func (v *specValidator) prop(p Prop, path string, depth int) {
	add := func(format string, a ...any) {
		*v.errs = append(*v.errs, path+": "+fmt.Sprintf(format, a...))
	}
	if depth > maxSpecDepth {
		add("spec nested deeper than 64 levels")
		return
	}
	switch p.Type {
	case TypeString, TypeNumber, TypeInteger, TypeBoolean, TypeObject, TypeArray:
	default:
		add("unknown type %q (want string, number, integer, boolean, object or array)", p.Type)
	}
	if !utf8.ValidString(p.Description) {
		add("description is not valid UTF-8")
	}
	if len(p.Enum) > 0 {
		if p.Type == TypeObject || p.Type == TypeArray {
			add("enum is only allowed on scalar types, not %s", p.Type)
		} else {
			for i, m := range p.Enum {
				b, err := canonjson.CanonicalizeValue(m)
				if err != nil {
					add("enum member %d is not JSON: %v", i, err)
					continue
				}
				if !scalarMatchesType(b, p.Type) {
					add("enum member %d (%s) is not of type %s", i, truncate(string(b), 40), p.Type)
				}
			}
		}
	}
	if p.Default != nil {
		b, err := canonjson.CanonicalizeValue(p.Default)
		if err != nil {
			add("default is not JSON: %v", err)
		} else if got := jsonKindOfByte(b[0]); !kindMatchesType(b, p.Type) {
			add("default is %s, not %s", got, p.Type)
		}
	}
	v.refinements(p, add)
	if p.Items != nil {
		if p.Type != TypeArray {
			add("items is only allowed on type array, not %q", p.Type)
		}
		id := reflect.ValueOf(p.Items).Pointer()
		if v.onPath[id] {
			add("cyclic spec (Items points to an enclosing Prop)")
		} else {
			v.onPath[id] = true
			v.prop(*p.Items, path+"/items", depth+1)
			delete(v.onPath, id)
		}
	}
	if p.Properties != nil {
		if p.Type != TypeObject {
			add("properties is only allowed on type object, not %q", p.Type)
		}
		v.spec(p.Properties, path+"/properties", depth+1)
	}
}

// refinements checks Minimum, Maximum, Format and ContentEncoding, and
// that enum members and a scalar default satisfy them.
func (v *specValidator) refinements(p Prop, add func(format string, a ...any)) {
	numeric := p.Type == TypeNumber || p.Type == TypeInteger
	for _, b := range []struct {
		name string
		v    *float64
	}{{"minimum", p.Minimum}, {"maximum", p.Maximum}} {
		switch {
		case b.v == nil:
		case !numeric:
			add("%s is only allowed on types number and integer, not %q", b.name, p.Type)
		case math.IsNaN(*b.v) || math.IsInf(*b.v, 0):
			add("%s is not a finite number", b.name)
		case math.Abs(*b.v) > canonjson.MaxSafeInteger && math.Abs(*b.v) < 1e21 && *b.v == math.Trunc(*b.v):
			add("%s %s is an integer beyond 2^53-1, which JSON cannot carry losslessly", b.name, strconv.FormatFloat(*b.v, 'f', 0, 64))
		}
	}
	if p.Minimum != nil && p.Maximum != nil && *p.Minimum > *p.Maximum {
		add("minimum %s is greater than maximum %s", formatNumber(*p.Minimum), formatNumber(*p.Maximum))
	}
	if p.Format != "" {
		if p.Type != TypeString {
			add("format is only allowed on type string, not %q", p.Type)
		} else if p.Format != FormatDateTime {
			add("unknown format %q (want %q)", p.Format, FormatDateTime)
		}
	}
	if p.ContentEncoding != "" {
		if p.Type != TypeString {
			add("contentEncoding is only allowed on type string, not %q", p.Type)
		} else if p.ContentEncoding != EncodingBase64 {
			add("unknown contentEncoding %q (want %q)", p.ContentEncoding, EncodingBase64)
		}
	}
	if p.Minimum == nil && p.Maximum == nil && p.Format == "" && p.ContentEncoding == "" {
		return
	}
	check := func(what string, m any) {
		b, err := canonjson.CanonicalizeValue(m)
		if err != nil || !kindMatchesType(b, p.Type) {
			return // reported as not JSON or of the wrong type
		}
		val, err := decodeUseNumber(b)
		if err != nil {
			return
		}
		if msg := refinementViolation(p, val); msg != "" {
			add("%s %s %s", what, truncate(string(b), 40), msg)
		}
	}
	for i, m := range p.Enum {
		check("enum member "+strconv.Itoa(i), m)
	}
	if p.Default != nil {
		check("default", p.Default)
	}
}

// formatNumber writes a finite float64 as canonical JSON would.
func formatNumber(f float64) string { return string(canonjson.AppendNumber(nil, f)) }

func pathOrRoot(p string) string {
	if p == "" {
		return "(root)"
	}
	return p
}

// kindMatchesType reports whether canonical JSON b is a value of the DSL
// type typ.
func kindMatchesType(b []byte, typ string) bool {
	switch k := jsonKindOfByte(b[0]); typ {
	case TypeInteger:
		return k == "number" && isIntegral(string(b))
	case "":
		return true
	default:
		return k == typ
	}
}

func scalarMatchesType(b []byte, typ string) bool {
	return kindMatchesType(b, typ)
}

// isIntegral reports whether the JSON number literal n has no fractional
// part.
func isIntegral(n string) bool {
	if !strings.ContainsAny(n, ".eE") {
		return true
	}
	f, err := strconv.ParseFloat(n, 64)
	return err == nil && !math.IsInf(f, 0) && f == math.Trunc(f)
}

// JSONSchema converts the spec to standard JSON Schema:
// {"type":"object","properties":{...},"required":[...]} with properties in
// sorted order, each property written as
// {"type","description","enum","default","minimum","maximum","format",
// "contentEncoding","properties","required","items"} (absent members
// omitted), nested objects carrying their own sorted
// "required" list, and "required" omitted when empty. A nil or empty spec
// yields {"type":"object","properties":{}}. The output is canonical JSON (see
// [canonjson.Canonicalize]) and byte-identical for equal specs. It returns
// [Spec.Validate]'s error for a malformed spec.
func (s Spec) JSONSchema() ([]byte, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	out := []byte(`{"type":"object",`)
	out, err := appendSpecBody(out, s)
	if err != nil {
		return nil, err
	}
	return append(out, '}'), nil
}

func appendSpecBody(out []byte, s Spec) ([]byte, error) {
	names := sortedKeys(s)
	out = append(out, `"properties":{`...)
	var required []string
	for i, name := range names {
		if i > 0 {
			out = append(out, ',')
		}
		out = canonjson.AppendString(out, name)
		out = append(out, ':')
		var err error
		if out, err = appendProp(out, s[name]); err != nil {
			return nil, err
		}
		if s[name].Required {
			required = append(required, name)
		}
	}
	out = append(out, '}')
	if len(required) > 0 {
		out = append(out, `,"required":[`...)
		for i, name := range required {
			if i > 0 {
				out = append(out, ',')
			}
			out = canonjson.AppendString(out, name)
		}
		out = append(out, ']')
	}
	return out, nil
}

func appendProp(out []byte, p Prop) ([]byte, error) {
	out = append(out, `{"type":`...)
	out = canonjson.AppendString(out, p.Type)
	if p.Description != "" {
		out = append(out, `,"description":`...)
		out = canonjson.AppendString(out, p.Description)
	}
	if len(p.Enum) > 0 {
		out = append(out, `,"enum":[`...)
		for i, m := range p.Enum {
			if i > 0 {
				out = append(out, ',')
			}
			b, err := canonjson.CanonicalizeValue(m)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
		out = append(out, ']')
	}
	if p.Default != nil {
		b, err := canonjson.CanonicalizeValue(p.Default)
		if err != nil {
			return nil, err
		}
		out = append(out, `,"default":`...)
		out = append(out, b...)
	}
	if p.Minimum != nil {
		out = append(out, `,"minimum":`...)
		out = canonjson.AppendNumber(out, *p.Minimum)
	}
	if p.Maximum != nil {
		out = append(out, `,"maximum":`...)
		out = canonjson.AppendNumber(out, *p.Maximum)
	}
	if p.Format != "" {
		out = append(out, `,"format":`...)
		out = canonjson.AppendString(out, p.Format)
	}
	if p.ContentEncoding != "" {
		out = append(out, `,"contentEncoding":`...)
		out = canonjson.AppendString(out, p.ContentEncoding)
	}
	if p.Properties != nil {
		out = append(out, ',')
		var err error
		if out, err = appendSpecBody(out, p.Properties); err != nil {
			return nil, err
		}
	}
	if p.Items != nil {
		out = append(out, `,"items":`...)
		var err error
		if out, err = appendProp(out, *p.Items); err != nil {
			return nil, err
		}
	}
	return append(out, '}'), nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var (
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
)

// FromStruct derives a [Spec] from struct type T (or *T), so that a tool's
// Go argument type and its wire schema cannot drift. It describes what
// encoding/json decodes into T.
//
// The properties are the fields encoding/json decodes, under the names it
// matches exactly: exported fields and those promoted from embedded
// structs without a json name (as Go's embedding rules, amended by json
// tags, promote them), named by a valid json tag name or else the Go
// name; json:"-" and unexported fields are skipped. Other tags:
//
//   - jsonschema:"..." (or its alias desc:"...") sets the description;
//   - dsh:"..." holds comma-separated options: "required", "enum=a|b|c"
//     (members parsed according to the field's type) and "default=..."
//     (parsed likewise; JSON for object and array fields). Because a default
//     may contain commas, "default=" must be the last option and takes the
//     rest of the tag.
//
// Go types map as: string -> string; bool -> boolean; signed and unsigned
// integers -> integer with the type's range as minimum and maximum (64-bit
// integers, whose range JSON cannot carry losslessly, are bounded by
// ±(2^53-1), the limit every argument is held to anyway; see
// [canonjson.Canonicalize]); float32 -> number bounded by
// ±math.MaxFloat32; float64 -> number; time.Time -> string with format
// "date-time"; []byte -> string with contentEncoding "base64"; other types
// whose pointer implements encoding.TextUnmarshaler (and json.Unmarshaler
// types that also have text methods) -> string; struct -> object with
// properties (recursively); slices and arrays -> array with items; maps and
// interfaces -> object without properties. Pointers are dereferenced. A
// json.Unmarshaler without text methods is described by its Go kind (its
// decoder has the last word). A property is required only when tagged
// dsh:"required"; a pointer field is how the Go side represents an absent
// optional value. (tools.Define derives a struct's schema with [Infer]
// instead, as the MCP go-sdk does: there a field is required unless
// tagged omitempty or omitzero.) A field with any other tag (see [Infer])
// is refused.
//
// FromStruct fails (wrapping [ErrInvalidSpec]) for a non-struct T, recursive
// types (a Spec cannot express them), channels, functions, complex numbers,
// types with a custom json.Marshaler and no text methods, fields with the
// json ",string" option, two fields that share a name (whether one shadows
// the other or encoding/json drops both), malformed dsh tags, and any result
// [Spec.Validate] rejects.
func FromStruct[T any]() (Spec, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("%w: FromStruct needs a struct type, got %s", ErrInvalidSpec, t)
	}
	d := &deriver{onPath: map[reflect.Type]bool{}}
	s, err := d.structSpec(t, "")
	if err != nil {
		return nil, err
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

type deriver struct {
	onPath map[reflect.Type]bool
}

func (d *deriver) errorf(path, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, pathOrRoot(path), fmt.Sprintf(format, a...))
}

func (d *deriver) structSpec(t reflect.Type, path string) (Spec, error) {
	if d.onPath[t] {
		return nil, d.errorf(path, "recursive type %s cannot be expressed as a Spec", t)
	}
	d.onPath[t] = true
	defer delete(d.onPath, t)
	fields, conflicts := jsonFields(t)
	if len(conflicts) > 0 {
		return nil, d.errorf(path+"/"+escapePointer(conflicts[0]), "duplicate property name %q (fields of %s, or promoted into it from embedded structs, share it)", conflicts[0], t)
	}
	s := make(Spec, len(fields))
	for _, f := range fields {
		fpath := path + "/" + escapePointer(f.name)
		if f.quoted {
			return nil, d.errorf(fpath, `json ",string" option is not supported`)
		}
		if err := checkTags(f.sf.Tag); err != nil {
			return nil, d.errorf(fpath, "field %s.%s: %v", t, f.sf.Name, err)
		}
		p, err := d.prop(f.sf.Type, fpath)
		if err != nil {
			return nil, err
		}
		p.Description = f.sf.Tag.Get("desc")
		if js, ok := f.sf.Tag.Lookup("jsonschema"); ok {
			if _, both := f.sf.Tag.Lookup("desc"); both {
				return nil, d.errorf(fpath, "both a jsonschema and a desc tag (desc is an alias of jsonschema)")
			}
			p.Description = js
		}
		if err := applyDshTag(&p, f.sf.Tag.Get("dsh")); err != nil {
			return nil, d.errorf(fpath, "%v", err)
		}
		s[f.name] = p
	}
	return s, nil
}

var timeType = reflect.TypeFor[time.Time]()

// hasTextMethods reports whether t or *t implements encoding.TextMarshaler
// or encoding.TextUnmarshaler.
func hasTextMethods(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(textMarshalerType) || p.Implements(textMarshalerType) || p.Implements(textUnmarshalerType)
}

func hasJSONMarshaler(t reflect.Type) bool {
	return t.Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(jsonMarshalerType)
}

func (d *deriver) prop(t reflect.Type, path string) (Prop, error) {
	sh, t := shapeOf(t)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return Prop{Type: TypeString, Format: FormatDateTime}, nil
	case sh == shapeText:
		return Prop{Type: TypeString}, nil
	case hasJSONMarshaler(t) || sh == shapeJSON && hasTextMethods(t):
		if hasTextMethods(t) {
			return Prop{Type: TypeString}, nil
		}
		return Prop{}, d.errorf(path, "type %s has a custom json.Marshaler; its JSON shape cannot be derived", t)
	}
	switch t.Kind() {
	case reflect.String:
		return Prop{Type: TypeString}, nil
	case reflect.Bool:
		return Prop{Type: TypeBoolean}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		lo, hi := intRange(t)
		return Prop{Type: TypeInteger, Minimum: &lo, Maximum: &hi}, nil
	case reflect.Float32:
		lo, hi := -math.MaxFloat32, math.MaxFloat32
		return Prop{Type: TypeNumber, Minimum: &lo, Maximum: &hi}, nil
	case reflect.Float64:
		return Prop{Type: TypeNumber}, nil
	case reflect.Struct:
		s, err := d.structSpec(t, path+"/properties")
		if err != nil {
			return Prop{}, err
		}
		return Prop{Type: TypeObject, Properties: s}, nil
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return Prop{Type: TypeString, ContentEncoding: EncodingBase64}, nil
		}
		if d.onPath[t] {
			return Prop{}, d.errorf(path, "recursive type %s cannot be expressed as a Spec", t)
		}
		d.onPath[t] = true
		defer delete(d.onPath, t)
		it, err := d.prop(t.Elem(), path+"/items")
		if err != nil {
			return Prop{}, err
		}
		return Prop{Type: TypeArray, Items: &it}, nil
	case reflect.Map, reflect.Interface:
		return Prop{Type: TypeObject}, nil
	default:
		return Prop{}, d.errorf(path, "unsupported Go kind %s", t.Kind())
	}
}

// intRange is the range of integer type t that arguments can carry: the
// type's own, clipped to ±(2^53-1).
func intRange(t reflect.Type) (lo, hi float64) {
	bits := t.Bits()
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		if bits >= 53 {
			return 0, canonjson.MaxSafeInteger
		}
		return 0, float64(uint64(1)<<bits - 1)
	}
	if bits >= 54 {
		return -canonjson.MaxSafeInteger, canonjson.MaxSafeInteger
	}
	return -float64(int64(1) << (bits - 1)), float64(int64(1)<<(bits-1) - 1)
}

func applyDshTag(p *Prop, tag string) error {
	rest := tag
	for rest != "" {
		var opt string
		if strings.HasPrefix(rest, "default=") {
			opt, rest = rest, ""
		} else {
			opt, rest, _ = strings.Cut(rest, ",")
		}
		opt = strings.TrimSpace(opt)
		switch {
		case opt == "":
		case opt == "required":
			p.Required = true
		case strings.HasPrefix(opt, "enum="):
			if p.Type == TypeObject || p.Type == TypeArray {
				return fmt.Errorf("enum is only allowed on scalar types, not %s", p.Type)
			}
			for m := range strings.SplitSeq(strings.TrimPrefix(opt, "enum="), "|") {
				v, err := parseTagValue(m, p.Type)
				if err != nil {
					return fmt.Errorf("enum member %q: %v", m, err)
				}
				p.Enum = append(p.Enum, v)
			}
		case strings.HasPrefix(opt, "default="):
			v, err := parseTagValue(strings.TrimPrefix(opt, "default="), p.Type)
			if err != nil {
				return fmt.Errorf("default: %v", err)
			}
			p.Default = v
		default:
			return fmt.Errorf("unknown dsh tag option %q", opt)
		}
	}
	return nil
}

func parseTagValue(s, typ string) (any, error) {
	switch typ {
	case TypeString:
		return s, nil
	case TypeBoolean:
		return strconv.ParseBool(s)
	case TypeInteger:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, err
		}
		if n > canonjson.MaxSafeInteger || n < -canonjson.MaxSafeInteger {
			return nil, errors.New("integer exceeds 2^53-1")
		}
		return n, nil
	case TypeNumber:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, err
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, errors.New("not a finite number")
		}
		return f, nil
	default:
		b, err := canonjson.Canonicalize([]byte(s), canonjson.Options{})
		if err != nil {
			return nil, err
		}
		return json.RawMessage(b), nil
	}
}
