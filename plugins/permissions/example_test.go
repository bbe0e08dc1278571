package permissions_test

import (
	"encoding/json"
	"fmt"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// Rules in Claude Code's style, with argument conditions: deny beats ask,
// which beats allow; a call no rule matches gets the default mode.
func ExamplePolicy_Decide() {
	p, err := permissions.Compile(permissions.Config{
		Allow: []string{"mcp__fs__read_*", "mcp__fs__write_file(path:/tmp/**)"},
		Deny:  []string{"mcp__fs__write_file(path:/tmp/secrets/**)", "mcp__shell"},
		// Everything else asks.
		DefaultMode: permissions.Ask,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct{ tool, args string }{
		{"mcp__fs__read_text_file", `{"path":"/etc/hosts"}`},
		{"mcp__fs__write_file", `{"path":"/tmp/notes.txt"}`},
		{"mcp__fs__write_file", `{"path":"/tmp/../tmp/secrets/key"}`},
		{"mcp__fs__write_file", `{"path":"/home/me/notes.txt"}`},
		{"mcp__shell__run", `{"command":"ls"}`},
	} {
		d := p.Decide(c.tool, json.RawMessage(c.args))
		fmt.Printf("%-7s %s\n", d.Verdict, d.Reason())
	}
	// Output:
	// allow   permission rule allow[0] "mcp__fs__read_*"
	// allow   permission rule allow[1] "mcp__fs__write_file(path:/tmp/**)"
	// deny    permission rule deny[0] "mcp__fs__write_file(path:/tmp/secrets/**)"
	// ask     no permission rule matches; the default is ask
	// deny    permission rule deny[1] "mcp__shell"
}
