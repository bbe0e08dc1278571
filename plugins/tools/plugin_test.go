package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestPluginRunsAloneWithOneTypedTool: the registry needs no other plugin.
// Booting tools.Plugin alone gives an Active registry whose typed tool
// validates, runs and returns its result.
func TestPluginRunsAloneWithOneTypedTool(t *testing.T) {
	h := host.New()
	defer h.Close()
	f, err := h.Root().Plugin(tools.Plugin, nil)
	if err != nil || f.State() != host.Active {
		t.Fatalf("tools.Plugin alone: state %v, err %v; want Active", f.State(), err)
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		t.Fatal(err)
	}
	def, err := tools.Define(tools.TypedTool[addArgs, tools.Output]{
		Name:        "add",
		Description: "Add two integers.",
		Execute: func(_ context.Context, args addArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(fmt.Sprint(args.A + args.B))}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(h.Root(), def); err != nil {
		t.Fatal(err)
	}
	ok := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":2,"b":3}`)})
	if ok.IsError || len(ok.Content) != 1 || ok.Content[0].Text != "5" {
		t.Errorf("add(2, 3) = %+v, want 5", ok)
	}
	bad := reg.Execute(context.Background(), tools.Call{ID: "c2", Name: "add", Arguments: json.RawMessage(`{"a":"two"}`)})
	if !bad.IsError || bad.Error == nil || bad.Error.Code != tools.CodeInvalidArgs {
		t.Errorf("add(\"two\") = %+v, want INVALID_ARGS", bad)
	}
}

// TestPluginContributesWhileAPromptServiceIsProvided: the registry feeds
// prompt assembly whenever a system-prompt service is provided, whichever
// loads first, follows a replaced provider, and outlives the service going
// away; the registry itself is never restarted by any of it, so its tools
// stay registered.
func TestPluginContributesWhileAPromptServiceIsProvided(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	tf, err := root.Plugin(tools.Plugin, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(root, echo("a", "a")); err != nil {
		t.Fatal(err)
	}
	assembled := func(step string) {
		t.Helper()
		sp, err := systemprompt.ServiceKey.Get(root)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		p, err := sp.Assemble(context.Background(), "")
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if got := p.ToolNames(); !slices.Equal(got, []string{"a"}) {
			t.Errorf("%s: prompt tools %v, want [a]", step, got)
		}
		if n := sp.Stats().Contributors; n != 1 {
			t.Errorf("%s: %d contributors, want 1", step, n)
		}
	}
	unchanged := func(step string) {
		t.Helper()
		if tf.State() != host.Active {
			t.Errorf("%s: tools fiber %v, want Active", step, tf.State())
		}
		if now, err := tools.Service.Get(root); err != nil || now != reg {
			t.Errorf("%s: the registry was replaced (%v)", step, err)
		}
		if res := reg.Execute(context.Background(), tools.Call{ID: "c", Name: "a"}); res.IsError {
			t.Errorf("%s: executing a: %+v", step, res)
		}
	}

	sp1, err := root.Plugin(systemprompt.Plugin, nil)
	if err != nil {
		t.Fatal(err)
	}
	assembled("prompt loaded after tools")
	unchanged("prompt loaded after tools")

	sp2, err := root.Plugin(systemprompt.Plugin, nil) // replaces the provider
	if err != nil {
		t.Fatal(err)
	}
	assembled("provider replaced")
	unchanged("provider replaced")

	for _, f := range []*host.Fiber{sp2, sp1} {
		if err := f.Dispose(); err != nil {
			t.Fatal(err)
		}
	}
	unchanged("prompt service gone")

	if _, err := root.Plugin(systemprompt.Plugin, nil); err != nil {
		t.Fatal(err)
	}
	assembled("prompt loaded again")
	unchanged("prompt loaded again")
}
