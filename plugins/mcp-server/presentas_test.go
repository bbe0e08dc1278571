package mcpserver_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestPA8_ASessionsToolListFollowsItsAgentsPresentation: in a native gateway, a session whose
// agent scope presents as code (tools.Registry.PresentAs) is served run_code only, with the SDK
// in its description, and its direct call of an end tool is refused; a session presenting as
// both is served both; a session without a declaration keeps the native list; ending the
// declaration gives the session its native list back (tools/list_changed).
func TestPA8_ASessionsToolListFollowsItsAgentsPresentation(t *testing.T) {
	var e *env
	modes := []tools.Mode{tools.Code, tools.Both, ""}
	offs := map[host.ScopeKey]host.Disposer{}
	e = boot(t, tools.Native, mcpserver.Config{OnSession: func(scope *host.Context, info mcpserver.SessionInfo) error {
		m := modes[0]
		modes = modes[1:]
		if m == "" {
			return nil
		}
		off, err := e.reg.PresentAs(scope, m)
		offs[info.Scope] = off
		return err
	}})
	opts, changed := listChanged()
	code, sc := connect2(t, e, opts)
	both := connect(t, e, nil)
	native := connect(t, e, nil)

	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	list, err := code.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || list.Tools[0].Name != codemode.RunCodeName || !strings.Contains(list.Tools[0].Description, "echo(") {
		t.Fatalf("code session lists %v", list.Tools)
	}
	if r := call(t, code, "echo", map[string]any{"text": "x"}); !r.IsError || errCode(r) != string(tools.CodeUnknownTool) {
		t.Errorf("code session's direct echo: isError=%v code=%q", r.IsError, errCode(r))
	}
	if got := toolNames(t, both); !slices.Equal(got, []string{"echo", codemode.RunCodeName}) {
		t.Errorf("both session lists %v", got)
	}
	if got := toolNames(t, native); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("native session lists %v", got)
	}
	if err := offs[sc.Scope()](); err != nil {
		t.Fatal(err)
	}
	waitFor(t, changed, func() bool { return slices.Equal(toolNames(t, code), []string{"echo"}) })
	if r := call(t, code, "echo", map[string]any{"text": "x"}); r.IsError || text(r) != "x" {
		t.Errorf("after the declaration ended, direct echo: isError=%v %q", r.IsError, text(r))
	}
}
