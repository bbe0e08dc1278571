package permissions_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// The environment of the conformance table: Claude Code's hook payload
// names the session's cwd; dsh.json sits in the project.
const (
	home = "/home/u"
	proj = "/home/u/proj"
)

type confCase struct {
	name  string
	allow []string
	ask   []string
	deny  []string
	def   permissions.Verdict
	tool  string
	input any
	want  permissions.Verdict
}

func runConf(t *testing.T, cases []confCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			def := tc.def
			if def == "" {
				def = permissions.Ask
			}
			p, err := permissions.Compile(permissions.Config{
				Allow: tc.allow, Ask: tc.ask, Deny: tc.deny, DefaultMode: def,
				WorkDir: proj, ConfigDir: proj, Home: home,
			})
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(tc.input)
			if d := p.Decide(tc.tool, in); d.Verdict != tc.want {
				t.Errorf("%s %s: got %s (%s), want %s", tc.tool, in, d.Verdict, d.Reason(), tc.want)
			}
		})
	}
}

func read(p string) map[string]any { return map[string]any{"file_path": p} }
func bash(c string) map[string]any { return map[string]any{"command": c} }

// TestClaudeCodeDocsPaths: the path forms of Claude Code's permissions
// page ("Read and Edit rules follow the gitignore specification").
func TestClaudeCodeDocsPaths(t *testing.T) {
	D, A, N := permissions.Deny, permissions.Allow, permissions.Ask // N: no rule (the default, ask)
	runConf(t, []confCase{
		{name: "//path absolute path from filesystem root: Read(//Users/alice/secrets/**)", deny: []string{"Read(//Users/alice/secrets/**)"}, tool: "Read", input: read("/Users/alice/secrets/key"), want: D},
		{name: "//path absolute: the directory itself is covered", deny: []string{"Read(//Users/alice/secrets/**)"}, tool: "LS", input: map[string]any{"path": "/Users/alice/secrets"}, want: D},
		{name: "//path absolute: a sibling is not", deny: []string{"Read(//Users/alice/secrets/**)"}, tool: "Read", input: read("/Users/alice/notes"), want: N},
		{name: "~/path path from home directory: Read(~/Documents/*.pdf)", deny: []string{"Read(~/Documents/*.pdf)"}, tool: "Read", input: read(home + "/Documents/a.pdf"), want: D},
		{name: "~/path: * matches files in a single directory", deny: []string{"Read(~/Documents/*.pdf)"}, tool: "Read", input: read(home + "/Documents/sub/a.pdf"), want: N},
		{name: "/path relative to the settings file: Edit(/src/**/*.ts)", deny: []string{"Edit(/src/**/*.ts)"}, tool: "Edit", input: read(proj + "/src/a/b.ts"), want: D},
		{name: "/path relative to the settings file: ** matches no directory too", deny: []string{"Edit(/src/**/*.ts)"}, tool: "Write", input: read(proj + "/src/b.ts"), want: D},
		{name: "/Users/alice/file is NOT an absolute path", deny: []string{"Read(/etc/passwd)"}, tool: "Read", input: read("/etc/passwd"), want: N},
		{name: "/Users/alice/file is relative to the settings file", deny: []string{"Read(/etc/passwd)"}, tool: "Read", input: read(proj + "/etc/passwd"), want: D},
		{name: "path relative to current directory: Read(*.env)", deny: []string{"Read(*.env)"}, tool: "Read", input: read(proj + "/prod.env"), want: D},
		{name: "path relative to current directory: a pattern without / matches at any depth", deny: []string{"Read(*.env)"}, tool: "Read", input: read(proj + "/a/b/.env"), want: D},
		{name: "path relative to current directory: not outside it", deny: []string{"Read(*.env)"}, tool: "Read", input: read(home + "/x.env"), want: N},
		{name: "./path: Read(./.env) against the absolute path Claude Code sends", deny: []string{"Read(./.env)"}, tool: "Read", input: read(proj + "/.env"), want: D},
		{name: "Read(~/.ssh/**) against /home/u/.ssh/id_rsa", deny: []string{"Read(~/.ssh/**)"}, tool: "Read", input: read(home + "/.ssh/id_rsa"), want: D},
		{name: "Read(//etc/passwd) against /etc/passwd", deny: []string{"Read(//etc/passwd)"}, tool: "Read", input: read("/etc/passwd"), want: D},
		{name: "Read(//etc/passwd) does not deny a relative .env", deny: []string{"Read(//etc/passwd)"}, tool: "Read", input: read(".env"), want: N},
		{name: "ask Edit(src/**) against /home/u/proj/src/a.ts", ask: []string{"Edit(src/**)"}, def: A, tool: "Edit", input: read(proj + "/src/a.ts"), want: permissions.Ask},
		{name: "Edit rules apply to all built-in tools that edit files", deny: []string{"Edit(./.env)"}, tool: "NotebookEdit", input: map[string]any{"notebook_path": proj + "/.env"}, want: D},
		{name: "Read rules apply to Grep and Glob", deny: []string{"Read(./secrets/**)"}, tool: "Grep", input: map[string]any{"pattern": "x", "path": proj + "/secrets"}, want: D},
		{name: "Glob with an absolute pattern searches its directory", deny: []string{"Read(~/.ssh/**)"}, tool: "Glob", input: map[string]any{"pattern": home + "/.ssh/*"}, want: D},
		{name: "Grep without a path searches the current directory", deny: []string{"Read(./**)"}, tool: "Grep", input: map[string]any{"pattern": "x"}, want: D},
		{name: "Read tool name alone: all file access", allow: []string{"Read"}, tool: "Read", input: read("/anything"), want: A},
		{name: "allow Read(./src/**) allows a file in src", allow: []string{"Read(./src/**)"}, tool: "Read", input: read(proj + "/src/a.go"), want: A},
		{name: "allow Read(./src/**) does not allow a path that climbs out", allow: []string{"Read(./src/**)"}, tool: "Read", input: read(proj + "/src/../.env"), want: N},
		// Cleaning, Unicode, directories.
		{name: "relative value placed in the current directory", deny: []string{"Read(./.env)"}, tool: "Read", input: read(".env"), want: D},
		{name: "dot-dot, double slash and trailing slash are cleaned", deny: []string{"Read(./.env)"}, tool: "Read", input: read(proj + "/src/..//.env/"), want: D},
		{name: "NFD spelling of a denied NFC name", deny: []string{"Read(./café/**)"}, tool: "Read", input: read(proj + "/cafe\u0301/x"), want: D},
		{name: "NFC spelling of a denied NFD name", deny: []string{"Read(./cafe\u0301/**)"}, tool: "Read", input: read(proj + "/café/x"), want: D},
		{name: "tilde value is the home directory for the server", deny: []string{"Read(~/.aws/**)"}, tool: "Read", input: read("~/.aws/credentials"), want: D},
	})
}

