package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// TypedTool is the author-facing form of a typed tool (the spec's
// defineTool): the parameters are a schema DSL ([schema.Spec]) and the
// body and presenters receive decoded arguments of type A.
//
// A is usually a struct whose fields and tags describe the parameters
// (see schema.FromStruct); Parameters may then be left nil and is derived
// from A. For the spec's DSL form use A = map[string]any and set
// Parameters.
type TypedTool[A any] struct {
	Name        string
	Description string
	// Parameters is the DSL schema. Nil derives it from A when A is a
	// struct (or pointer to one); for other A, nil means "no parameters".
	Parameters schema.Spec
	// Execute runs with arguments that passed validation and decoded into
	// A. It must not be nil.
	Execute func(ctx context.Context, args A, exec *Execution) (Output, error)
	// PresentCall, when set, renders a pending call. It is only called with
	// arguments that satisfy Parameters and decode into A; otherwise the
	// tool presents nothing (nil), as for logged arguments of an older
	// shape.
	PresentCall func(args A) CallView
	// PresentResult renders a completed call; same rules.
	PresentResult func(args A, r ResultData) ResultView
	// Timeout is the optional cooperative budget (the spec's timeoutMs);
	// it must not be negative. Zero means none.
	Timeout time.Duration
}

// Define turns a typed tool into a [Definition]. It fails when the spec is
// malformed (schema.Spec.Validate), cannot be derived from A, or Timeout
// is negative, or the definition is otherwise invalid
// ([Definition.Validate]).
//
// The definition validates the model's arguments against Parameters before
// any policy runs (schema.ValidateArgs: missing required keys, wrong types,
// bad enum members, nested and array-item violations; extra keys allowed;
// defaults not applied). A mismatch becomes an INVALID_ARGS result listing
// every violation, so the model can correct itself. Arguments that pass
// validation but cannot be decoded into A (a negative number for an
// unsigned field, say) are INVALID_ARGS too. When A is a struct, an
// argument key that differs only in case from a declared property ("PATH"
// for "path") is INVALID_ARGS before any policy runs: encoding/json would
// decode it into that property's field, so policy and body would see
// different values.
func Define[A any](t TypedTool[A]) (Definition, error) {
	spec := t.Parameters
	if spec == nil {
		rt := reflect.TypeFor[A]()
		for rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		if rt.Kind() == reflect.Struct {
			s, err := schema.FromStruct[A]()
			if err != nil {
				return Definition{}, fmt.Errorf("%w %q: deriving parameters from %v: %w", ErrInvalidDefinition, t.Name, rt, err)
			}
			spec = s
		}
	}
	if t.Timeout < 0 {
		return Definition{}, fmt.Errorf("%w %q: negative Timeout %v (it must be positive, or zero for none)", ErrInvalidDefinition, t.Name, t.Timeout)
	}
	params, err := spec.JSONSchema()
	if err != nil {
		return Definition{}, fmt.Errorf("%w %q: parameters: %w", ErrInvalidDefinition, t.Name, err)
	}
	name, body := t.Name, t.Execute
	folds := decodesIntoStruct[A]()
	d := Definition{
		Name:        t.Name,
		Description: t.Description,
		Parameters:  params,
		Timeout:     t.Timeout,
		ValidateArgs: func(args []byte) error {
			if v := schema.ValidateArgs(spec, args); len(v) > 0 {
				return &schema.ArgsError{Tool: name, Violations: v}
			}
			if folds {
				if v := caseVariants(spec, args); len(v) > 0 {
					return &schema.ArgsError{Tool: name, Violations: v}
				}
			}
			return nil
		},
	}
	if body != nil {
		d.Execute = func(ctx context.Context, exec *Execution) (Output, error) {
			var a A
			if err := exec.Decode(&a); err != nil {
				return Output{}, &Error{Info: ErrorInfo{Name: "ToolArgsError", Code: CodeInvalidArgs}, Message: fmt.Sprintf("invalid arguments for tool %q", name), Err: err}
			}
			return body(ctx, a, exec)
		}
	}
	if pc := t.PresentCall; pc != nil {
		d.PresentCall = func(args json.RawMessage) CallView {
			a, ok := soft[A](spec, args)
			if !ok {
				return nil
			}
			return pc(a)
		}
	}
	if pr := t.PresentResult; pr != nil {
		d.PresentResult = func(args json.RawMessage, r ResultData) ResultView {
			a, ok := soft[A](spec, args)
			if !ok {
				return nil
			}
			return pr(a, r)
		}
	}
	if err := d.Validate(); err != nil {
		return Definition{}, err
	}
	return d, nil
}

