package permissions_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The permissions plugin loaded with a *Live installs the policy the Live
// holds at each call: a swap takes effect at the next call, through the
// one installation the plugin has (listeners and the deny guard).
func TestLivePolicySwapsTheRulesInForce(t *testing.T) {
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	for _, p := range []struct {
		p   host.Plugin
		cfg any
	}{{systemprompt.Plugin, nil}, {tools.Plugin, tools.Config{Mode: tools.Native}}} {
		f, err := root.Plugin(p.p, p.cfg)
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(root, tools.Definition{Name: "t", Description: "T.", Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.TextOutput("ran"), nil
	}}); err != nil {
		t.Fatal(err)
	}
	live := permissions.NewLive(compile(t, permissions.Config{}))
	f, err := root.Plugin(permissions.Plugin, live)
	if err == nil {
		err = f.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	run := func() tools.Result { return reg.Execute(context.Background(), tools.Call{ID: "1", Name: "t"}) }
	if res := run(); res.IsError {
		t.Fatalf("allowed by the first policy: %+v", res)
	}
	live.Store(compile(t, permissions.Config{Deny: []string{"t"}}))
	if res := run(); !res.IsError || res.Error.Code != tools.CodeDenied {
		t.Fatalf("denied by the swapped-in policy: %+v", res)
	}
	if v := reg.Check(context.Background(), tools.Call{ID: "1", Name: "t"}); v.Kind != tools.Deny {
		t.Errorf("Check: %+v", v)
	}
	live.Store(nil) // ignored: a Live never holds no policy
	if res := run(); !res.IsError {
		t.Errorf("Store(nil) dropped the rules: %+v", res)
	}

	// A Live holding no policy fails the plugin.
	f, err = root.Plugin(permissions.Plugin, &permissions.Live{})
	if err == nil {
		err = f.Err()
	}
	if err == nil {
		t.Error("a Live with no policy was installed")
	}
}

// Loaded with a PerCall, each call is decided by the policy chosen for
// it (here by agent); a call given no policy is denied, at pre-execute
// and by the guard, with ErrNoPolicy's text.
func TestPerCallChoosesEachCallsPolicyAndNoneDenies(t *testing.T) {
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	for _, p := range []struct {
		p   host.Plugin
		cfg any
	}{{systemprompt.Plugin, nil}, {tools.Plugin, tools.Config{Mode: tools.Native}}} {
		f, err := root.Plugin(p.p, p.cfg)
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(root, tools.Definition{Name: "t", Description: "T.", Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.TextOutput("ran"), nil
	}}); err != nil {
		t.Fatal(err)
	}
	pols := map[host.ScopeKey]*permissions.Policy{
		"open":   compile(t, permissions.Config{}),
		"closed": compile(t, permissions.Config{Deny: []string{"t"}}),
	}
	f, err := root.Plugin(permissions.Plugin, permissions.PerCall(func(e *tools.Execution) *permissions.Policy { return pols[e.Agent()] }))
	if err == nil {
		err = f.Err()
	}
	if err != nil {
		t.Fatal(err)
	}
	run := func(agent host.ScopeKey) tools.Result {
		return reg.Execute(context.Background(), tools.Call{ID: "1", Name: "t", Agent: agent})
	}
	if res := run("open"); res.IsError {
		t.Fatalf("open: %+v", res)
	}
	if res := run("closed"); !res.IsError || res.Error.Code != tools.CodeDenied {
		t.Fatalf("closed: %+v", res)
	}
	res := run("nobody")
	if !res.IsError || res.Error.Code != tools.CodeDenied || !strings.Contains(fmt.Sprint(res.Content), "no permission profile") {
		t.Fatalf("no policy: %+v", res)
	}
	if v := reg.Check(context.Background(), tools.Call{ID: "1", Name: "t", Agent: "nobody"}); v.Kind != tools.Deny {
		t.Errorf("Check with no policy: %+v", v)
	}
}
