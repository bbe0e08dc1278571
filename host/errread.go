package host

import (
	"fmt"
	"strings"

	"github.com/rs/zerolog"
)

// Reading errors plugin code hands back. A listener, an Apply or a
// disposer returns an error the host logs and inspects; its methods
// (Error, Unwrap, As) are plugin code too, and may panic or form a cyclic
// chain that errors.As would walk forever. So the host reads such errors
// only through the helpers below: under recover, walking at most
// maxErrorChain errors of a chain. What the host hands back to its own
// callers still wraps the original error (with %w), for them to read.

// maxErrorChain bounds how many errors of a chain (Unwrap, depth first as
// errors.As walks it) the host looks at.
const maxErrorChain = 64

// walkError calls visit for err and the errors it wraps, depth first,
// until visit returns true (then walkError does) or maxErrorChain errors
// were visited. It calls err's methods: call it under recover.
func walkError(err error, visit func(error) bool) bool {
	n := 0
	var walk func(error) bool
	walk = func(e error) bool {
		for e != nil {
			if n++; n > maxErrorChain {
				return false
			}
			if visit(e) {
				return true
			}
			switch u := e.(type) {
			case interface{ Unwrap() error }:
				e = u.Unwrap()
			case interface{ Unwrap() []error }:
				for _, c := range u.Unwrap() {
					if walk(c) {
						return true
					}
				}
				return false
			default:
				return false
			}
		}
		return false
	}
	return walk(err)
}

// errorAs returns the first error in err's chain that is a T (or that an As
// method turns into one), as errors.As does, but bounded and contained: a
// panicking method ends the search with no match.
func errorAs[T any](err error) (found T, ok bool) {
	defer func() {
		if recover() != nil {
			var zero T
			found, ok = zero, false
		}
	}()
	ok = walkError(err, func(e error) bool {
		if x, is := e.(T); is {
			found = x
			return true
		}
		if x, is := e.(interface{ As(any) bool }); is {
			var t T
			if x.As(&t) {
				found = t
				return true
			}
		}
		return false
	})
	return found, ok
}

// errorText returns err's message as valid UTF-8, or a description of err
// when its Error method panics.
func errorText(err error) (s string) {
	defer func() {
		if v := recover(); v != nil {
			s = fmt.Sprintf("an error of type %T whose Error method panicked: %s", err, safeSprint(v))
		}
	}()
	return strings.ToValidUTF8(err.Error(), "\uFFFD")
}

// safeSprint formats a panic value as valid UTF-8; when formatting itself
// panics, it falls back to the value's type, which runs no plugin code.
func safeSprint(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("(a %T value whose formatting panicked)", v)
		}
	}()
	return strings.ToValidUTF8(fmt.Sprint(v), "\uFFFD")
}

// withErr adds err to a log event under zerolog's error field, as
// [zerolog.Event.Err] would, but reads it with [errorText]: zerolog calls
// Error itself, unprotected.
func withErr(ev *zerolog.Event, err error) *zerolog.Event {
	return ev.Str(zerolog.ErrorFieldName, errorText(err))
}
