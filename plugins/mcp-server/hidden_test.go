package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/codemode"
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

// Under code mode, a tool denied without condition is not declared in
// run_code's SDK either; a conditionally denied one is.
func TestHiddenToolsAreNotInTheSDK(t *testing.T) {
	pol, err := permissions.Compile(permissions.Config{Deny: []string{"echo", "other(text:secret*)"}})
	if err != nil {
		t.Fatal(err)
	}
	e := boot(t, tools.Code, mcpserver.Config{Hidden: pol.DeniesTool})
	register(t, e.root, e.reg, echoTool("other"))
	cs := connect(t, e, nil)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != codemode.RunCodeName {
		t.Fatalf("tools/list = %v, want [run_code]", res.Tools)
	}
	desc := res.Tools[0].Description
	if !strings.Contains(desc, "other(") || strings.Contains(desc, "echo(") {
		t.Errorf("run_code's SDK should declare other and not echo:\n%s", desc)
	}
}
