package schema

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

// The struct tags [Infer] reads, and the tags of other encodings it knows
// do not bear on the JSON schema. Any other tag on a field is an error: a
// misspelt or foreign schema tag (required:"true", description:"...",
// validate:"required") would otherwise be ignored without a word.
var (
	schemaTags  = []string{"json", "jsonschema", "desc", "dsh"}
	foreignTags = []string{"yaml", "toml", "xml", "mapstructure", "db", "bson", "msgpack", "cbor"}
)

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// Infer returns the JSON Schema of Go type t, in canonical JSON, as the
// MCP go-sdk's mcp.AddTool publishes it for a tool's In and Out types: the
// schema github.com/google/jsonschema-go infers (ForType), a pointer
// described by its element type. So a struct is an object that allows no
// additional properties, whose fields are required unless tagged
// omitempty or omitzero and described by their jsonschema tag; a slice or
// a pointer also allows null; a map is an object whose additionalProperties
// is the element's schema; int8 to uint32 carry their range.
//
// Where jsonschema-go's schema would differ from what encoding/json
// actually reads and writes, Infer corrects it or refuses, so that the
// schema describes the value losslessly:
//
//   - []byte (which encoding/json carries as base64) is
//     {"type":["null","string"],"contentEncoding":"base64"};
//     json.RawMessage is any value ({});
//   - a type with its own text methods (encoding.TextMarshaler or
//     TextUnmarshaler) is a string;
//   - a type with its own json.Marshaler and no text methods is refused
//     (its JSON shape cannot be derived); a json.Unmarshaler without text
//     methods is described by its Go kind (its decoder has the last word);
//   - a field with the json ",string" option, two fields that share a JSON
//     name, and a struct whose fields jsonschema-go names differently from
//     encoding/json (an embedded struct with a json name) are refused.
//
// The tags desc:"..." (the description) and dsh:"required,enum=a|b,
// default=..." (see [FromStruct]) are kept as aliases: desc sets the
// description (with a jsonschema tag too it is an error), required makes
// the field required even with omitempty, enum and default add those
// keywords. A field carrying any other tag than json, jsonschema, desc and
// dsh (and the tags of other encodings: yaml, toml, xml, mapstructure, db,
// bson, msgpack, cbor) is refused, naming the tag.
//
// The result is in the structured-output subset ([CompileValueSchema]).
// Errors wrap [ErrInvalidSpec].
func Infer(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	in := &inferrer{overrides: map[reflect.Type]*jsonschema.Schema{}, seen: map[reflect.Type]bool{}}
	if err := in.types(t, ""); err != nil {
		return nil, err
	}
	js, err := jsonschema.ForType(t, &jsonschema.ForOptions{TypeSchemas: in.overrides})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if err := in.aliases(t, js, "", map[reflect.Type]bool{}); err != nil {
		return nil, err
	}
	b, err := json.Marshal(js)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	canon, err := canonjson.Canonicalize(b, canonjson.Options{})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	if _, err := CompileValueSchema(canon); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidSpec, err)
	}
	return canon, nil
}

// InferFor is [Infer] for type T.
func InferFor[T any]() (json.RawMessage, error) { return Infer(reflect.TypeFor[T]()) }

type inferrer struct {
	overrides map[reflect.Type]*jsonschema.Schema
	seen      map[reflect.Type]bool
}

func (in *inferrer) errorf(path, format string, a ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidSpec, pathOrRoot(path), fmt.Sprintf(format, a...))
}

// types walks the types reachable from t, records the schemas that
// correct jsonschema-go's, refuses what cannot be described, and checks
// every field's tags.
func (in *inferrer) types(t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if in.seen[t] {
		return nil // a cycle is jsonschema-go's to report
	}
	in.seen[t] = true
	sh, _ := shapeOf(t)
	switch {
	case t == timeType:
		return nil // jsonschema-go: a string
	case t == rawMessageType:
		in.overrides[t] = &jsonschema.Schema{}
		return nil
	case sh == shapeText:
		in.overrides[t] = &jsonschema.Schema{Type: "string"}
		return nil
	case hasJSONMarshaler(t) && !hasTextMethods(t):
		return in.errorf(path, "type %s has a custom json.Marshaler (and no text methods); its JSON shape cannot be derived", t)
	case hasTextMethods(t):
		in.overrides[t] = &jsonschema.Schema{Type: "string"}
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			in.overrides[t] = &jsonschema.Schema{Types: []string{"null", "string"}, ContentEncoding: "base64"}
			return nil
		}
		return in.types(t.Elem(), path+"/items")
	case reflect.Map:
		if err := in.types(t.Elem(), path+"/additionalProperties"); err != nil {
			return err
		}
		if r := keyRuleOf(t.Key()); r == keyInt || r == keyUint {
			// encoding/json reads integer keys; jsonschema-go refuses them.
			elem, err := jsonschema.ForType(t.Elem(), &jsonschema.ForOptions{TypeSchemas: in.overrides})
			if err != nil {
				return in.errorf(path, "%v", err)
			}
			if err := in.aliases(t.Elem(), elem, path+"/additionalProperties", map[reflect.Type]bool{}); err != nil {
				return err
			}
			in.overrides[t] = &jsonschema.Schema{Type: "object", AdditionalProperties: elem}
		}
		return nil
	case reflect.Struct:
		fields, conflicts := jsonFields(t)
		if len(conflicts) > 0 {
			return in.errorf(path+"/"+escapePointer(conflicts[0]), "duplicate property name %q (fields of %s, or promoted into it from embedded structs, share it)", conflicts[0], t)
		}
		for _, f := range fields {
			fpath := path + "/" + escapePointer(f.name)
			if f.quoted {
				return in.errorf(fpath, `json ",string" option is not supported`)
			}
			if err := checkTags(f.sf.Tag); err != nil {
				return in.errorf(fpath, "field %s.%s: %v", t, f.sf.Name, err)
			}
			if err := in.types(f.sf.Type, fpath); err != nil {
				return err
			}
		}
	}
	return nil
}

