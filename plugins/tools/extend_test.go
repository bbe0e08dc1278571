package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// A plugin that registers a typed tool and one guard: DefinePlugin waits
// for the registry and hands it over.
func ExampleDefinePlugin() {
	type EchoArgs struct {
		Text string `json:"text" dsh:"required"`
	}
	echo := tools.DefinePlugin("echo", func(c *host.Context, reg *tools.Registry) error {
		def, err := tools.Define(tools.TypedTool[EchoArgs, tools.Output]{
			Name: "echo", Description: "Echo a text.",
			Execute: func(_ context.Context, a EchoArgs, _ *tools.Execution) (tools.Output, error) {
				return tools.TextOutput(a.Text), nil
			},
		})
		if err != nil {
			return err
		}
		if _, err := reg.Register(c, def); err != nil {
			return err
		}
		_, err = reg.Guard(c, func(e *tools.Execution) error {
			if e.Arg("text").String() == "secret" {
				return errors.New("no secrets")
			}
			return nil
		})
		return err
	})

	h := host.New()
	defer h.Close()
	root := h.Root()
	_, err := root.Plugin(echo, nil) // pending until the registry exists
	fmt.Println(errors.Is(err, host.ErrPending))
	_, _ = root.Plugin(tools.Plugin, nil) // echo starts now
	reg, _ := tools.Service.Get(root)

	for _, text := range []string{"hi", "secret"} {
		args, _ := json.Marshal(map[string]string{"text": text})
		res := reg.Execute(context.Background(), tools.Call{ID: text, Name: "echo", Arguments: args})
		fmt.Println(res.IsError, res.Content[0].Text)
	}
	// Output:
	// true
	// false hi
	// true Tool call denied: no secrets
}
