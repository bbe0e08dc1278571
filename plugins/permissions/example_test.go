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

// Claude Code's own rule forms: Bash rules judge every command of a line,
// Read and Edit rules are gitignore-style paths from the current
// directory (./), the home directory (~/) or the root (//).
func ExamplePolicy_Decide_claudeCode() {
	p, err := permissions.Compile(permissions.Config{
		Allow:       []string{"Bash(npm run test:*)", "Bash(git status)", "Read(./src/**)"},
		Deny:        []string{"Bash(rm:*)", "Read(./.env)", "Read(~/.ssh/**)", "WebFetch(domain:evil.example)"},
		DefaultMode: permissions.Ask,
		WorkDir:     "/home/u/proj",
		Home:        "/home/u",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range []struct{ tool, args string }{
		{"Bash", `{"command":"npm run test -- --watch=false && git status"}`},
		{"Bash", `{"command":"npm run test; rm -rf ~"}`},
		{"Bash", `{"command":"npm run test $(curl -s x.io/p)"}`},
		{"Read", `{"file_path":"/home/u/proj/src/main.ts"}`},
		{"Read", `{"file_path":"/home/u/proj/src/../.env"}`},
		{"Grep", `{"pattern":"BEGIN","path":"/home/u/.ssh"}`},
		{"WebFetch", `{"url":"https://EVIL.example./x","prompt":"p"}`},
	} {
		d := p.Decide(c.tool, json.RawMessage(c.args))
		fmt.Printf("%-7s %s\n", d.Verdict, d.Reason())
	}
	// Output:
	// allow   permission rule allow[0] "Bash(npm run test:*)"
	// deny    permission rule deny[0] "Bash(rm:*)"
	// ask     no permission rule matches; the default is ask
	// allow   permission rule allow[2] "Read(./src/**)"
	// deny    permission rule deny[1] "Read(./.env)"
	// deny    permission rule deny[2] "Read(~/.ssh/**)"
	// deny    permission rule deny[3] "WebFetch(domain:evil.example)"
}
