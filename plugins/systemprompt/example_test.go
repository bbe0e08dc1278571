package systemprompt_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// Load the plugin, register a tool contributor and a lazy section, and
// assemble the prompt of one agent scope.
func Example() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()

	if _, err := root.Plugin(systemprompt.Plugin, systemprompt.Config{ToolOrder: []string{"read_file"}}); err != nil {
		panic(err)
	}
	sp, err := systemprompt.ServiceKey.Get(root)
	if err != nil {
		panic(err)
	}

	// What the tool registry does: contribute the scope's wire tools.
	_, err = sp.Tools(root, func(ctx context.Context, scope host.ScopeKey) (systemprompt.Contribution, error) {
		return systemprompt.Contribution{Tools: []systemprompt.ToolSchema{
			{Name: "bash", Description: "Run a shell command.", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "read_file", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)},
		}}, nil
	})
	if err != nil {
		panic(err)
	}
	// A lazy section: rendered at each assembly, for the scope assembled.
	_, err = sp.Section(root, systemprompt.Section{Name: "persona", Order: 0,
		Render: func(ctx context.Context, scope host.ScopeKey) (string, error) {
			return fmt.Sprintf("You are %s.", scope), nil
		}})
	if err != nil {
		panic(err)
	}
	_, _ = sp.Section(root, systemprompt.StaticSection("rules", 10, "Be brief."))

	p, err := sp.Assemble(ctx, "agent-1")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", p.Text())
	fmt.Println(p.ToolNames())
	// Output:
	// "You are agent-1.\n\nBe brief."
	// [read_file bash]
}

// An assembly listener removes a tool for one agent scope only.
func ExampleAssembleEvent() {
	ctx := context.Background()
	h := host.New()
	defer h.Close()
	root := h.Root()
	_, _ = root.Plugin(systemprompt.Plugin, nil)
	sp, _ := systemprompt.ServiceKey.Get(root)
	_, _ = sp.Tools(root, func(context.Context, host.ScopeKey) (systemprompt.Contribution, error) {
		return systemprompt.Contribution{Tools: []systemprompt.ToolSchema{{Name: "bash"}, {Name: "read_file"}}}, nil
	})

	reader, _ := root.Scope("reader")
	_, _ = host.OnWaterfall(reader, systemprompt.AssembleEvent,
		func(ctx context.Context, _ systemprompt.Draft, next events.Next[systemprompt.Draft]) (systemprompt.Draft, error) {
			d, err := next(ctx)
			d.Tools = slices.DeleteFunc(d.Tools, func(t systemprompt.ToolSchema) bool { return t.Name == "bash" })
			return d, err
		})

	for _, scope := range []host.ScopeKey{"reader", "writer"} {
		p, _ := sp.Assemble(ctx, scope)
		fmt.Println(scope, p.ToolNames())
	}
	// Output:
	// reader [read_file]
	// writer [bash read_file]
}