// TestArgConditionPaths: dsh's own key:pattern conditions keep a leading
// "/" absolute and share the cleaning, Unicode and directory rules.
func TestArgConditionPaths(t *testing.T) {
	D, N := permissions.Deny, permissions.Ask
	w := func(p string) map[string]any { return map[string]any{"path": p} }
	runConf(t, []confCase{
		{name: "leading / is absolute in a condition", deny: []string{"mcp__fs__write_file(path:/srv/data/**)"}, tool: "mcp__fs__write_file", input: w("/srv/data/x"), want: D},
		{name: "dir/** covers dir (list_directory of the denied directory)", deny: []string{"mcp__fs__list_directory(path:/srv/data/**)"}, tool: "mcp__fs__list_directory", input: w("/srv/data"), want: D},
		{name: "move_file of the whole denied directory", deny: []string{"mcp__fs__move_file(source:/srv/data/**)"}, tool: "mcp__fs__move_file", input: map[string]any{"source": "/srv/data/", "destination": "/tmp/x"}, want: D},
		{name: "**/.env catches .env/", deny: []string{"mcp__fs__read_file(path:**/.env)"}, tool: "mcp__fs__read_file", input: w(".env/"), want: D},
		{name: "**/.env catches .env/.", deny: []string{"mcp__fs__read_file(path:**/.env)"}, tool: "mcp__fs__read_file", input: w(".env/."), want: D},
		{name: "**/.env catches a bare .env", deny: []string{"mcp__fs__read_file(path:**/.env)"}, tool: "mcp__fs__read_file", input: w(".env"), want: D},
		{name: "**/.env catches an absolute path", deny: []string{"mcp__fs__read_file(path:**/.env)"}, tool: "mcp__fs__read_file", input: w("/a/b/.env"), want: D},
		{name: "// absolute in a condition", deny: []string{"mcp__fs__read_file(path://etc/**)"}, tool: "mcp__fs__read_file", input: w("/etc/shadow"), want: D},
		{name: "~/ in a condition is the home directory, not workDir", deny: []string{"mcp__fs__read_file(path:~/.ssh/**)"}, tool: "mcp__fs__read_file", input: w("~/.ssh/id_rsa"), want: D},
		{name: "./ in a condition is the current directory", deny: []string{"mcp__fs__read_file(path:./secret/**)"}, tool: "mcp__fs__read_file", input: w(proj + "/secret/a"), want: D},
		{name: "NFD value against an NFC condition", deny: []string{"mcp__fs__read_file(path:/data/café/**)"}, tool: "mcp__fs__read_file", input: w("/data/cafe\u0301/x"), want: D},
		{name: "a URL condition is matched as text, not as a path", deny: []string{"mcp__fetch__fetch(url:https://evil.io/**)"}, tool: "mcp__fetch__fetch", input: map[string]any{"url": "https://evil.io/a/b"}, want: D},
		{name: "a plain condition is matched as text", deny: []string{"mcp__db__query(sql:DROP *)"}, tool: "mcp__db__query", input: map[string]any{"sql": "select"}, want: N},
	})
}

