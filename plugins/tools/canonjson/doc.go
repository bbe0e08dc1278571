// Package canonjson reads JSON that every reader decodes to the same value,
// and writes it in one canonical form (import path
// github.com/dsh-go/dsh/plugins/tools/canonjson; package name canonjson).
//
// JSON readers disagree on some documents: {"a":1,"a":2} is 1 in one
// reader and 2 in another, 9007199254740993 is exact in Go with UseNumber
// and rounded in JavaScript, an invalid UTF-8 byte becomes U+FFFD, an error
// or passes through. When a policy reads a tool call's arguments with one
// reader and the tool with another, such a document lets the two see
// different calls. [Canonicalize] accepts only lossless JSON, rejecting the
// rest with an [*Error] that says what and where, and re-emits what it
// accepts compactly and deterministically, the way JavaScript's
// JSON.stringify would: the same value always has the same bytes.
//
//	canon, err := canonjson.CanonicalizeObject([]byte(` {"path": "a.txt", "n": 1.0} `), canonjson.Options{})
//	// canon: {"path":"a.txt","n":1}
//	_, err = canonjson.Canonicalize([]byte(`{"a":1,"\u0061":2}`), canonjson.Options{})
//	// err: non-lossless JSON at /a (byte 7): duplicate object key (readers disagree on first-wins vs last-wins)
//	// errors.Is(err, canonjson.ErrNotLossless) is true
//
// [CanonicalizeObject] is the form for tool-call arguments (an object; no
// input or null means {}), [CanonicalizeValue] canonicalizes a Go value, and
// [AppendString] and [AppendNumber] let an encoder that writes JSON by hand
// write exactly what Canonicalize would. [IsCanonical] reports, by a scan
// that allocates nothing, that input is already canonical; Canonicalize and
// CanonicalizeObject take that fast path first (input from a canonicalizing
// client, or their own output, costs a scan and a copy), and fall back to
// the full scanner, which decides everything else.
//
// Every function is safe for concurrent use, does no I/O and is total on
// hostile input: it returns an error, never panics, and bounds its work by
// the input size and the nesting limits of [Options].
package canonjson
