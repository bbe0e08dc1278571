package mcpclient_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestM1_ToolsAppearNormalizedAndFollowListChanged(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	long := strings.Repeat("x", 80)
	addEcho(ms.srv, "echo", "dotted.name", long)
	f := e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})

	want := []string{"mcp__mem__echo", mcpclient.ToolName("mem", "dotted.name"), mcpclient.ToolName("mem", long)}
	slices.Sort(want)
	if got := e.names(); !slices.Equal(got, want) {
		t.Fatalf("tools after mount = %v, want %v", got, want)
	}
	for _, n := range want {
		if len(n) > mcpclient.MaxToolNameLen || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("tool name %q is not model-safe", n)
		}
	}
	// The normalized name calls the server's tool by its own name.
	if r := e.call(context.Background(), mcpclient.ToolName("mem", "dotted.name"), map[string]any{"text": "hi"}); r.IsError || text(r) != "hi" {
		t.Fatalf("call through a normalized name = %+v", r)
	}

	// list_changed: a new tool appears, a removed one disappears.
	addEcho(ms.srv, "added")
	e.waitStatus("resync with 4 tools", func(s mcpclient.Status) bool { return s.State == mcpclient.StateConnected && s.Tools == 4 })
	if _, ok := e.reg.Get("mcp__mem__added", ""); !ok {
		t.Fatalf("added tool missing: %v", e.names())
	}
	ms.srv.RemoveTools("echo")
	e.waitStatus("resync with 3 tools", func(s mcpclient.Status) bool { return s.State == mcpclient.StateConnected && s.Tools == 3 })
	if _, ok := e.reg.Get("mcp__mem__echo", ""); ok {
		t.Fatalf("removed tool still registered: %v", e.names())
	}

	// The registrations are the fiber's effects.
	n := 0
	for _, eff := range f.Effects() {
		if eff.Kind == tools.EffectTool {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("fiber owns %d tools, want 3: %v", n, f.Effects())
	}

	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if got := e.names(); len(got) != 0 {
		t.Fatalf("tools after dispose: %v", got)
	}
	ms.waitSessionsEnded(t)
}

func TestM1_CollidingNamesGetDistinctStableNames(t *testing.T) {
	e := newEnv(t)
	ms := newMemServer(nil)
	// "a.b" normalizes to a hashed name; a tool named exactly like that
	// hashed form collides with it.
	hashedAB := strings.TrimPrefix(mcpclient.ToolName("mem", "a.b"), "mcp__mem__")
	addEcho(ms.srv, "a.b", "a,b", hashedAB)
	e.mount(mcpclient.Config{Name: "mem", Dial: ms.dial})
	got := e.names()
	if len(got) != 3 {
		t.Fatalf("tools = %v, want 3 distinct", got)
	}
	if !slices.Contains(got, "mcp__mem__"+hashedAB) {
		t.Fatalf("the tool whose name needed no normalization lost its name: %v", got)
	}
	for _, n := range []string{"a.b", "a,b", hashedAB} {
		r := e.call(context.Background(), mcpclient.ToolNames("mem", []string{"a.b", "a,b", hashedAB})[n], map[string]any{"text": n})
		if r.IsError || text(r) != n {
			t.Fatalf("call of %q = %+v", n, r)
		}
	}
}