// TestClaudeCodeDocsBash: the Bash forms of Claude Code's permissions page.
func TestClaudeCodeDocsBash(t *testing.T) {
	D, A, N := permissions.Deny, permissions.Allow, permissions.Ask
	runConf(t, []confCase{
		{name: "Bash(npm run build) matches the exact command npm run build", allow: []string{"Bash(npm run build)"}, tool: "Bash", input: bash("npm run build"), want: A},
		{name: "Bash(npm run build) exact: not with more arguments", allow: []string{"Bash(npm run build)"}, tool: "Bash", input: bash("npm run build --prod"), want: N},
		{name: "Bash(npm run test:*) legacy prefix: npm run test -- --watch", allow: []string{"Bash(npm run test:*)"}, tool: "Bash", input: bash("npm run test -- --watch"), want: A},
		{name: "Bash(npm run test:*) word boundary: not npm run testx", allow: []string{"Bash(npm run test:*)"}, tool: "Bash", input: bash("npm run testx"), want: N},
		{name: "Bash(ls *) the space before * enforces a word boundary: ls -la", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("ls -la"), want: A},
		{name: "Bash(ls *) does not match lsof", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("lsof"), want: N},
		{name: "Bash(ls *) trailing space-star matches the bare command ls", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("ls"), want: A},
		{name: "Bash(ls*) without the space matches lsof", allow: []string{"Bash(ls*)"}, tool: "Bash", input: bash("lsof"), want: A},
		{name: "Bash(* --version) wildcard at the start", allow: []string{"Bash(* --version)"}, tool: "Bash", input: bash("node --version"), want: A},
		{name: "Bash(git * main) wildcard in the middle", allow: []string{"Bash(git * main)"}, tool: "Bash", input: bash("git checkout main"), want: A},
		{name: "Bash(curl *) * spans / in a URL", deny: []string{"Bash(curl *)"}, tool: "Bash", input: bash("curl https://x.io/a"), want: D},
		{name: "Bash(*) is equivalent to Bash", allow: []string{"Bash(*)"}, tool: "Bash", input: bash("anything at all; rm -rf x"), want: A},
		{name: "Bash(safe-cmd *) won't give permission to run safe-cmd && other-cmd", allow: []string{"Bash(safe-cmd *)"}, tool: "Bash", input: bash("safe-cmd && other-cmd"), want: N},
		{name: "each subcommand allowed by its own rule", allow: []string{"Bash(git status)", "Bash(npm test)"}, tool: "Bash", input: bash("git status && npm test"), want: A},
		{name: "wrapper timeout is stripped before matching an allow rule", allow: []string{"Bash(npm test)"}, tool: "Bash", input: bash("timeout 30 npm test"), want: A},
		{name: "wrapper nice -n is stripped", allow: []string{"Bash(npm test)"}, tool: "Bash", input: bash("nice -n 10 npm test"), want: A},
		{name: "bare xargs is stripped", allow: []string{"Bash(grep *)"}, tool: "Bash", input: bash("xargs grep pattern"), want: A},
		{name: "allow Bash(npm run test:*) with defaultMode deny does not pass npm run test:unit; rm -rf ~", allow: []string{"Bash(npm run test:*)"}, def: D, tool: "Bash", input: bash("npm run test:unit; rm -rf ~"), want: D},
		{name: "allow Bash(npm run test:*) does not pass a command substitution", allow: []string{"Bash(npm run test:*)"}, tool: "Bash", input: bash("npm run test $(rm -rf ~)"), want: N},
		{name: "an expansion in the command position is never allowed", allow: []string{"Bash(*)", "Bash(echo *)"}, tool: "Bash", input: bash("$CMD hi"), want: A}, // Bash(*) is the bare tool
		{name: "an expansion in the command position is not allowed by a command rule", allow: []string{"Bash(echo *)"}, tool: "Bash", input: bash("$CMD hi"), want: N},
		{name: "an unparseable line is not allowed by a rule", allow: []string{"Bash(echo *)"}, tool: "Bash", input: bash("echo 'unterminated"), want: N},
		{name: "a shell reading its script from a pipe is not allowed", allow: []string{"Bash(echo *)", "Bash(bash *)"}, tool: "Bash", input: bash("echo rm | bash"), want: N},
		{name: "a PATH assignment changes which ls runs: not allowed", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("PATH=. ls"), want: N},
		{name: "an earlier PATH assignment: not allowed", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("export PATH=/tmp/x; ls"), want: N},
		{name: "env LD_PRELOAD=…: not allowed", allow: []string{"Bash(ls *)"}, tool: "Bash", input: bash("env LD_PRELOAD=/tmp/x.so ls"), want: N},
		{name: "a harmless assignment prefix is stripped", allow: []string{"Bash(npm test)"}, tool: "Bash", input: bash("CI=1 npm test"), want: A},
		{name: "an output redirection to a file is an edit: not allowed", allow: []string{"Bash(echo *)"}, tool: "Bash", input: bash("echo x > ~/.bashrc"), want: N},
		{name: "a redirection between descriptors or to /dev/null is allowed", allow: []string{"Bash(npm test)"}, tool: "Bash", input: bash("npm test 2>&1 >/dev/null"), want: A},
		{name: "brace expansion is judged as bash expands it", allow: []string{"Bash(echo *)"}, tool: "Bash", input: bash("echo {a,b}"), want: A},
		{name: "a huge brace expansion is bounded and not allowed", allow: []string{"Bash(echo *)"}, tool: "Bash", input: bash("echo {1..99999999999}"), want: N},
		{name: "find -exec: the executed command must be allowed too", allow: []string{"Bash(find *)"}, tool: "Bash", input: bash(`find . -exec rm {} \;`), want: N},
	})
}

