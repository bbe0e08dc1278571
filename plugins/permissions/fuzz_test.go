package permissions_test

import (
	"encoding/json"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// treeGen builds a random shell command tree from fuzz bytes and knows,
// independently of the shell parser, what it runs: whether any simple
// command is rm (however spelled or wrapped), and whether every simple
// command is an allowed echo or ls with literal arguments.
type treeGen struct {
	data []byte
	i    int
}

func (g *treeGen) pick(n int) int {
	if g.i >= len(g.data) {
		return 0
	}
	b := g.data[g.i]
	g.i++
	return int(b) % n
}

// node returns the text of a tree, whether it runs rm, and whether every
// command in it is echo or ls with plain arguments.
func (g *treeGen) node(depth int) (text string, rm, plain bool) {
	k := g.pick(12)
	if depth > 4 {
		k = 0
	}
	switch k {
	case 0, 1, 2:
		return g.simple(depth)
	case 3:
		a, r1, p1 := g.node(depth + 1)
		b, r2, p2 := g.node(depth + 1)
		op := []string{" && ", " || ", "; ", " & ", "\n"}[g.pick(5)]
		return a + op + b, r1 || r2, p1 && p2
	case 4:
		a, r1, p1 := g.node(depth + 1)
		b, r2, p2 := g.node(depth + 1)
		return a + " | " + b, r1 || r2, p1 && p2
	case 5:
		a, r, p := g.node(depth + 1)
		return "( " + a + " )", r, p
	case 6:
		a, r, p := g.node(depth + 1)
		return "{ " + a + "; }", r, p
	case 7:
		a, r, _ := g.node(depth + 1)
		return "if true; then " + a + "; fi", r, false // "true" is not allowed
	case 8:
		a, r, p := g.node(depth + 1)
		// (not time: after an assignment it is a program, not bash's keyword)
		w := []string{"timeout 5 ", "nice -n 3 ", "nohup ", "env A=1 ", "stdbuf -oL ", "command ", "A=1 B=2 "}[g.pick(7)]
		if strings.ContainsAny(a, ";&|\n(){") {
			return a, r, p // wrappers take one simple command
		}
		if first, _, _ := strings.Cut(a, " "); strings.Contains(first, "=") && w != "env A=1 " {
			return a, r, p // timeout A=1 echo runs a program named A=1
		}
		return w + a, r, p
	case 9:
		a, r, _ := g.node(depth + 1)
		return "bash -c " + syntaxQuote(a), r, false
	case 10:
		a, r, _ := g.node(depth + 1)
		return "eval " + syntaxQuote(a), r, false
	default:
		a, r, p := g.node(depth + 1)
		return "for f in x; do " + a + "; done", r, p
	}
}

func (g *treeGen) simple(depth int) (string, bool, bool) {
	names := []string{"echo", "ls", "rm", "/bin/rm", `\rm`, `"rm"`, `r'm'`, "cat", "/usr/bin/env rm", "xargs rm", "sudo rm"}
	n := g.pick(len(names))
	name := names[n]
	rm := strings.Contains(name, "rm") || name == `r'm'`
	plain := name == "echo" || name == "ls"
	args := []string{}
	for range g.pick(4) {
		switch g.pick(5) {
		case 0:
			args = append(args, "-la")
		case 1:
			args = append(args, "'a b'")
		case 2:
			args = append(args, "/tmp/x")
		case 3:
			if depth < 4 {
				a, r, p := g.node(depth + 1)
				args = append(args, "\"$( "+a+" )\"")
				rm = rm || r
				plain = plain && p
			}
		default:
			args = append(args, "rm") // a word, not a command
		}
	}
	return strings.TrimSpace(name + " " + strings.Join(args, " ")), rm, plain
}

func syntaxQuote(s string) string {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	return q
}

// FuzzBashJudgement compares the Bash judgement with the generator's own
// knowledge of the tree, after a round trip through mvdan's parser and
// printer: a deny rule on rm denies any tree that runs rm anywhere, and
// allow rules on echo and ls allow a tree only when every command in it
// is one of those.
func FuzzBashJudgement(f *testing.F) {
	for _, s := range []string{"", "\x02", "\x03\x00\x02", "\x09\x00\x02", "\x0a\x08\x02", "\x04\x05\x00\x00\x03\x03\x01"} {
		f.Add([]byte(s))
	}
	deny, err := permissions.Compile(permissions.Config{Deny: []string{"Bash(rm:*)"}})
	if err != nil {
		f.Fatal(err)
	}
	allow, err := permissions.Compile(permissions.Config{Allow: []string{"Bash(echo *)", "Bash(ls *)"}, DefaultMode: permissions.Ask})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &treeGen{data: data}
		text, rm, plain := g.node(0)
		file, err := syntax.NewParser().Parse(strings.NewReader(text), "")
		if err != nil {
			t.Skip() // the generator wrote something bash would not read either
		}
		var b strings.Builder
		if err := syntax.NewPrinter().Print(&b, file); err != nil {
			t.Fatal(err)
		}
		printed := b.String()
		args, _ := json.Marshal(map[string]string{"command": printed})
		d := deny.Decide("Bash", args)
		if rm && d.Verdict != permissions.Deny {
			t.Fatalf("runs rm but is not denied:\n%s", printed)
		}
		a := allow.Decide("Bash", args)
		if a.Verdict == permissions.Allow && !plain {
			t.Fatalf("allowed, but runs more than echo and ls:\n%s", printed)
		}
		if plain && a.Verdict != permissions.Allow {
			t.Fatalf("only echo and ls, but not allowed (%s):\n%s", a.Reason(), printed)
		}
	})
}

// FuzzRuleDirections: whatever a rule allows, the same rule denies (the
// cautious direction matches a superset), for every rule form.
func FuzzRuleDirections(f *testing.F) {
	for _, s := range []string{
		"Read(./.env)", "Read(//etc/**)", "Edit(/src/**/*.ts)", "Read(~/.ssh/**)", "Bash(git * main)", "Bash(npm run test:*)",
		"WebFetch(domain:example.com)", "Agent(Explore)", "mcp__fs__read_file(path:/srv/**)", "mcp__fs(path:**/.env)",
	} {
		f.Add(s, "Read", `{"file_path":"/home/u/proj/.env","command":"git push main && ls","url":"https://example.com/x","path":"x/../.env"}`)
	}
	f.Fuzz(func(t *testing.T, rule, tool, args string) {
		c := permissions.Config{WorkDir: "/home/u/proj", ConfigDir: "/home/u/proj", Home: "/home/u", DefaultMode: permissions.Ask}
		c.Allow = []string{rule}
		pa, err := permissions.Compile(c)
		if err != nil {
			return
		}
		c.Allow, c.Deny = nil, []string{rule}
		pd, err := permissions.Compile(c)
		if err != nil {
			t.Fatalf("%q compiles as allow but not as deny: %v", rule, err)
		}
		if pa.Decide(tool, json.RawMessage(args)).Verdict == permissions.Allow {
			if d := pd.Decide(tool, json.RawMessage(args)); d.Verdict != permissions.Deny {
				t.Fatalf("%s allows %s %s but does not deny it", rule, tool, args)
			}
		}
	})
}