// decodesIntoStruct reports whether arguments are decoded into A as a
// struct, whose fields encoding/json matches case-insensitively.
func decodesIntoStruct[A any]() bool {
	rt := reflect.TypeFor[A]()
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	return rt.Kind() == reflect.Struct
}

// caseVariants lists the keys of canonical args that differ only in case
// (strings.EqualFold, as encoding/json matches struct fields) from a
// property spec declares at the same level without being it: {"PATH":
// "/x"} next to or instead of a declared "path". Validation lets extra
// keys through, but encoding/json would decode such a key into the
// declared field, so a policy reading "path" and the body would see
// different values. Such arguments are ambiguous and rejected.
func caseVariants(spec schema.Spec, args []byte) []schema.Violation {
	var v any
	if json.Unmarshal(args, &v) != nil {
		return nil // ValidateArgs already accepted it; nothing to add
	}
	var out []schema.Violation
	foldObject(spec, v, "", 0, &out)
	slices.SortFunc(out, func(a, b schema.Violation) int { return strings.Compare(a.Path, b.Path) })
	return out
}

func foldObject(spec schema.Spec, v any, path string, depth int, out *[]schema.Violation) {
	obj, ok := v.(map[string]any)
	if !ok || len(spec) == 0 || depth > 64 {
		return
	}
	names := slices.Sorted(maps.Keys(spec))
	for k := range obj {
		if _, declared := spec[k]; declared {
			continue
		}
		for _, name := range names {
			if strings.EqualFold(k, name) {
				*out = append(*out, schema.Violation{Path: path + "/" + pointerToken(k),
					Message: fmt.Sprintf("key differs from the declared property %q only in case; use %q", name, name)})
				break
			}
		}
	}
	for name, p := range spec {
		if x, ok := obj[name]; ok {
			foldProp(p, x, path+"/"+pointerToken(name), depth+1, out)
		}
	}
}

func foldProp(p schema.Prop, v any, path string, depth int, out *[]schema.Violation) {
	if depth > 64 {
		return
	}
	switch x := v.(type) {
	case map[string]any:
		foldObject(p.Properties, x, path, depth, out)
	case []any:
		if p.Items != nil {
			for i, e := range x {
				foldProp(*p.Items, e, path+"/"+strconv.Itoa(i), depth+1, out)
			}
		}
	}
}

func pointerToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// MustDefine is [Define] that panics on error, for package-level tool
// declarations whose validity is a programming matter.
func MustDefine[A any](t TypedTool[A]) Definition {
	d, err := Define(t)
	if err != nil {
		panic(err)
	}
	return d
}

// soft decodes presenter arguments, reporting false instead of failing when
// they do not fit the spec or A.
func soft[A any](spec schema.Spec, args json.RawMessage) (a A, ok bool) {
	canon, err := schema.CanonicalizeObject(args, schema.CanonOptions{})
	if err != nil || !spec.Matches(canon) {
		return a, false
	}
	if err := json.Unmarshal(canon, &a); err != nil {
		return a, false
	}
	return a, true
}

// IsArgsError reports whether err is an argument-validation failure
// (schema.ErrInvalidArgs or an INVALID_ARGS coded error).
func IsArgsError(err error) bool {
	var c Coder
	return errors.Is(err, schema.ErrInvalidArgs) || errors.As(err, &c) && c.Code() == CodeInvalidArgs
}
