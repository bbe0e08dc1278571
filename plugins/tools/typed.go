package tools

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/tools/canonjson"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// TypedTool is the author-facing form of a typed tool, in the shape of
// the MCP go-sdk's ToolHandlerFor[In, Out]: the body receives decoded
// arguments of type In and returns a value of type Out.
//
// In is usually a struct whose fields and tags describe the parameters
// (see schema.FromStruct); Parameters may then be left nil and is derived
// from In. For the DSL form use In = map[string]any and set Parameters.
//
// Out is the tool's declared output: its JSON Schema is derived from Out
// as github.com/google/jsonschema-go infers it (what the go-sdk's
// mcp.AddTool publishes; a pointer is derived from its element type) unless
// OutputSchema is set, the body's value is encoded with encoding/json and
// validated against it, and the content is Render's (the value as JSON by
// default, a string as its text). As in the go-sdk, a value that does not
// match its own derived schema is an error (INVALID_OUTPUT): a nil map in
// a field without omitempty encodes as null, where the schema says object.
// A value the Out type guarantees valid (see schema.TypeCheck) is encoded
// canonically in one pass and not validated again; any other is encoded
// with encoding/json and validated, with the same results.
// Out = [Output] keeps a text-only tool:
// the body returns its Output as a raw [Definition]'s body does, and no
// output is declared unless OutputSchema is set (the body then sets
// Output.Value).
type TypedTool[In, Out any] struct {
	Name        string
	Description string
	// Parameters is the DSL schema. Nil derives it from In when In is a
	// struct (or pointer to one); for other In, nil means "no parameters".
	Parameters schema.Spec
	// Execute runs with arguments that passed validation and decoded into
	// In. It must not be nil.
	Execute func(ctx context.Context, args In, exec *Execution) (Out, error)
	// OutputSchema, when set, is the declared output schema (see
	// [Definition].OutputSchema) instead of the one derived from Out.
	OutputSchema json.RawMessage
	// Render, when set, turns the value into model-facing content (after
	// it was validated; a post-execute replacement is decoded into Out
	// first). Nil renders the value as JSON ([RenderJSON]). Not allowed
	// with Out = Output.
	Render func(value Out) ([]Content, error)
	// FinalizeContent is the tool's last word on the content of every
	// result (see [Definition].FinalizeContent).
	FinalizeContent func(exec *Execution, r Result) []Content
	// PresentCall, when set, renders a pending call. It is only called with
	// arguments that satisfy Parameters and decode into In; otherwise the
	// tool presents nothing (nil), as for logged arguments of an older
	// shape.
	PresentCall func(args In) CallView
	// PresentResult renders a completed call; same rules.
	PresentResult func(args In, r ResultData) ResultView
	// Timeout is the optional cooperative budget;
	// it must not be negative. Zero means none.
	Timeout time.Duration
	// Concurrency declares which calls may run alongside others in a
	// batch (see [Definition].Concurrency): [Parallel], a
	// [ConcurrencyFunc] reading the validated arguments (exec.Arg,
	// exec.Decode), or nil for exclusive.
	Concurrency ConcurrencyRule
	// Annotations optionally carries behaviour hints (see
	// [Definition].Annotations).
	Annotations *Annotations
}

// Define turns a typed tool into a [Definition]. It fails when the spec is
// malformed (schema.Spec.Validate), the parameters cannot be derived from
// A or the output schema from Out (schema.Infer: an unknown struct tag,
// a custom json.Marshaler, ...), Timeout is negative, or the definition is
// otherwise invalid ([Definition.Validate]).
//
// A struct A without Parameters gets the schema the MCP go-sdk's
// mcp.AddTool publishes for it (schema.Infer, github.com/google/jsonschema-go):
// a field is required unless tagged omitempty or omitzero, its jsonschema
// tag is its description, and no other keys are allowed.
//
// The definition's argument validation runs before any policy and makes
// sure that the value the body receives is the value policy reads from the
// frozen JSON. It refuses, as one INVALID_ARGS result listing every
// violation with its path (so the model can correct itself):
//
//   - arguments that fail the parameters schema (for a struct A the
//     inferred schema: missing required keys, keys a struct does not
//     declare, wrong types, bad enum members, values outside a minimum or
//     maximum, item counts, base64; for Parameters schema.ValidateArgs,
//     where extra keys are allowed; defaults are never applied);
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
func Define[A, Out any](t TypedTool[A, Out]) (Definition, error) {
	if reflect.TypeFor[Out]() == outputType {
		return define[A, Out, struct{}](t)
	}
	return define[A, Out, Out](t)
}

