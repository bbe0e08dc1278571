// Package dshconfig loads dsh.json, the gateway's configuration: the MCP
// servers to mount, in the "mcpServers" shape of Claude Desktop, Cursor and
// Claude Code configs, plus the policy to apply to their tools.
//
//	{
//	  "mcpServers": {
//	    "fs":     {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
//	    "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
//	  },
//	  "permissions": {
//	    "allow": ["mcp__fs__read_*", "mcp__fs__list_directory"],
//	    "ask":   ["mcp__fs__write_file(path:/tmp/**)"],
//	    "deny":  ["mcp__fs__write_file", "mcp__remote"],
//	    "defaultMode": "ask"
//	  },
//	  "timeouts": {"mcp__fs__*": "30s"},
//	  "mode": "native"
//	}
//
// Decoding is strict: an unknown key (below the top level), a duplicate key, a value of the wrong
// type, an empty command, a server with both a command and a url, an
// undefined ${VAR}, a rule that does not parse: each is an [*Error] naming
// the file, the key path and what is wrong, and [Parse] reports every one
// of them (joined), so a bad file never half-starts a gateway.
//
// The "permissions" object is a plugins/permissions Config (allow, ask and
// deny rules, defaultMode, workDir, primaryArgs, postBlock, postContext);
// its deny rules are also enforced as registry guards. Rules have Claude
// Code's meaning (see that package's table): "Bash(npm run test:*)",
// "Read(./.env)", "WebFetch(domain:example.com)" load as Claude Code reads
// them, and "/path" in a Read or Edit rule is relative to the directory of
// this file. workDir is the rules' current directory ("./path"); when it
// is not set, `dsh hook` uses the payload's cwd and [Load] the process's
// directory. primaryArgs names the argument a condition without a key
// tests for other tools. Server names follow
// permissions.CheckServerName, so that no server's tool names can pass
// for another's. "timeouts" maps tool-name patterns to budgets ("30s" or
// milliseconds), first match in file order, in the grammar of a
// permission rule's tool name (internal/toolpat: "mcp__fs" names every
// tool of the server fs). A server entry may also carry
// "type" ("stdio", "http", or "sse" for a legacy HTTP+SSE server), "callTimeout" (per call; "timeout" is its
// older spelling), "connectTimeout", "reconnect" ({"maxAttempts",
// "initialDelay", "maxDelay"}), "required" (the gateway refuses to start
// without it), "trusted" (its tool annotations may inform policy) and
// "disabled".
//
// "http" configures `dsh mcp serve --http` ([HTTP]): bearer tokens by
// identity, each read from an environment variable or a file (never
// written in the file), a JWT issuer, the allowed origins and hosts, and
// the limits.
//
// "profiles" ([Profile]) are named permission profiles: each has its own
// "permissions" (the grammar and checks of the top-level object, errors
// named "profiles.<name>.permissions.…"), an optional "tools": {"mode"},
// and a "match" list naming the identities it applies to ({"token": NAME}
// of http.tokens, {"sub": VALUE}, {"claim": NAME, "value": VALUE} of a
// JWT); [ResolveProfile] picks the first profile, in file order, that
// matches a caller. "http.unmapped" says what a caller none matches gets:
// "default" (the top-level permissions) or "refuse".
//
// A top-level key dsh does not read (another client's setting, such as
// Claude Desktop's "globalShortcut") is not an error but a warning in
// [Config].Warnings, unless it looks like a misspelling of one of dsh's
// own keys ("permisions"), which would otherwise drop rules silently.
// Unknown keys inside a server entry, "permissions" or "http" stay errors.
//
// "${VAR}" and "${VAR:-default}" in command, args, env values, cwd, url,
// header values and permissions.workDir (never in rules) are replaced from
// the environment, as Claude Code does in .mcp.json; "$$" is a literal "$".
package dshconfig
