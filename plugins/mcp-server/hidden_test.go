package mcpserver_test

import (
	"slices"
	"testing"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A tool a permission rule denies without condition is not listed; one
// with only a conditional deny rule is.
func TestHiddenToolsAreNotListed(t *testing.T) {
	pol, err := permissions.Compile(permissions.Config{Deny: []string{"echo", "other(text:secret*)"}})
	if err != nil {
		t.Fatal(err)
	}
	e := boot(t, tools.Native, mcpserver.Config{Hidden: pol.DeniesTool})
	register(t, e.root, e.reg, echoTool("other"))
	cs := connect(t, e, nil)
	if got := toolNames(t, cs); !slices.Equal(got, []string{"other"}) {
		t.Errorf("tools/list = %v, want [other]", got)
	}
}
