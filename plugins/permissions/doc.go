// Package permissions is a policy plugin of declarative allow, ask and
// deny rules on tool calls (import path
// github.com/dsh-go/dsh/plugins/permissions, package permissions), in the
// syntax of Claude Code's permission rules, with conditions on any tool's
// arguments.
//
//	root.Plugin(permissions.Plugin, permissions.Config{
//		Allow: []string{"mcp__fs__read_*", "mcp__fs__write_file(path:/tmp/**)"},
//		Ask:   []string{"mcp__github"},
//		Deny:  []string{"mcp__fs__write_file(path:/etc/**)", "mcp__fs__move_file(source:/etc/**)"},
//		DefaultMode: permissions.Ask,
//	})
//
// # Rules
//
// A rule is a tool-name pattern ("*" matches any run; "mcp__server" alone
// means every tool of that server) optionally followed by conditions in
// parentheses, all of which must hold: "key:pattern", where key is a
// dotted path into the argument object and the pattern a glob ("**" any
// run, "*" any run without "/", "?" one character other than "/", "\"
// escapes). See [ParseRule] for the grammar, including Claude Code's
// prefix form `Bash(npm run test:*)` for tools with a primary argument.
//
// For a call, deny rules are checked first, then ask, then allow; the
// first matching rule decides, and a call no rule matches gets
// [Config].DefaultMode (allow unless set). So a deny rule always beats an
// ask or allow rule, and an ask rule an allow rule.
//
// # Matching is cautious
//
// Values come from the model or a remote client, so matching leans the
// safe way: keys are matched case-insensitively (a server may read "PATH"
// as "path"), arrays element by element, and for a deny or ask rule a
// condition holds when ANY value found matches, for an allow rule only
// when ALL do. Absolute-path patterns see values cleaned lexically
// ("/tmp/../etc/x" is "/etc/x"); a relative value is placed in
// [Config].WorkDir, and without one it matches deny and ask patterns but
// not allow patterns. Symbolic links are not resolved: a path rule is
// about the path the call names, so pair it with a server confined to its
// own folders. A value longer than [MaxValueLen] is treated the same
// cautious way, and a pattern has at most [MaxWildcards] wildcards, so
// matching time stays bounded whatever the call carries.
//
// Patterns match text, not meaning: an allow rule on a shell command's
// prefix also allows "npm run test; rm -rf ~". Prefer deny and ask rules
// for shells, and allow rules for tools whose arguments are paths or
// plain values.
//
// # In the pipeline
//
// [Plugin] registers a tools/pre-execute listener (deny denies with code
// DENIED and the rule in the message; ask asks the approval service with
// the rule as the reason; allow lets the other policies decide) and a
// guard holding the deny rules, so a deny cannot be undone by another
// pre-execute listener. Loaded through an agent's scoped context, the
// rules apply to that agent only. [Compile] and [Policy.Decide] give the
// same decisions outside the pipeline (the dsh hook commands use them).
package permissions
