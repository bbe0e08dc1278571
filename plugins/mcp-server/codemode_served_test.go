package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/plugins/codemode"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

// longProgram is a run_code program far longer than a call card shows,
// whose last line is what matters.
func longProgram() string {
	var b strings.Builder
	for i := range 200 {
		b.WriteString("// filler line that a card would cut off, number ")
		b.WriteString(strings.Repeat("x", i%7))
		b.WriteString("\n")
	}
	b.WriteString("const a = await tools.echo({text: \"one\"});\n")
	b.WriteString("return a + \"\\x1b[2J the end\"; // LAST LINE\n")
	return b.String()
}

// Served Code Mode is self-contained and shows what runs: run_code's
// description declares the SDK without pointing at a system prompt the
// client does not have, an ask on run_code itself shows the whole program,
// and an ask on a call the program makes shows the program that makes it,
// each with its SHA-256.
func TestServedCodeModeShowsTheWholeProgram(t *testing.T) {
	e := boot(t, tools.Code, mcpserver.Config{})
	askAll(t, e, "echo")
	askAll(t, e, codemode.RunCodeName)
	asked := make(chan string, 4)
	cs := connect(t, e, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- req.Params.Message
		return &mcp.ElicitResult{Action: "accept"}, nil
	}})
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != 1 || strings.Contains(list.Tools[0].Description, "system prompt") ||
		!strings.Contains(list.Tools[0].Description, "declare const tools") {
		t.Errorf("run_code's description:\n%s", list.Tools[0].Description)
	}

	prog := longProgram()
	sum := sha256.Sum256([]byte(prog))
	head := hex.EncodeToString(sum[:])
	r := call(t, cs, codemode.RunCodeName, map[string]any{"code": prog})
	if r.IsError || !strings.Contains(text(r), "one") {
		t.Fatalf("run_code: isError=%v %q", r.IsError, text(r))
	}
	own, sub := <-asked, <-asked
	for name, msg := range map[string]string{"run_code's ask": own, "the sub-call's ask": sub} {
		if !strings.Contains(msg, head) || !strings.Contains(msg, "// LAST LINE") || strings.Contains(msg, "more bytes") {
			t.Errorf("%s does not show the whole program with its hash:\n%s", name, msg)
		}
		if strings.Contains(msg, "\x1b") {
			t.Errorf("%s carries a raw escape", name)
		}
		if n := strings.Count(msg, "  | "); n != strings.Count(prog, "\n") {
			t.Errorf("%s shows %d program lines, want %d", name, n, strings.Count(prog, "\n"))
		}
	}
	if !strings.Contains(sub, "echo") || !strings.Contains(sub, "Called by the run_code program") {
		t.Errorf("the sub-call's ask:\n%s", sub)
	}
}
