package hosttest_test

import (
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/host/hosttest"
)

// Check names each broken clause: this plugin leaves a service on the root
// behind, whichever way it is loaded and disposed.
func ExampleCheck() {
	leaked := host.NewService[int]("leaked")
	leaky := host.Define("leaky", nil, func(c *host.Context) error {
		_, err := leaked.Provide(c.Host().Root(), 1)
		return err
	})
	err := hosttest.Check(hosttest.Case{Plugin: leaky})
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *hosttest.ClauseError
		if errors.As(e, &ce) {
			fmt.Println(ce.Clause)
		}
	}
	// Output:
	// load
	// load through an agent scope
	// double dispose
	// dispose during a dispatch
}
