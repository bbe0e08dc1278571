// Package schema describes and checks the arguments of a tool (import path
// github.com/dsh-go/dsh/plugins/tools/schema; package name schema).
//
// A tool author describes the argument object once, as a [Spec] (a map of
// [Prop]s) or as a Go struct read by [FromStruct]; [Spec.JSONSchema]
// turns it into the standard JSON Schema the model is shown, and
// [ValidateArgs] checks a call's arguments against exactly that schema,
// returning every problem as a path-qualified [Violation]:
//
//	spec := schema.Spec{
//		"path":  {Type: schema.TypeString, Required: true, Description: "File to read"},
//		"limit": {Type: schema.TypeInteger},
//	}
//	js, err := spec.JSONSchema() // {"type":"object","properties":{...},"required":["path"]}
//	vs := schema.ValidateArgs(spec, []byte(`{"limit":"10"}`))
//	// vs: /limit: expected integer, got string; /path: required property is missing
//	err = &schema.ArgsError{Tool: "read", Violations: vs} // code INVALID_ARGS
//
// (package tools does all of this for a typed tool; see tools.Define).
//
// When the arguments are decoded into a Go type, a [Target] adds what the
// schema cannot say: encoding/json matches keys to fields case-insensitively
// and converts map keys, so a policy reading "path" and a tool reading the
// field Path could see different values. [ValidateArgsWith] with a Target
// refuses such keys, and [Target.Decode] decodes with every failure located
// by path, so validation and decoding agree on one value.
//
// The structured-output schema subset is the other vocabulary here: a tool
// that returns structured data declares its output schema in a small
// subset of JSON Schema (single-string type, properties, required,
// additionalProperties as a boolean, items, enum, const, and annotations).
// [AssertSupportedOutputSchema] accepts exactly that subset and reports
// every keyword outside it (an [*OutputSchemaError], code
// UNSUPPORTED_SCHEMA), so a schema never promises more than is checked;
// [ValidateStructuredValue] checks a value against it.
//
// A value of a Go type whose schema was inferred from it ([Infer]) is
// valid by construction for most keywords: [ValueSchema.ForType] compiles
// a [TypeCheck] that encodes such a value canonically in one pass
// ([TypeCheck.Encode], or [EncodeValue] without boxing it: an encoder
// compiled once per Go type and schema node reads struct fields at their
// offsets and writes scalars without reflect.Value) or recognizes
// json.Marshal's output as canonical
// and valid by one scan, checking only what the type cannot guarantee,
// with exactly the results of [ValueSchema.ValidateEncoded].
//
// The arguments of such a type are checked by an [ArgsCheck]
// ([ValueSchema.ForArgs]): when the inferred schema already refuses every
// key the Target would, valid canonical arguments cost one scan of their
// bytes, without decoding them; anything else takes [ValueSchema.ValidateArgs]
// with the Target, whose results it always returns; [Target.DecodeCanonical]
// then decodes them in one pass where it can, with exactly
// [Target.Decode]'s value and violations. [ArgsCheck.Decode] does both:
// valid arguments of a type whose schema covers its key checks are
// checked and decoded in a single pass over their bytes (a plan per Go
// type and schema node, built once), and anything else (every invalid
// argument) takes the separate paths, whose violations it returns;
// [ArgsCheck.DecodeShared] slices the decoded strings from an immutable
// copy of the arguments the caller already holds.
//
// Every argument and schema here is lossless JSON, as package canonjson
// defines it. Every function is safe for concurrent use and total on
// hostile input: it returns an error or violations, never panics, and
// bounds its work by the input size and fixed nesting limits.
package schema