// TestBashDenyBypasses: every spelling of rm found to pass Bash(rm:*).
func TestBashDenyBypasses(t *testing.T) {
	for _, line := range []string{
		"rm -rf build",
		"ls && rm -rf build",
		"cd /tmp; rm -rf build",
		"timeout 5 rm -rf build",
		"timeout -s KILL 5 rm -rf build",
		" rm -rf build",
		"FOO=1 rm -rf build",
		"/bin/rm -rf build",
		`\rm -rf build`,
		"true && rm x",
		"false || rm x",
		"sleep 1 & rm x",
		"ls | rm x",
		"echo $(rm x)",
		"echo \"$(rm x)\"",
		"echo `rm x`",
		"ls\nrm x",
		"cat <(rm x)",
		"(rm x)",
		"{ rm x; }",
		"if true; then rm x; fi",
		"for f in a; do rm $f; done",
		"f() { rm x; }",
		"eval 'rm x'",
		"eval rm x",
		"sh -c 'rm x'",
		`bash -c "rm x"`,
		"bash -lc 'rm x'",
		"bash -c 'bash -c \"rm x\"'",
		"bash <<EOF\nrm x\nEOF",
		"bash <<< 'rm x'",
		"nice -n 5 rm x",
		"nohup rm x",
		"env FOO=1 rm x",
		"env -i rm x",
		"time rm x",
		"command rm x",
		"exec rm x",
		"sudo rm x",
		"sudo -u root rm x",
		"xargs rm",
		"xargs -0 rm",
		`find . -exec rm {} \;`,
		`find . -execdir rm {} +`,
		`r"m" x`,
		`'rm' x`,
		"r\\\nm x",
		"rm${IFS}-rf x",
		"$X rm x",
		"export A=$(rm x)",
		"X=$(rm x)",
		"[[ $(rm x) ]]",
		"echo ${X:-$(rm x)}",
		"! rm x",
		"coproc rm x",
		"rm x 'unterminated",
		"stdbuf -oL rm x",
		"timeout 5 bash -c 'rm x'",
		"{rm,-rf,x}",
		"echo a; {rm,x}",
		"r{m,} x",
		"bash -c $'\\x72m x'",
		"bash -c \"$A; rm x\"",
	} {
		t.Run(strings.ReplaceAll(line, "\n", `\n`), func(t *testing.T) {
			p, err := permissions.Compile(permissions.Config{Deny: []string{"Bash(rm:*)"}, Allow: []string{"Bash"}, WorkDir: proj, Home: home})
			if err != nil {
				t.Fatal(err)
			}
			in, _ := json.Marshal(bash(line))
			if d := p.Decide("Bash", in); d.Verdict != permissions.Deny {
				t.Errorf("%q: got %s, want deny", line, d.Verdict)
			}
		})
	}
}

