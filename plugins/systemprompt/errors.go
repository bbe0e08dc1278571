package systemprompt

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
)

var (
	// ErrInvalid is wrapped when a section, a tool schema, a contribution
	// or the configuration fails validation.
	ErrInvalid = errors.New("invalid")
	// ErrDuplicate is wrapped when two sections of one layer, or two tools
	// of one assembly, share a name.
	ErrDuplicate = errors.New("duplicate name")
	// ErrProtected is wrapped when a scoped section would shadow a
	// protected section.
	ErrProtected = errors.New("protected")
	// ErrToolOrder is wrapped when [Config.ToolOrder] names a tool the
	// assembly does not contain and no contribution reserves.
	ErrToolOrder = errors.New("invalid toolOrder")
	// ErrClosed is wrapped when the service's plugin was disposed or
	// restarted: load the current service from the host again.
	ErrClosed = errors.New("system-prompt service closed")
)

// AssemblyError is the error of a rejected [Service.Assemble]: the scope
// and the cause. errors.Is and errors.As see through it to the sentinels
// of this package and to a contributor's own errors.
type AssemblyError struct {
	// Scope is the scope whose assembly was rejected ("" = global).
	Scope host.ScopeKey
	// Err is the cause.
	Err error
}

// Error implements error.
func (e *AssemblyError) Error() string {
	return "system-prompt: assembling for " + scopeName(e.Scope) + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *AssemblyError) Unwrap() error { return e.Err }

// ContributorError is a [ToolContributor]'s failure (an error it returned,
// a panic, or an invalid contribution), naming the contributor by its
// registration number and the plugin that registered it.
type ContributorError struct {
	// ID is the contributor's registration number on its service, from 1.
	ID uint64
	// Plugin is the name of the fiber that registered the contributor.
	Plugin string
	// Err is what went wrong: the contributor's own error, a panic, or an
	// invalid contribution ([ErrInvalid], [ErrDuplicate]).
	Err error
}

// Error implements error.
func (e *ContributorError) Error() string {
	return fmt.Sprintf("tool contributor #%d (plugin %s): %s", e.ID, e.Plugin, e.Err.Error())
}

// Unwrap returns the contributor's error.
func (e *ContributorError) Unwrap() error { return e.Err }

func scopeName(s host.ScopeKey) string {
	if s == "" {
		return "the global scope"
	}
	return fmt.Sprintf("scope %q", string(s))
}
