package tools_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
)

// selfUnwrapErr is an error whose Unwrap returns itself.
type selfUnwrapErr struct{}

func (selfUnwrapErr) Error() string   { return "self-unwrapping error" }
func (e selfUnwrapErr) Unwrap() error { return e }

// Defect: IsArgsError walked its argument (a tool body's error, say) with
// errors.Is and errors.As, unbounded: a cyclic error never returned.
func TestIsArgsErrorOfACyclicErrorReturns(t *testing.T) {
	for _, err := range []error{selfUnwrapErr{}, fmt.Errorf("body: %w", selfUnwrapErr{}), &tools.Error{Message: "m", Err: selfUnwrapErr{}}} {
		done := make(chan bool, 1)
		go func() { done <- tools.IsArgsError(err) }()
		select {
		case got := <-done:
			if got {
				t.Errorf("IsArgsError(%v) = true", err)
			}
		case <-time.After(time.Minute): // a safety net: a passing call takes microseconds
			t.Fatalf("IsArgsError(%v) did not return: an unbounded walk of a cyclic error?", err)
		}
	}
}