// TestBashDenyIsNotEverything: deny rules still read commands, not words.
func TestBashDenyIsNotEverything(t *testing.T) {
	p, err := permissions.Compile(permissions.Config{Deny: []string{"Bash(rm:*)"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"echo rm", "git rm --cached x", "ls -la", "grep rm file", "rmdir x"} {
		in, _ := json.Marshal(bash(line))
		if d := p.Decide("Bash", in); d.Verdict != permissions.Allow {
			t.Errorf("%q: got %s (%s), want the default allow", line, d.Verdict, d.Reason())
		}
	}
}

// TestClaudeCodeDocsOtherTools: WebFetch, WebSearch, MCP and Agent rules.
func TestClaudeCodeDocsOtherTools(t *testing.T) {
	D, A, N := permissions.Deny, permissions.Allow, permissions.Ask
	url := func(u string) map[string]any { return map[string]any{"url": u, "prompt": "x"} }
	runConf(t, []confCase{
		{name: "WebFetch(domain:example.com) matches fetch requests to example.com", deny: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://example.com/page"), want: D},
		{name: "WebFetch(domain:example.com) host is case-insensitive, port ignored", deny: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://EXAMPLE.com.:8443/page"), want: D},
		{name: "WebFetch(domain:example.com) not another host", allow: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://example.com.evil.io/"), want: N},
		{name: "WebFetch(domain:example.com) userinfo is not the host", allow: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://example.com@evil.io/"), want: N},
		{name: "WebFetch(domain:example.com) as an allow rule is that host only", allow: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://sub.example.com/"), want: N},
		{name: "WebFetch(domain:example.com) as a deny rule also covers its subdomains", deny: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://a.b.example.com/x"), want: D},
		{name: "WebFetch(domain:example.com) as a deny rule not a look-alike host", deny: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("https://badexample.com/x"), want: N},
		{name: "WebFetch(domain:*.example.com) subdomains", allow: []string{"WebFetch(domain:*.example.com)"}, tool: "WebFetch", input: url("https://docs.example.com/"), want: A},
		{name: "WebFetch a URL without a host cannot be allowed", allow: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("example.com/x"), want: N},
		{name: "WebFetch a URL without a host is denied by a domain deny", deny: []string{"WebFetch(domain:example.com)"}, tool: "WebFetch", input: url("not a url"), want: D},
		{name: "WebSearch", deny: []string{"WebSearch"}, tool: "WebSearch", input: map[string]any{"query": "x"}, want: D},
		{name: "mcp__puppeteer matches any tool provided by the puppeteer server", allow: []string{"mcp__puppeteer"}, tool: "mcp__puppeteer__puppeteer_navigate", input: map[string]any{}, want: A},
		{name: "mcp__puppeteer__* wildcard syntax that also matches all tools from the server", allow: []string{"mcp__puppeteer__*"}, tool: "mcp__puppeteer__puppeteer_click", input: map[string]any{}, want: A},
		{name: "mcp__puppeteer__puppeteer_navigate matches that tool only", allow: []string{"mcp__puppeteer__puppeteer_navigate"}, tool: "mcp__puppeteer__puppeteer_click", input: map[string]any{}, want: N},
		{name: "mcp__puppeteer is not a prefix of another server", allow: []string{"mcp__puppeteer"}, tool: "mcp__puppeteer2__x", input: map[string]any{}, want: N},
		{name: "Agent(Explore) matches the Explore subagent", deny: []string{"Agent(Explore)"}, tool: "Task", input: map[string]any{"subagent_type": "Explore", "prompt": "x"}, want: D},
		{name: "Agent(Explore) not another subagent", deny: []string{"Agent(Explore)"}, tool: "Agent", input: map[string]any{"subagent_type": "Plan"}, want: N},
	})
}

// TestRefusedRules: rules the grammar cannot read are refused at load,
// naming the entry and why.
func TestRefusedRules(t *testing.T) {
	for _, tc := range []struct{ rule, why string }{
		{"WebFetch(https://example.com/**)", "domain:host"},
		{"mcp__fetch__fetch(https://example.com/**)", "is a URL"},
		{"WebFetch(domain:exa mple.com)", "not a host"},
		{"WebSearch(anything)", "no specifier"},
		{"Read(/src/**)", "config file's directory"}, // no ConfigDir here
		{"Read(~alice/x)", "~user"},
		{"Read(../x)", "climb out"},
		{"Bash(npm run test", `closing ")"`},
	} {
		_, err := permissions.Compile(permissions.Config{Deny: []string{tc.rule}})
		var ce *permissions.ConfigError
		if err == nil || !errors.As(err, &ce) || ce.Key != "deny[0]" || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("%s: err = %v, want a deny[0] error saying %q", tc.rule, err, tc.why)
		}
	}
}

// TestSymlinkIntoDeniedDirectory: a link into a denied directory is
// judged by where it leads, whether the file exists or not.
func TestSymlinkIntoDeniedDirectory(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	work := filepath.Join(dir, "work")
	for _, d := range []string{secret, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(secret, "key"), []byte("k"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	p, err := permissions.Compile(permissions.Config{
		Deny:    []string{"Read(//" + strings.TrimPrefix(secret, "/") + "/**)", "mcp__fs__read_file(path:" + secret + "/**)"},
		Allow:   []string{"Read(./**)", "mcp__fs__read_file(path:" + work + "/**)"},
		WorkDir: work, DefaultMode: permissions.Ask,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{work + "/link/key", "link/key", work + "/link/not-yet", work + "/link/../work/link/key"} {
		in, _ := json.Marshal(read(v))
		if d := p.Decide("Read", in); d.Verdict != permissions.Deny {
			t.Errorf("Read %s: %s, want deny", v, d.Verdict)
		}
		in, _ = json.Marshal(map[string]any{"path": v})
		if d := p.Decide("mcp__fs__read_file", in); d.Verdict != permissions.Deny {
			t.Errorf("read_file %s: %s, want deny", v, d.Verdict)
		}
	}
	in, _ := json.Marshal(read(work + "/plain"))
	if d := p.Decide("Read", in); d.Verdict != permissions.Allow {
		t.Errorf("Read of a plain file in work: %s, want allow", d.Verdict)
	}
}

// TestDecideConcurrently: a Policy (and its cache of parsed command
// lines) is safe for concurrent use.
func TestDecideConcurrently(t *testing.T) {
	p, err := permissions.Compile(permissions.Config{Deny: []string{"Bash(rm:*)"}, Allow: []string{"Bash(echo *)"}, DefaultMode: permissions.Ask})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for i := range 200 {
				line := fmt.Sprintf("echo %d && rm %d", i%70, g)
				in, _ := json.Marshal(bash(line))
				if d := p.Decide("Bash", in); d.Verdict != permissions.Deny {
					done <- fmt.Errorf("%q: %s", line, d.Verdict)
					return
				}
				in, _ = json.Marshal(bash(fmt.Sprintf("echo %d", i%70)))
				if d := p.Decide("Bash", in); d.Verdict != permissions.Allow {
					done <- fmt.Errorf("echo: %s", d.Verdict)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
