package jsengine

import (
	"context"
	"fmt"
	"unicode/utf8"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/internal/safeerr"
)

// ValidateProgram reports a Program that cannot run at all (ErrInvalidProgram).
func ValidateProgram(p coderuntime.Program) error {
	for name, b := range p.Bindings {
		if name == "" {
			return fmt.Errorf("%w: empty binding name", coderuntime.ErrInvalidProgram)
		}
		if b == nil {
			return fmt.Errorf("%w: binding %q is nil", coderuntime.ErrInvalidProgram, name)
		}
	}
	return nil
}

// ContextFailure is the Failure of a run whose context ended with err: a timeout for a deadline,
// else an abort.
func ContextFailure(err error, logs []coderuntime.Log) *coderuntime.Failure {
	if safeerr.Is(err, context.DeadlineExceeded) {
		return &coderuntime.Failure{Kind: coderuntime.KindTimeout, Message: "the program exceeded its time budget", Cause: context.DeadlineExceeded, Logs: logs}
	}
	return &coderuntime.Failure{Kind: coderuntime.KindAbort, Message: "the run was cancelled", Cause: context.Canceled, Logs: logs}
}

// CapText cuts s to at most max bytes (at a character boundary), saying so at its end.
func CapText(s string, max int) string {
	return Clip(s, max, " … (cut: the text is longer than the output limit)")
}

// Clip is s when it is at most max bytes long, else s cut at a character boundary so that the cut
// text followed by mark is at most max bytes (mark alone when max is shorter than mark). It is the
// one text-cutting helper of the code runtime: every message and log it bounds goes through it, so
// none is cut inside a UTF-8 sequence.
func Clip(s string, max int, mark string) string {
	if len(s) <= max {
		return s
	}
	cut := max - len(mark)
	if cut < 0 {
		cut = 0
	}
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// MaxNestingDepth bounds how deeply nested a value JSON.parse and JSON.stringify (the program's and
// the host's) and the recursive Array.prototype.join / toString / toLocaleString accept: goja
// implements them with Go recursion that never checks for an interrupt (and, for stringify and join,
// a cycle check linear in the depth), so an unbounded depth means a quadratic native loop or a Go
// stack overflow, a fatal error that takes the process down.
const MaxNestingDepth = 10000

// MaxArrayLength bounds the length of the array or array-like object a built-in that iterates over
// every index in native code (indexOf, join, forEach, Array.from, Function.prototype.apply, ...)
// accepts: no interrupt reaches a native loop, so a sparse array or an object like
// {length: 2 ** 53 - 1} would otherwise keep it busy (or allocating) beyond every budget.
const MaxArrayLength = 1 << 22

// JSONTooDeep reports whether the JSON text s opens more than limit arrays or objects at once
// (brackets inside strings do not count). It accepts anything; JSON.parse judges validity.
func JSONTooDeep[T ~string | ~[]byte](s T, limit int) bool {
	depth, inString := 0, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			switch c {
			case '\\':
				i++
			case '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if depth++; depth > limit {
				return true
			}
		case ']', '}':
			depth--
		}
	}
	return false
}

// The compile caches' bounds (each engine keeps one): programs whose source is longer than CacheMaxSource are compiled every
// time, and the cache holds at most CacheMaxEntries programs and CacheMaxBytes of their sources.
const (
	CacheMaxEntries = 128
	CacheMaxSource  = 32 << 10
	CacheMaxBytes   = 1 << 20
)
