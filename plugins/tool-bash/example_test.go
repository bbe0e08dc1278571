package toolbash_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dsh-go/dsh/host"
	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// Boot a host with the prompt service, the tool registry and the shell
// tool, run a command through the registry's pipeline, and read the exit
// status back from the terminal result card.
func Example() {
	dir, err := os.MkdirTemp("", "toolbash-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	h := host.New()
	defer h.Close()
	// The prompt service and the registry, then the plugin under test.
	if err := toolstest.Setup(h.Root()); err != nil {
		fmt.Println(err)
		return
	}
	if err := toolstest.Load(h.Root(), toolstest.Plugin{P: toolbash.Plugin, Config: toolbash.Config{Dir: dir}}); err != nil {
		fmt.Println(err)
		return
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		fmt.Println(err)
		return
	}

	args, _ := json.Marshal(toolbash.Args{Command: "echo hi", Description: "Say hi"})
	res := reg.Execute(context.Background(), tools.Call{ID: "c1", Name: "bash", Arguments: args})
	fmt.Printf("text: %q\n", res.Content[0].Text)

	card, ok := reg.PresentResult("bash", "", args, res.Data()).(tools.TerminalResult)
	if !ok || card.ExitCode == nil {
		fmt.Printf("unexpected card %#v\n", card)
		return
	}
	fmt.Printf("output: %q\n", card.Output)
	fmt.Println("exit code:", *card.ExitCode)
	// Output:
	// text: "hi\n[exit code 0]"
	// output: "hi\n"
	// exit code: 0
}