// aliases applies the desc and dsh tags to js, the schema jsonschema-go
// inferred for t, and checks that its properties are the fields
// encoding/json reads.
func (in *inferrer) aliases(t reflect.Type, js *jsonschema.Schema, path string, onPath map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if js == nil || in.overrides[t] != nil || onPath[t] {
		return nil
	}
	onPath[t] = true
	defer delete(onPath, t)
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return in.aliases(t.Elem(), js.Items, path+"/items", onPath)
	case reflect.Map:
		return in.aliases(t.Elem(), js.AdditionalProperties, path+"/additionalProperties", onPath)
	case reflect.Struct:
		if t == timeType {
			return nil
		}
		fields, _ := jsonFields(t)
		names := make([]string, 0, len(fields))
		for _, f := range fields {
			names = append(names, f.name)
		}
		slices.Sort(names)
		if got := slices.Sorted(maps.Keys(js.Properties)); !slices.Equal(got, names) {
			return in.errorf(path, "jsonschema-go names the fields of %s %q but encoding/json reads %q (an embedded struct with a json name?)", t, got, names)
		}
		for _, f := range fields {
			fpath := path + "/" + escapePointer(f.name)
			ps := js.Properties[f.name]
			if d, ok := f.sf.Tag.Lookup("desc"); ok {
				if _, both := f.sf.Tag.Lookup("jsonschema"); both {
					return in.errorf(fpath, "both a jsonschema and a desc tag (desc is an alias of jsonschema)")
				}
				ps.Description = d
			}
			if err := applyDshAlias(js, ps, f.name, f.sf.Tag.Get("dsh")); err != nil {
				return in.errorf(fpath, "%v", err)
			}
			if err := in.aliases(f.sf.Type, ps, fpath, onPath); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyDshAlias applies a dsh tag's options to ps, the schema of the
// property name of the object schema obj.
func applyDshAlias(obj, ps *jsonschema.Schema, name, tag string) error {
	if tag == "" {
		return nil
	}
	typ := ps.Type
	if typ == "" {
		for _, x := range ps.Types {
			if x != "null" {
				typ = x
			}
		}
	}
	var p Prop
	p.Type = typ
	if err := applyDshTag(&p, tag); err != nil {
		return err
	}
	if p.Required && !slices.Contains(obj.Required, name) {
		obj.Required = append(obj.Required, name)
	}
	if len(p.Enum) > 0 {
		ps.Enum = p.Enum
	}
	if p.Default != nil {
		b, err := canonjson.CanonicalizeValue(p.Default)
		if err != nil {
			return fmt.Errorf("default: %v", err)
		}
		ps.Default = b
	}
	return nil
}

// checkTags refuses a struct tag with a key Infer does not know.
func checkTags(tag reflect.StructTag) error {
	keys, err := tagKeys(string(tag))
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !slices.Contains(schemaTags, k) && !slices.Contains(foreignTags, k) {
			return fmt.Errorf("unknown struct tag %q (the schema is read from json, jsonschema, and the aliases desc and dsh)", k)
		}
	}
	return nil
}

// tagKeys lists the keys of a conventional struct tag (key:"value" pairs
// separated by spaces), as reflect.StructTag.Lookup parses them.
func tagKeys(tag string) ([]string, error) {
	var keys []string
	for {
		tag = strings.TrimLeft(tag, " ")
		if tag == "" {
			return keys, nil
		}
		i := 0
		for i < len(tag) && tag[i] > ' ' && tag[i] != ':' && tag[i] != '"' && tag[i] != 0x7f {
			i++
		}
		if i == 0 || i+1 >= len(tag) || tag[i] != ':' || tag[i+1] != '"' {
			return keys, fmt.Errorf("malformed struct tag %q", tag)
		}
		name := tag[:i]
		tag = tag[i+1:]
		i = 1
		for i < len(tag) && tag[i] != '"' {
			if tag[i] == '\\' {
				i++
			}
			i++
		}
		if i >= len(tag) {
			return keys, fmt.Errorf("malformed struct tag value for %q", name)
		}
		if _, err := strconv.Unquote(tag[:i+1]); err != nil {
			return keys, fmt.Errorf("malformed struct tag value for %q", name)
		}
		keys = append(keys, name)
		tag = tag[i+1:]
	}
}
