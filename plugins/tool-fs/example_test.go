package toolfs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dsh-go/dsh/host"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// Boot a host with the prompt service, the tool registry and the file
// tools confined to a fresh workspace, then write a file and read it back
// through the registry's pipeline, as an agent loop would.
func Example() {
	dir, err := os.MkdirTemp("", "toolfs-example")
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
	if err := toolstest.Load(h.Root(), toolstest.Plugin{P: toolfs.Plugin, Config: toolfs.Config{Root: dir}}); err != nil {
		fmt.Println(err)
		return
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	run := func(id, name string, args any) {
		raw, _ := json.Marshal(args)
		res := reg.Execute(ctx, tools.Call{ID: id, Name: name, Arguments: raw})
		for _, c := range res.Content {
			fmt.Println(c.Text)
		}
	}
	run("c1", "write", toolfs.WriteArgs{Path: "notes/hello.txt", Content: "hello\nworld\n"})
	run("c2", "read", toolfs.ReadArgs{Path: "notes/hello.txt"})
	// Output:
	// Created notes/hello.txt (12 bytes).
	// hello
	// world
}
