package toolfs_test

import (
	"testing"

	"github.com/dsh-go/dsh/host/hosttest"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// TestConformance: the plugin loads, registers its tools, and leaves
// nothing behind when disposed.
func TestConformance(t *testing.T) {
	hosttest.Run(t, hosttest.Case{Plugin: toolfs.Plugin, Config: toolfs.Config{Root: t.TempDir()}, Setup: toolstest.Setup})
}
