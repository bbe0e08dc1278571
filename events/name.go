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
// "", "Tools/x", "a//b" and "a/" are not. The error wraps [ErrInvalidName]
// and names the offending byte offset.
func ValidateName(name string) error {
	if err := CheckSegments(name, MaxNameLen); err != nil {
		return fmt.Errorf("events: %w: %w", ErrInvalidName, err)
	}
	return nil
}

// CheckSegments checks name against the grammar of [ValidateName] with a
// length limit of maxLen bytes, and returns what is wrong and where (not
// wrapped in any sentinel), or nil. The host uses it for service names.
func CheckSegments(name string, maxLen int) error {
	if name == "" {
		return errors.New("empty")
	}
	if len(name) > maxLen {
		return fmt.Errorf("%d bytes, longer than %d", len(name), maxLen)
	}
	segStart := true
	for i := 0; i < len(name); i++ {
		b := name[i]
		lowerOrDigit := b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
		switch {
		case b == '/':
			if segStart {
				return fmt.Errorf("%q: empty segment at offset %d", name, i)
			}
			segStart = true
		case segStart:
			if !lowerOrDigit {
				return fmt.Errorf("%q: segment must start with a-z or 0-9, found %q at offset %d", name, b, i)
			}
			segStart = false
		case !lowerOrDigit && b != '-' && b != '_' && b != '.':
			return fmt.Errorf("%q: byte %q at offset %d is not allowed (a-z, 0-9, '-', '_', '.', '/')", name, b, i)
		}
	}
	if segStart {
		return fmt.Errorf("%q: ends with '/'", name)
	}
	return nil
}
