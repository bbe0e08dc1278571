package codemode_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/npmpeer"
	"github.com/dsh-go/dsh/plugins/codemode"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestCT7_EverythingServerStructuredValueInAProgram: end to end over
// stdio, the npm everything server mounted through the MCP client; a
// program calls its get-structured-content tool (declared outputSchema)
// and reads fields of the structured value, which the SDK declares.
func TestCT7_EverythingServerStructuredValueInAProgram(t *testing.T) {
	bin := npmpeer.Bin(t, "mcp-server-everything")
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	f, err := e.root.Plugin(mcpclient.Plugin, mcpclient.Config{Name: "ev", Command: bin, Args: []string{"stdio"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	const name = "mcp__ev__get-structured-content"
	if _, ok := e.reg.Get(name, ""); !ok {
		t.Fatalf("%s not mounted", name)
	}
	sdk := codemode.SDK(e.reg, "")
	if !strings.Contains(sdk, `"`+name+`": {`) || !strings.Contains(sdk, "temperature") {
		t.Fatalf("SDK does not declare the structured output of %s:\n%s", name, sdk)
	}
	src := `const w = await tools["` + name + `"]({ location: "Chicago" })
return [typeof w, typeof w.temperature, w.temperature + 0 === w.temperature, typeof w.conditions, w.conditions.length > 0]`
	res := e.reg.Execute(context.Background(), runCode("c1", src, "agent"))
	if want := `["object","number",true,"string",true]`; res.IsError || text(res) != want {
		t.Fatalf("result = %+v\nwant %s", res, want)
	}
}
