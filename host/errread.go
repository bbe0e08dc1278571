package host

import (
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// Reading errors plugin code hands back. A listener, an Apply or a
// disposer returns an error the host logs and inspects; its methods
// (Error, Unwrap, As) are plugin code too, and may panic or form a cyclic
// chain that errors.As would walk forever. So the host reads such errors
// only through package safeerr: under recover, walking a bounded part of
// the chain. What the host hands back to its own callers still wraps the
// original error (with %w), for them to read.

// withErr adds err to a log event under zerolog's error field, as
// [zerolog.Event.Err] would, but reads it with [safeerr.Text]: zerolog
// calls Error itself, unprotected.
func withErr(ev *zerolog.Event, err error) *zerolog.Event {
	return ev.Str(zerolog.ErrorFieldName, safeerr.Text(err))
}