// define is [Define] with S, the type of the slot in which the body's
// value waits to be encoded: Out, or struct{} for Out = [Output], whose
// value is not encoded.
func define[A, Out, S any](t TypedTool[A, Out]) (Definition, error) {
	if t.Timeout < 0 {
		return Definition{}, fmt.Errorf("%w %q: negative Timeout %v (it must be positive, or zero for none)", ErrInvalidDefinition, t.Name, t.Timeout)
	}
	dec := &typedDecoder[A, S]{spec: t.Parameters, target: schema.TargetFor[A]()}
	dec.zeroSize = unsafe.Sizeof(*new(A)) == 0 && unsafe.Sizeof(*new(S)) == 0
	dec.ownCode = unmarshalsItself(reflect.TypeFor[A](), map[reflect.Type]bool{})
	var params []byte
	rt := reflect.TypeFor[A]()
	for rt.Kind() == reflect.Pointer {
		rt = rt.Elem()
	}
	if t.Parameters == nil && rt.Kind() == reflect.Struct {
		// The go-sdk's conventions: the schema jsonschema-go infers.
		js, err := schema.Infer(rt)
		if err != nil {
			return Definition{}, fmt.Errorf("%w %q: deriving parameters from %v: %w", ErrInvalidDefinition, t.Name, rt, err)
		}
		inferred, err := schema.CompileValueSchema(js)
		if err != nil {
			return Definition{}, fmt.Errorf("%w %q: parameters: %w", ErrInvalidDefinition, t.Name, err)
		}
		dec.inferred = inferred.ForArgs(dec.target)
		params = js
	} else {
		js, err := t.Parameters.JSONSchema()
		if err != nil {
			return Definition{}, fmt.Errorf("%w %q: parameters: %w", ErrInvalidDefinition, t.Name, err)
		}
		params = js
	}
	if dec.empty = dec.decodesEmpty(); dec.zeroSize || dec.empty {
		dec.shared = &decoded[A, S]{decodedHead: decodedHead{by: unsafe.Pointer(dec)}}
	}
	name := t.Name
	body, err := typedBody[A, Out, S](t)
	if err != nil {
		return Definition{}, err
	}
	d := Definition{
		Name:            t.Name,
		Description:     t.Description,
		Parameters:      params,
		Timeout:         t.Timeout,
		Concurrency:     t.Concurrency,
		Annotations:     t.Annotations,
		FinalizeContent: t.FinalizeContent,
		OutputSchema:    body.schema,
		RenderOutput:    body.render,
		ValidateArgs: func(exec *Execution) error {
			if exec.admitted == unsafe.Pointer(dec) {
				// Checked and decoded in stage 1 (admitArgs), by this
				// decoder, and the value stored on exec.
				exec.admitted = nil
				return nil
			}
			v := dec.shared
			if exec.args == "{}" && dec.empty {
				// The zero value, which the shared holder keeps.
				exec.decoded.Store(&v.decodedHead)
				return nil
			}
			if !dec.zeroSize {
				v = dec.holder()
			}
			if vs := dec.decode(exec.argBytes(), exec.args, &v.value); len(vs) > 0 {
				// v is dropped: it may hold part of a value.
				return &schema.ArgsError{Tool: name, Violations: vs}
			}
			exec.decoded.Store(&v.decodedHead)
			return nil
		},
	}
	if dec.inferred != nil {
		d.admitArgs = dec.admit
	}
	if plain, ok := any(t.Execute).(func(context.Context, A, *Execution) (Output, error)); ok && plain != nil {
		// Out = Output: the body's Output is the definition's, so the
		// body is called directly (no wrapper, no copy of the Output).
		d.Execute = func(ctx context.Context, exec *Execution) (Output, error) {
			if v := dec.take(exec); v != nil {
				a := v.value
				dec.recycle(v)
				return plain(ctx, a, exec)
			}
			a, err := dec.fresh(exec, name)
			if err != nil {
				return Output{}, err
			}
			return plain(ctx, a, exec)
		}
	} else if body := body.run; body != nil {
		d.Execute = func(ctx context.Context, exec *Execution) (Output, error) {
			if v := dec.take(exec); v != nil {
				if v == dec.shared {
					return body(ctx, v.value, nil, exec) // not this call's slot
				}
				o, err := body(ctx, v.value, &v.out, exec)
				dec.recycle(v)
				return o, err
			}
			a, err := dec.fresh(exec, name)
			if err != nil {
				return Output{}, err
			}
			return body(ctx, a, nil, exec)
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

// typedDecoder checks and decodes the arguments of one typed tool (S:
// see define).
type typedDecoder[A, S any] struct {
	spec     schema.Spec
	inferred *schema.ArgsCheck // the schema inferred from A, or nil: spec
	target   *schema.Target
	// shared is a holder of the zero value of A that every call may be
	// handed instead of one of its own, which the body may keep pointers
	// into: never written (but with no bytes), and its out slot unused.
	// It is every call's when A and S are of size zero (zeroSize: struct{}
	// arguments), and that of a call whose arguments are {} when they
	// decode into the zero value of A (empty); nil when neither holds.
	shared          *decoded[A, S]
	zeroSize, empty bool
	// ownCode: decoding a value of A may run code of its own (a type
	// reachable from A has an UnmarshalJSON or UnmarshalText method).
	ownCode bool
	// spare is a holder an earlier call recycled, for a later one (see
	// recycle), or nil.
	spare atomic.Pointer[decoded[A, S]]
}

// decodesEmpty reports whether the arguments {} pass d's validation and
// decode into the zero value of A, with no code of A's own involved: A is
// a struct (not a pointer, a map, ...) without an UnmarshalJSON or
// UnmarshalText (encoding/json would call them with {}; those of its
// fields it does not call, as {} has none).
func (d *typedDecoder[A, S]) decodesEmpty() bool {
	t := reflect.TypeFor[A]()
	if t.Kind() != reflect.Struct {
		return false
	}
	for _, u := range []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return false
		}
	}
	var a A
	return len(d.decode([]byte("{}"), "", &a)) == 0 && reflect.ValueOf(&a).Elem().IsZero()
}

// unmarshalsItself reports whether decoding a value of t with
// encoding/json may call a method of its own: t, or a type it holds (a
// field, an element, a map key, what a pointer points to), has an
// UnmarshalJSON or UnmarshalText method.
func unmarshalsItself(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	for _, u := range []reflect.Type{reflect.TypeFor[json.Unmarshaler](), reflect.TypeFor[encoding.TextUnmarshaler]()} {
		if t.Implements(u) || reflect.PointerTo(t).Implements(u) {
			return true
		}
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return unmarshalsItself(t.Elem(), seen)
	case reflect.Map:
		return unmarshalsItself(t.Key(), seen) || unmarshalsItself(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if unmarshalsItself(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// decoded is a value of A that the decoder by decoded from an execution's
// arguments during validation, waiting on the execution for its body;
// out is where the body that takes it puts its value for encoding (on the
// heap already, so that encoding it needs no allocation of its own).
type decoded[A, S any] struct {
	decodedHead
	value A
	out   S
}

// decodedHead begins every decoded[A, S]: by is its *typedDecoder[A, S],
// which tells A and S. An execution holds a decoded value by its head
// (one atomic pointer, whatever A and S are).
type decodedHead struct {
	by unsafe.Pointer
}

// take returns the value the validation of exec by d decoded, and removes
// it from exec, or nil when there is none (exec was not validated by d, or
// a body run took the value already). Of concurrent takers at most one
// gets the value.
func (d *typedDecoder[A, S]) take(exec *Execution) *decoded[A, S] {
	h := exec.decoded.Load()
	if h == nil || h.by != unsafe.Pointer(d) || !exec.decoded.CompareAndSwap(h, nil) {
		return nil
	}
	// h begins a decoded[A, S]: only d's validation stores a head naming d.
	return (*decoded[A, S])(unsafe.Pointer(h))
}

// admit is the definition's admitArgs (for an inferred schema): it
// checks and decodes exec's arguments, as they were sent, in the one pass
// of schema.ArgsCheck.DecodeIfCanonical, and when they are canonical and
// valid stores their value on exec, as the definition's ValidateArgs
// would, and marks exec as admitted by d.
func (d *typedDecoder[A, S]) admit(exec *Execution) bool {
	v := d.shared
	if exec.args == "{}" && d.empty {
		exec.decoded.Store(&v.decodedHead)
		exec.admitted = unsafe.Pointer(d)
		return true
	}
	if !d.zeroSize {
		v = d.holder()
	}
	if !d.inferred.DecodeIfCanonical(exec.argBytes(), exec.args, &v.value) {
		if v != d.shared && !d.ownCode {
			// v is the zero value again, and nothing else refers to it
			// (no code of A's own was handed a pointer into it): the
			// spare, for the validation that follows.
			d.spare.Store(v)
		}
		// Else v is dropped: a type's own UnmarshalJSON may have been
		// handed a pointer into it.
		return false
	}
	exec.decoded.Store(&v.decodedHead)
	exec.admitted = unsafe.Pointer(d)
	return true
}

// fresh decodes exec's arguments afresh for a body run that finds no
// value decoded by d's validation; tool names the refusal.
func (d *typedDecoder[A, S]) fresh(exec *Execution, tool string) (a A, err error) {
	if vs := d.decode(exec.argBytes(), exec.args, &a); len(vs) > 0 {
		// Unreachable through the pipeline, which validated these bytes;
		// a caller running Execute directly gets the same refusal.
		var zero A
		return zero, &Error{Info: ErrorInfo{Name: "ToolArgsError", Code: CodeInvalidArgs}, Err: &schema.ArgsError{Tool: tool, Violations: vs}}
	}
	return a, nil
}

// decode validates canonical arguments against the spec and A's keys and
// decodes them into *a, which must be A's zero value; frozen is args as
// an immutable string, if there is one (an execution's), for the decoded
// strings to share.
func (d *typedDecoder[A, S]) decode(args []byte, frozen string, a *A) []schema.Violation {
	if d.inferred != nil {
		return d.inferred.DecodeShared(args, frozen, a)
	}
	if vs := schema.ValidateArgsWith(d.spec, args, schema.ArgsOptions{Target: d.target}); len(vs) > 0 {
		return vs
	}
	// A copy: args may be the execution's immutable argument string, and
	// DecodeCanonical may hand it to a type's own UnmarshalJSON.
	return d.target.DecodeCanonical(bytes.Clone(args), a)
}

// soft decodes presenter arguments, reporting false instead of failing
// when they would not pass validation.
func (d *typedDecoder[A, S]) soft(args json.RawMessage) (a A, ok bool) {
	canon, err := canonjson.CanonicalizeObject(args, canonjson.Options{})
	if err != nil {
		return a, false
	}
	return a, len(d.decode(canon, "", &a)) == 0
}

// MustDefine is [Define] that panics on error, for package-level tool
// declarations whose validity is a programming matter.
func MustDefine[A, Out any](t TypedTool[A, Out]) Definition {
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

// typed is the output half of a typed tool, as a [Definition] takes it:
// run calls the body, and encodes its value in *out when out is not nil
// (S: see define).
type typed[A, S any] struct {
	run    func(ctx context.Context, args A, out *S, exec *Execution) (Output, error)
	schema json.RawMessage
	render func(json.RawMessage) ([]Content, error)
}

var outputType = reflect.TypeFor[Output]()

// typedBody turns t's body and output into a definition's: with Out =
// Output as they are; otherwise the declared schema (t.OutputSchema, or
// derived from Out), a body that encodes its value, and a render that
// decodes it for t.Render.
func typedBody[A, Out, S any](t TypedTool[A, Out]) (typed[A, S], error) {
	invalid := func(format string, a ...any) error {
		return fmt.Errorf("%w %q: %s", ErrInvalidDefinition, t.Name, fmt.Sprintf(format, a...))
	}
	ot := reflect.TypeFor[Out]()
	if ot == outputType {
		if t.Render != nil {
			return typed[A, S]{}, invalid("Render with Out = tools.Output (set Content in the Output, or declare a typed Out)")
		}
		var run func(context.Context, A, *S, *Execution) (Output, error)
		if body, ok := any(t.Execute).(func(context.Context, A, *Execution) (Output, error)); ok && body != nil {
			run = func(ctx context.Context, a A, _ *S, exec *Execution) (Output, error) { return body(ctx, a, exec) }
		}
		return typed[A, S]{run: run, schema: t.OutputSchema}, nil
	}
	if reflect.TypeFor[S]() != ot {
		panic("tools: typedBody: the slot type is not Out") // define's choice
	}
	out := typed[A, S]{schema: t.OutputSchema}
	if len(out.schema) == 0 {
		s, err := schema.Infer(ot)
		if err != nil {
			return typed[A, S]{}, invalid("deriving the output schema from %v: %v", ot, err)
		}
		out.schema = s
	}
	// check recognizes, by one scan of the encoded bytes, a value that Out
	// guarantees valid (nil: Out leaves more open; the pipeline validates
	// every value); an invalid schema is Register's to report.
	var check *schema.TypeCheck
	if vs, err := schema.CompileValueSchema(out.schema); err == nil {
		check = vs.ForType(ot)
	}
	// A nil pointer is encoded as the zero value of its element, as the
	// go-sdk does: the schema describes the element.
	var elemZero any
	if ot.Kind() == reflect.Pointer {
		elemZero = reflect.Zero(ot.Elem()).Interface()
	}
	if body := t.Execute; body != nil {
		out.run = func(ctx context.Context, a A, slot *S, exec *Execution) (Output, error) {
			o, err := body(ctx, a, exec)
			if err != nil {
				return Output{}, err
			}
			if check != nil {
				// S is Out: the value is encoded where it waits (on the
				// heap, in the arguments' holder, or in a new slot).
				if slot == nil {
					slot = new(S)
				}
				p, _ := any(slot).(*Out)
				*p = o
				b, text, ok := schema.EncodeValue(check, p)
				var zero Out
				*p = zero // the holder keeps nothing of the value
				if ok {
					return Output{Value: b, checked: checkedValue{by: check.Schema(), text: text}}, nil
				}
			}
			var v any = o
			if elemZero != nil && reflect.ValueOf(v).IsNil() {
				v = elemZero
			}
			b, err := json.Marshal(v)
			if err != nil {
				return Output{}, &Error{Info: ErrorInfo{Name: "InvalidOutput", Code: CodeInvalidOutput}, Message: fmt.Sprintf("tool %q: its value cannot be encoded as JSON: %s", t.Name, safeerr.Text(err))}
			}
			if check != nil && check.Canonical(b) {
				return Output{Value: b, checked: checkedValue{by: check.Schema(), text: string(b)}}, nil
			}
			return Output{Value: b}, nil
		}
	}
	if render := t.Render; render != nil {
		out.render = func(value json.RawMessage) ([]Content, error) {
			var o Out
			if err := json.Unmarshal(value, &o); err != nil {
				return nil, fmt.Errorf("decoding the value for Render: %w", err)
			}
			return render(o)
		}
	}
	return out, nil
}

// holder returns a holder for one call's decoded value, whose value is
// the zero value of A and which nothing else refers to: the spare one
// (taken: one caller gets it), or a new one.
func (d *typedDecoder[A, S]) holder() *decoded[A, S] {
	if v := d.spare.Swap(nil); v != nil {
		return v
	}
	return &decoded[A, S]{decodedHead: decodedHead{by: unsafe.Pointer(d)}}
}

// recycle zeroes v, a holder that take returned to the caller, and keeps
// it as the spare. The caller must not use v afterwards, and nothing else
// refers to it: take removed it from its execution (the only other
// place that held it), the body received a copy of its value, and the
// body's out slot, if it was handed one, was zeroed before the body
// returned (typedBody). A body that panics does not return here: its
// holder is dropped.
func (d *typedDecoder[A, S]) recycle(v *decoded[A, S]) {
	if v == d.shared {
		return
	}
	v.value = *new(A)
	v.out = *new(S)
	d.spare.Store(v)
}
