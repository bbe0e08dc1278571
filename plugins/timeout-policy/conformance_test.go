package timeoutpolicy_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// TestConformance: the wrapper plugin loads and leaves nothing behind.
func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: timeoutpolicy.Plugin, Config: timeoutpolicy.Config{}, Setup: toolstest.Setup})
}
