// Package safeerr reads error values that untrusted code handed back
// (listeners, plugins, tool bodies, code runtimes). Their methods (Error,
// Unwrap, Is, As) are that code too: they may panic, or form a cyclic or
// absurdly deep chain that errors.Is and errors.As would walk forever. The
// functions here read such errors under recover and walk at most
// [MaxChain] errors of a chain, so reading an error never hangs or panics
// the caller.
//
// The module reads errors only this way: a test of this package
// (TestNoUnboundedErrorChainWalks) fails for any errors.Is, errors.As or
// errors.Unwrap in a non-test file outside its short allowlist of uses
// whose error can only come from the module or the standard library, each
// with its reason.
package safeerr

import (
	"fmt"
	"reflect"
	"strings"
)

// MaxChain bounds how many errors of a chain (Unwrap, depth first as
// errors.Is walks it) are looked at.
const MaxChain = 64

// Walk calls visit for err and the errors it wraps, depth first, until
// visit returns true (then Walk does) or MaxChain errors were visited. It
// calls err's methods: call it under recover, or use [As], [Is], [AsAny].
func Walk(err error, visit func(error) bool) bool {
	n := 0
	var walk func(error) bool
	walk = func(e error) bool {
		for e != nil {
			if n++; n > MaxChain {
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

// As returns the first error in err's chain that is a T (or that an As
// method turns into one), as errors.As does, but bounded and contained: a
// panicking method ends the search with no match.
func As[T any](err error) (found T, ok bool) {
	defer func() {
		if recover() != nil {
			var zero T
			found, ok = zero, false
		}
	}()
	ok = Walk(err, func(e error) bool {
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

// AsAny is errors.As(err, target) with As's bounds and containment: target
// must be a non-nil pointer; the first error in the chain assignable to
// what it points to (or that an As method accepts) is stored there.
func AsAny(err error, target any) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	val := reflect.ValueOf(target)
	if target == nil || val.Kind() != reflect.Pointer || val.IsNil() {
		return false
	}
	want := val.Type().Elem()
	return Walk(err, func(e error) bool {
		if reflect.TypeOf(e).AssignableTo(want) {
			val.Elem().Set(reflect.ValueOf(e))
			return true
		}
		if x, is := e.(interface{ As(any) bool }); is && x.As(target) {
			return true
		}
		return false
	})
}

// Is reports whether err or an error it wraps is one of targets (by ==,
// for comparable targets, or by an Is method), as errors.Is does, but
// bounded and contained: a panicking method counts as no match.
func Is(err error, targets ...error) (found bool) {
	defer func() {
		if recover() != nil {
			found = false
		}
	}()
	return Walk(err, func(e error) bool {
		for _, t := range targets {
			if t == nil {
				continue
			}
			if reflect.TypeOf(t).Comparable() && e == t {
				return true
			}
			if x, ok := e.(interface{ Is(error) bool }); ok && x.Is(t) {
				return true
			}
		}
		return false
	})
}

// Text returns err's message as valid UTF-8, or a description of err when
// its Error method panics.
func Text(err error) (s string) {
	defer func() {
		if v := recover(); v != nil {
			s = fmt.Sprintf("an error of type %T whose Error method panicked: %s", err, Sprint(v))
		}
	}()
	return strings.ToValidUTF8(err.Error(), "\uFFFD")
}

// Sprint formats a value untrusted code handed back (a panic value, an
// error) with fmt, as valid UTF-8; when formatting itself panics it falls
// back to the value's type, which runs no untrusted code.
func Sprint(v any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("(a %T value whose formatting panicked)", v)
		}
	}()
	return strings.ToValidUTF8(fmt.Sprint(v), "\uFFFD")
}
