// Package schema is the pure, dependency-free JSON and schema machinery of
// the tool registry (import path
// github.com/dsh-go/dsh/plugins/tools/schema; package name schema).
//
// It has six parts, none of which does I/O or keeps state:
//
//   - Lossless canonical JSON: [Canonicalize], [CanonicalizeObject] and
//     [CanonicalizeValue] accept only JSON every reader decodes to the same
//     value and re-emit it compactly in one canonical form, so the argument
//     bytes policy sees, the tool runs with and the session log records are
//     identical. Rejections are [*CanonError]s wrapping [ErrNotLossless].
//   - The author-facing parameter DSL: [Spec] and [Prop] (or [FromStruct] for
//     a Go struct with tags), converted to standard JSON Schema by
//     [Spec.JSONSchema] and checked by [Spec.Validate].
//   - Argument validation: [ValidateArgs] mirrors the JSON Schema conversion
//     exactly and yields [Violation]s, which a tool reports as an
//     [*ArgsError] (code INVALID_ARGS).
//   - The Go side of arguments: a [Target] follows how encoding/json
//     decodes into a Go type, refuses keys it would match other than by
//     exact name ("PATH" for a field "path", at any depth), and decodes
//     with every failure located ([Target.Decode]), so that a policy
//     reading the JSON and a tool reading the Go value see one value.
//   - The structured-output schema subset: [AssertSupportedOutputSchema]
//     (an [*OutputSchemaError], code UNSUPPORTED_SCHEMA) and the total
//     [ValidateStructuredValue].
//   - Code Mode codegen: [TypeScript] and [DeclareTools] render JSON Schemas
//     as deterministic TypeScript declarations; they never fail.
//
// Every function is safe for concurrent use and total on hostile input: it
// returns an error or violation, never panics, and bounds its work by the
// input size and fixed nesting limits.
package schema
