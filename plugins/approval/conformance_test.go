package approval_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	"github.com/dsh-go/dsh/plugins/approval"
)

// TestConformance: the service plugin loads and leaves nothing behind.
func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: approval.Plugin, Config: approval.Config{Answerer: approval.NewQueue()}})
}
