package toolfs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
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
	for _, p := range []struct {
		plugin host.Plugin
		config any
	}{
		{systemprompt.Plugin, systemprompt.Config{}},
		{tools.Plugin, tools.Config{Mode: tools.Native}},
		{toolfs.Plugin, toolfs.Config{Root: dir}},
	} {
		f, err := h.Root().Plugin(p.plugin, p.config)
		if err != nil {
			fmt.Println(err)
			return
		}
		if f.State() != host.Active {
			fmt.Println(f.Name(), f.State(), f.Err())
			return
		}
	}
	reg, err := host.Get[*tools.Registry](h.Root(), tools.ServiceName)
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
