package spill_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	"github.com/dsh-go/dsh/plugins/spill"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: spill.Plugin, Config: spill.Config{Dir: t.TempDir()}, Setup: toolstest.Setup})
}
