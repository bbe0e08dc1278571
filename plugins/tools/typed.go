package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"time"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// TypedTool is the author-facing form of a typed tool: the parameters are a schema DSL ([schema.Spec]) and the
// body and presenters receive decoded arguments of type A.
//
// A is usually a struct whose fields and tags describe the parameters
// (see schema.FromStruct); Parameters may then be left nil and is derived
// from A. For the DSL form use A = map[string]any and set
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
	// Timeout is the optional cooperative budget;
	// it must not be negative. Zero means none.
	Timeout time.Duration
	// Concurrency declares which calls may run alongside others in a
	// batch (see [Definition].Concurrency): [Parallel], a
	// [ConcurrencyFunc] reading the validated arguments (exec.Arg,
	// exec.Decode), or nil for exclusive.
	Concurrency ConcurrencyRule
}

// Define turns a typed tool into a [Definition]. It fails when the spec is
// malformed (schema.Spec.Validate), cannot be derived from A, or Timeout
// is negative, or the definition is otherwise invalid
// ([Definition.Validate]).
//
// The definition's argument validation runs before any policy and makes
// sure that the value the body receives is the value policy reads from the
// frozen JSON. It refuses, as one INVALID_ARGS result listing every
// violation with its path (so the model can correct itself):
//
//   - arguments that fail Parameters (schema.ValidateArgs: missing
//     required keys, wrong types, bad enum members, values outside a
//     minimum or maximum, strings not in their format or content encoding,
//     nested and array-item violations; extra keys are allowed and
//     defaults are not applied);
//   - keys that encoding/json would decode into a field of A although they
//     are not its exact name ("PATH" or "paſh" for "path"), and map keys
//     not in their canonical form ("01" for the int key 1), at any depth of
//     A, through maps, slices, arrays, pointers and embedded structs (see
//     schema.Target); a policy reading "path" would not see them;
//   - arguments that do not decode into A (a number beyond an integer
//     type's range, a date that time.Time refuses, a value A's own
//     UnmarshalJSON or UnmarshalText rejects, ...), located at the value.
//
// The arguments are decoded into A once, during validation, and the value
// is kept on the call's [Execution], where no policy can reach it; the
// body takes it from there, once. A second run of the body on the same
// execution (a tools/execute wrapper calling next again) decodes the
// frozen arguments afresh, so no two body runs share a value, and so does
// a body called on an execution that was not validated by this
// definition.
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
	dec := &typedDecoder[A]{spec: spec, target: schema.TargetFor[A]()}
	d := Definition{
		Name:        t.Name,
		Description: t.Description,
		Parameters:  params,
		Timeout:     t.Timeout,
		Concurrency: t.Concurrency,
		ValidateArgs: func(exec *Execution) error {
			v := &decoded[A]{by: dec}
			if vs := dec.decode(exec.argBytes(), &v.value); len(vs) > 0 {
				return &schema.ArgsError{Tool: name, Violations: vs}
			}
			exec.decoded.Store(v)
			return nil
		},
	}
	if body != nil {
		d.Execute = func(ctx context.Context, exec *Execution) (Output, error) {
			if v := dec.take(exec); v != nil {
				return body(ctx, v.value, exec)
			}
			var a A
			if vs := dec.decode(exec.argBytes(), &a); len(vs) > 0 {
				// Unreachable through the pipeline, which validated these
				// bytes; a caller running Execute directly gets the same
				// refusal.
				return Output{}, &Error{Info: ErrorInfo{Name: "ToolArgsError", Code: CodeInvalidArgs}, Err: &schema.ArgsError{Tool: name, Violations: vs}}
			}
			return body(ctx, a, exec)
		}
	}
	if pc := t.PresentCall; pc != nil {
		d.PresentCall = func(args json.RawMessage) CallView {
			a, ok := dec.soft(args)
			if !ok {
				return nil
			}
			return pc(a)
		}
	}
	if pr := t.PresentResult; pr != nil {
		d.PresentResult = func(args json.RawMessage, r ResultData) ResultView {
			a, ok := dec.soft(args)
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

// typedDecoder checks and decodes the arguments of one typed tool.
type typedDecoder[A any] struct {
	spec   schema.Spec
	target *schema.Target
}

// decoded is a value of A that the decoder by decoded from an execution's
// arguments during validation, waiting on the execution for its body.
type decoded[A any] struct {
	by    *typedDecoder[A]
	value A
}

// take returns the value the validation of exec by d decoded, and removes
// it from exec, or nil when there is none (exec was not validated by d, or
// a body run took the value already). Of concurrent takers at most one
// gets the value.
func (d *typedDecoder[A]) take(exec *Execution) *decoded[A] {
	v, ok := exec.decoded.Load().(*decoded[A])
	if !ok || v == nil || v.by != d || !exec.decoded.CompareAndSwap(v, (*decoded[A])(nil)) {
		return nil
	}
	return v
}

// decode validates canonical arguments against the spec and A's keys and
// decodes them into *a, which must be A's zero value.
func (d *typedDecoder[A]) decode(args []byte, a *A) []schema.Violation {
	if vs := schema.ValidateArgsWith(d.spec, args, schema.ArgsOptions{Target: d.target}); len(vs) > 0 {
		return vs
	}
	return d.target.Decode(args, a)
}

// soft decodes presenter arguments, reporting false instead of failing
// when they would not pass validation.
func (d *typedDecoder[A]) soft(args json.RawMessage) (a A, ok bool) {
	canon, err := canonjson.CanonicalizeObject(args, canonjson.Options{})
	if err != nil {
		return a, false
	}
	return a, len(d.decode(canon, &a)) == 0
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

// IsArgsError reports whether err is an argument-validation failure
// (schema.ErrInvalidArgs or an INVALID_ARGS coded error).
func IsArgsError(err error) bool {
	var c Coder
	return safeerr.Is(err, schema.ErrInvalidArgs) || safeerr.AsAny(err, &c) && ErrorCode(c.Code()) == CodeInvalidArgs
}
