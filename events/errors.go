package events

import "fmt"

// PanicError is what a dispatcher makes of a panicking listener. It carries
// the recovered value, the event name, the owning plugin's name and the
// stack at the panic. Its message has no package prefix: the dispatcher
// that recovered the panic returns it wrapped in its own ("host: ...").
type PanicError struct {
	Event  string
	Plugin string
	Value  any
	Stack  []byte
}

// Error implements error.
func (e *PanicError) Error() string {
	return fmt.Sprintf("listener of %s (plugin %s) panicked: %v", e.Event, e.Plugin, e.Value)
}

// Unwrap returns the panic value when it is an error, so errors.Is/As see
// through a panic(err).
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}
