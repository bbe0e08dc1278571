package dshconfig_test

import (
	"fmt"

	"github.com/dsh-go/dsh/internal/dshconfig"
)

// Every problem of a config is reported, each with the file and key.
func ExampleParse() {
	_, err := dshconfig.Parse("dsh.json", []byte(`{
	  "mcpServers": {"fs": {"command": "", "argz": []}},
	  "permissions": {"deny": ["mcp__fs__write_file(path:/etc/**"]}
	}`), nil)
	fmt.Println(err)
	// Output:
	// dsh.json: mcpServers.fs.argz: unknown key (known here: type, command, args, env, cwd, url, headers, timeout, callTimeout, connectTimeout, reconnect, required, trusted, disabled)
	// dsh.json: mcpServers.fs.command: must be a non-empty string
	// dsh.json: permissions.deny[0]: invalid permission rule "mcp__fs__write_file(path:/etc/**": missing the closing ")" at the end
}
