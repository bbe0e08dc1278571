package permissions

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzAllowIndex checks the Bash allow rules indexed by first word
// against the plain scan of every rule in order: same rule (or none) for
// any rules and command line.
func FuzzAllowIndex(f *testing.F) {
	f.Add("git *\n* --help\nls:*", "git --help && ls -la | wc -l")
	f.Add("gi* *\nls *\nRead", "git x; ls")
	f.Add("npm run *\nnpm *\n*", "FOO=1 npm run build && timeout 5 npm test")
	f.Add("echo *", "echo $(echo hi) `echo x`")
	f.Fuzz(func(t *testing.T, rules, line string) {
		var allow []string
		for _, r := range strings.Split(rules, "\n") {
			if strings.ContainsAny(r, "()") {
				continue
			}
			if r == "Read" {
				allow = append(allow, r)
				continue
			}
			allow = append(allow, "Bash("+r+")")
		}
		if len(allow) > 32 || len(line) > 4096 {
			return
		}
		p, err := Compile(Config{Allow: allow, DefaultMode: Ask})
		if err != nil {
			return
		}
		args, _ := json.Marshal(map[string]string{"command": line})
		c := &call{p: p, tool: "Bash", args: args}
		var rs []*compiled
		for i := range p.allow {
			if r := &p.allow[i]; r.kind == kindShell && r.appliesTo("Bash") {
				rs = append(rs, r)
			}
		}
		want := c.shellAllowed(rs)
		got := c.shellAllowedIndexed()
		if got != want {
			t.Fatalf("rules %q line %q: indexed %v, scan %v", allow, line, got, want)
		}
	})
}
