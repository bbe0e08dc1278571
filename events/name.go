package events

import (
	"errors"
	"fmt"
)

// MaxNameLen is the longest accepted event name, in bytes.
const MaxNameLen = 128

// ErrInvalidName is wrapped by every error [ValidateName] returns.
var ErrInvalidName = errors.New("invalid event name")

// ValidateName checks an event name: one or more segments separated by '/',
// each segment starting with a lower-case ASCII letter or digit and
// continuing with lower-case letters, digits, '-', '_' or '.'; at most
// [MaxNameLen] bytes. "tools/pre-execute" and "internal/fiber" are valid;
// "", "Tools/x", "a//b" and "a/" are not. The error names the offending
// byte offset.
func ValidateName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty", ErrInvalidName)
	}
	if len(name) > MaxNameLen {
		return fmt.Errorf("%w: %d bytes, longer than %d", ErrInvalidName, len(name), MaxNameLen)
	}
	segStart := true
	for i := 0; i < len(name); i++ {
		b := name[i]
		lowerOrDigit := b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
		switch {
		case b == '/':
			if segStart {
				return fmt.Errorf("%w: %q: empty segment at offset %d", ErrInvalidName, name, i)
			}
			segStart = true
		case segStart:
			if !lowerOrDigit {
				return fmt.Errorf("%w: %q: segment must start with a-z or 0-9, found %q at offset %d", ErrInvalidName, name, b, i)
			}
			segStart = false
		case !lowerOrDigit && b != '-' && b != '_' && b != '.':
			return fmt.Errorf("%w: %q: byte %q at offset %d is not allowed (a-z, 0-9, '-', '_', '.', '/')", ErrInvalidName, name, b, i)
		}
	}
	if segStart {
		return fmt.Errorf("%w: %q: ends with '/'", ErrInvalidName, name)
	}
	return nil
}
