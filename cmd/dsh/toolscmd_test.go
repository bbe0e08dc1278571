package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// `dsh tools list` under "mode": "code" lists run_code, which MCP clients
// are served, and, under a heading of their own, the tools its programs
// call (which --json lists too); in the other modes every tool is served
// and listed plainly.
func TestToolsList_CodeModeListsRunCodeAndTheToolsItCalls(t *testing.T) {
	for _, tc := range []struct {
		mode tools.Mode
		want string
	}{
		{tools.Native, "a_tool\tReads a.\nb_tool\tReads b.\n"},
		{tools.Code, "# served to MCP clients (\"mode\": \"code\"):\nrun_code\t" +
			"\n# called from run_code programs as tools.NAME(args), not served directly:\na_tool\tReads a.\nb_tool\tReads b.\n"},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			h := host.New()
			defer h.Close()
			root := h.Root()
			for _, p := range []struct {
				p   host.Plugin
				cfg any
			}{{systemprompt.Plugin, nil}, {isolated.Plugin, coderuntime.Config{Isolation: coderuntime.IsolationNone}}, {codemode.Plugin, tools.Config{Mode: tc.mode}}} {
				if f, err := root.Plugin(p.p, p.cfg); err != nil || f.Err() != nil {
					t.Fatal(err, f.Err())
				}
			}
			reg, err := tools.Service.Get(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"b_tool", "a_tool"} {
				if _, err := reg.Register(root, tools.Definition{
					Name: name, Description: "Reads " + name[:1] + ".\nMore text.",
					Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.TextOutput("x"), nil },
				}); err != nil {
					t.Fatal(err)
				}
			}
			var out bytes.Buffer
			listTools(&out, reg, cliAgent, nil)
			got := out.String()
			if tc.mode == tools.Code {
				// run_code's description is its SDK: keep its first line out of the comparison.
				head, rest, _ := strings.Cut(got, "run_code\t")
				_, rest, _ = strings.Cut(rest, "\n")
				got = head + "run_code\t\n" + rest
			}
			if got != tc.want {
				t.Errorf("listed:\n%s\nwant:\n%s", out.String(), tc.want)
			}
			var names []string
			b, _ := json.Marshal(reg.Schemas(cliAgent))
			var schemas []struct{ Name string }
			if err := json.Unmarshal(b, &schemas); err != nil {
				t.Fatal(err)
			}
			for _, s := range schemas {
				names = append(names, s.Name)
			}
			for _, name := range []string{"a_tool", "b_tool"} {
				if !strings.Contains(strings.Join(names, ","), name) {
					t.Errorf("--json schemas %v lack %s", names, name)
				}
			}
		})
	}
}
