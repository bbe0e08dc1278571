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
	hosttest.Conformance(t, toolfs.Plugin, toolfs.Config{Root: t.TempDir()}, hosttest.WithSetup(toolstest.Setup))
}
