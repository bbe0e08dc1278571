package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
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
			// A struct's fields take case-variant keys (encoding/json folds
			// case), so for one those are ambiguous: see schema.ArgsOptions.
			if v := schema.ValidateArgsWith(spec, args, schema.ArgsOptions{RejectCaseVariants: folds}); len(v) > 0 {
				return &schema.ArgsError{Tool: name, Violations: v}
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
