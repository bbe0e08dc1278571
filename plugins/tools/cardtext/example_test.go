package cardtext_test

import (
	"fmt"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// A pending shell command's terminal card: its description, working
// directory and the command line.
func ExampleCall() {
	card := tools.TerminalCall{Title: "ls -l", Description: "List the workspace", Cwd: "/work"}
	fmt.Print(cardtext.Call("bash", []byte(`{"command":"ls -l"}`), card))
	// Output:
	//   # List the workspace
	//   (in /work)
	//   $ ls -l
}

// A completed run's terminal card: its output and exit status. Control
// characters from the tool are escaped, never sent to the terminal.
func ExampleResult() {
	code := 1
	card := tools.TerminalResult{Output: "hi\n\x1b[31mred\x1b[0m\n", ExitCode: &code}
	data := tools.ResultData{Content: []tools.Content{tools.Text("hi\nred\n[exit code 1]")}}
	fmt.Print(cardtext.Result(card, data, ""))
	// Output:
	//   | hi
	//     \x1b[31mred\x1b[0m
	//   [exit 1]
}
