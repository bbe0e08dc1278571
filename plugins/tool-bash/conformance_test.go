package toolbash_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// TestConformance: the plugin loads, registers its tools, and leaves
// nothing behind when disposed.
func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: toolbash.Plugin, Config: toolbash.Config{}, Setup: toolstest.Setup})
}
