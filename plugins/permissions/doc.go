// Package permissions is a policy plugin of declarative allow, ask and
// deny rules on tool calls (import path
// github.com/dsh-go/dsh/plugins/permissions, package permissions), in
// Claude Code's permission rule grammar, with dsh's own conditions on any
// tool's arguments.
//
//	root.Plugin(permissions.Plugin, permissions.Config{
//		Allow: []string{"mcp__fs__read_*", "mcp__fs__write_file(path:/tmp/**)", "Bash(npm run test:*)"},
//		Ask:   []string{"mcp__github", "Edit(./src/**)"},
//		Deny:  []string{"mcp__fs__write_file(path:/etc/**)", "Read(./.env)", "Bash(rm:*)"},
//		DefaultMode: permissions.Ask,
//		WorkDir:     "/home/u/proj",
//	})
//
// For a call, deny rules are checked first, then ask, then allow; the
// first matching rule decides, and a call no rule matches gets
// [Config].DefaultMode (allow unless set). So a deny rule always beats an
// ask or allow rule, and an ask rule an allow rule.
//
// # Rule forms
//
// A rule is a tool name, optionally followed by a specifier in
// parentheses. Claude Code's built-in tools take Claude Code's
// specifiers; every other tool takes dsh's key:pattern conditions. A rule
// that neither grammar reads is refused by [Compile] with its position and
// why (a URL is not a key: "WebFetch(https://example.com/**)" is an
// error, not a rule on an argument named https).
//
//	Rule                          Matches
//	----------------------------  ------------------------------------------------
//	Bash, Bash(*)                 every Bash call
//	Bash(npm run build)           the command npm run build, exactly
//	Bash(npm run test:*)          npm run test and npm run test ARGS (legacy prefix;
//	                              word boundary: not npm run testx)
//	Bash(ls *)                    ls and ls ARGS, not lsof (a trailing " *" also
//	                              matches the bare command)
//	Bash(ls*)                     ls, lsof, ...: "*" is any run, spaces and "/" too
//	Bash(git * main)              git checkout main, git merge main, ...
//	Read(//etc/passwd)            /etc/passwd: "//" is the filesystem root
//	Read(~/.ssh/**)               everything in ~/.ssh, and ~/.ssh itself
//	Edit(/src/**/*.ts)            .ts files under src of the config file's directory
//	                              ("/" is NOT absolute here)
//	Read(./.env), Read(.env)      .env of the current directory; a pattern without
//	                              a "/" matches at any depth below it (gitignore)
//	Read(*.env)                   *.env anywhere below the current directory
//	Read, Edit, Write             every call of the tool family, no condition
//	WebFetch(domain:example.com)  fetches of example.com (the URL's host); as a
//	                              deny or ask rule also its subdomains
//	                              (sub.example.com), as an allow rule not
//	WebFetch(domain:*.example.com) fetches of its subdomains
//	WebSearch                     every web search
//	Agent(Explore)                the Explore subagent (Agent and Task calls)
//	mcp__fs                       every tool of server fs (mcp__fs__*)
//	mcp__fs__*                    the same, as a glob
//	mcp__fs__read_file            that tool
//	mcp__fs__read_*               a glob of tool names ("*" any run)
//	mcp__fs__write_file(path:/srv/data/**)
//	                              dsh condition: argument path under /srv/data
//	                              (a leading "/" IS absolute here)
//	mcp__fs__read_file(path:~/x/**), (path://x/**), (path:./x/**)
//	                              dsh conditions with Claude Code's ~/, // and ./
//	mcp__fs__read_file(path:**/.env)
//	                              .env at any depth ("**/" is zero or more dirs)
//	mcp__db__query(sql:DROP *)    a non-path condition: the text, "*" without "/"
//	mcp__fs__move_file(source:/a/**, destination:/b/**)
//	                              all conditions must hold
//
// Read rules cover Claude Code's file-reading tools (Read, Grep, Glob, LS,
// NotebookRead: their file_path, notebook_path or path argument; Grep,
// Glob and LS without a path search the current directory); Edit and
// Write rules cover every tool that edits files (Edit, Write, MultiEdit,
// NotebookEdit). As in Claude Code, they do not cover Bash (a Read deny
// rule does not stop "cat .env": add a Bash rule or a sandbox) nor MCP
// servers' tools (write those with dsh conditions).
//
// # Paths
//
// Both grammars place a path pattern the same way: "//p" from the root,
// "~/p" from [Config].Home, "./p" from the current directory
// ([Config].WorkDir: the hook payload's cwd for `dsh hook`, the configured
// workDir or the process's directory for the gateway), and "/p" from the
// config file's directory ([Config].ConfigDir) in a Read or Edit rule but
// from the root in a key:pattern condition. In both, "*" matches within
// one path segment, "**" as a whole segment any number of segments
// (none included), "?" one character but "/", "[…]" a class; and
// "dir/**" covers dir itself (listing or moving the denied directory is
// denied too).
//
// A path in a call is judged in every form it could take: cleaned
// lexically ("/a/./b/../c/" is "/a/c", "//" is "/"); a relative path
// placed in the current directory; "~/x" both as the home directory's (a
// server may expand it) and as a relative path; with its symbolic links
// resolved when it or a directory above it exists (a link into a denied
// directory is judged by its target); all NFC-normalized, like the
// patterns, so a decomposed spelling of "café" is the same name. A deny or
// ask rule matches when any form matches, an allow rule only when every
// form does; a path that cannot be placed (relative, with no current
// directory) matches deny and ask rules and no allow rule. Names are
// compared case-sensitively.
//
// # Bash
//
// A Bash call's command line is parsed with a real shell parser
// (mvdan.cc/sh, bash syntax), and every simple command in it is judged:
// commands of lists (";", "&&", "||", "&", newlines), pipelines,
// subshells, blocks, if/for/while/case bodies, functions, command
// substitutions ("$(…)", backticks), process substitutions, the literal
// strings of eval, sh -c, bash -c (and the other shells), here-documents
// fed to a shell, and the commands of find -exec and xargs. Words are
// compared after quote removal ("r"m, 'rm' and \rm are rm; $'…' is
// decoded) and joined by single spaces.
//
// Before allow rules are matched, the wrappers Claude Code strips are
// removed: timeout, time, nice, nohup, stdbuf, bare xargs, env with
// VAR=value, command, and VAR=value prefixes ("timeout 30 npm test" is
// allowed by Bash(npm test)). Deny and ask rules see more forms of each
// command, erring on the side of matching: as written, with the wrappers
// removed, with the name's directory dropped (/bin/rm is rm), and every
// command any wrapper could run (sudo, doas, env -i, exec, setsid, ionice,
// flock, watch, nsenter, chroot, strace, ...), however its options are
// spelled.
//
// A deny or ask rule that matches any simple command applies to the whole
// call. An allow rule allows the call only when every simple command is
// allowed (each by some allow rule): Bash(npm run test:*) does not allow
// "npm run test; rm -rf ~" nor "npm run test $(rm -rf ~)". A command whose
// name is not a literal (an expansion such as $CMD, a glob, a brace
// expansion), a script a shell reads from a file or a pipe ("curl … |
// bash"), an eval or -c string holding an expansion, and a line that
// cannot be parsed are never allowed by a command rule: they fall to the
// ask rules and the default. For deny and ask rules such a command is
// still read as far as it can be (the words after a computed name, the
// literal start of a name such as rm${IFS}-rf; for a line that cannot be
// parsed, any rule whose first word is one of the line's words matches).
//
// What command rules cannot see, as in Claude Code: what a command does
// with its arguments (a deny on curl does not stop "wget"; one on
// "curl https://x.io/*" does not stop "curl -L https://x.io/a"), the
// contents of scripts run by name, and a program that runs another
// program on its own. Prefer deny rules on command names and allow rules
// on exact commands; pair them with a sandbox for anything that matters.
//
// # Other arguments
//
// A key:pattern condition's key is a dotted path into the argument
// object; each segment matches a member case-insensitively (with Unicode
// case folding), arrays are matched element by element at every level,
// strings as they are and numbers, booleans and null as their JSON text.
// For a deny or ask rule a condition holds when ANY value found matches
// (or cannot be judged: arguments that are not JSON, a value longer than
// [MaxValueLen]); for an allow rule only when values are found and ALL of
// them match. So a call cannot dodge a deny rule, nor borrow an allow
// rule, by hiding a second value under a differently cased key or in an
// array. A WebFetch URL without a host is judged the same cautious way.
//
// # Cost
//
// Rules are compiled once ([Compile]) into RE2 expressions (linear time)
// with at most [MaxWildcards] wildcards each. One pass over a call's
// argument bytes gathers the values of every key any rule reads; Bash
// rules are filtered by their literal first word before their expression
// runs (deny and ask rules against the set of the line's first words,
// allow rules through an index by first word, so each command meets only
// the rules that could match it); parsed command lines are cached with
// that set (each call is decided twice, by the tools/pre-execute listener
// and by the guard). Parsing a new line with mvdan.cc/sh is most of the
// cost of its first decision. See the package's benchmarks for the
// measured cost (BenchmarkBash20Commands100Rules/parse-only is the parse
// alone, for a ratio that does not depend on the machine's load).
//
// # In the pipeline
//
// [Plugin] registers a tools/pre-execute listener (deny denies with code
// DENIED and the rule in the message; ask asks the approval service with
// the rule as the reason; allow lets the other policies decide), a guard
// holding the deny rules, so a deny cannot be undone by another
// pre-execute listener (guards run before the approval prompt, so nobody
// is asked about a denied call), and, when [Config].PostBlock or
// PostContext is set, a tools/post-execute listener (a result of a call a
// postBlock rule matches is blocked with the rule as feedback;
// PostContext is added to the others). Loaded through an agent's scoped
// context, the rules apply to that agent only. Loaded with a [*Live], the
// rules in force are the ones the Live holds at each call (a reload swaps
// them whole); loaded with a [PerCall], each call is decided by the policy
// it chooses for that call (none: denied); every way of loading installs through the same code. [Compile], [Policy.Decide] and [Policy.PostDecide]
// give the same decisions outside the pipeline (the dsh hook commands use
// them). [Policy.DeniesTool] tells which tools are denied without
// condition, which the gateway does not offer; [CheckServerName] is the
// rule for MCP server names that keeps every server's tool names apart.
package permissions
