package permissions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/permissions"
	"mvdan.cc/sh/v3/syntax"
)

// A 20-command compound line against 100 Bash rules, each iteration a
// different line (nothing is cached), and the same line again (the second
// decision of a call, the guard's, finds its commands parsed).
func BenchmarkBash20Commands100Rules(b *testing.B) {
	b.Run("distinct", func(b *testing.B) { benchBash(b, true) })
	b.Run("repeated", func(b *testing.B) { benchBash(b, false) })
	// The baseline: mvdan.cc/sh's parse alone of the same distinct lines,
	// in the same run, so the ratio distinct/parse-only does not depend on
	// the machine's load.
	b.Run("parse-only", func(b *testing.B) {
		lines := bashLines()
		b.ReportAllocs()
		cpu := cpuClock()
		i := 0
		for b.Loop() {
			p := syntax.NewParser(syntax.Variant(syntax.LangBash))
			if _, err := p.Parse(strings.NewReader(lines[i%len(lines)]), ""); err != nil {
				b.Fatal(err)
			}
			i++
		}
		reportCPU(b, cpu)
	})
}

// bashLines returns the benchmark's 20-command line, made distinct by
// 1,000 different trailing comments.
func bashLines() []string {
	var cmds []string
	ops := []string{" && ", " | ", "; ", " || "}
	line := ""
	for i := range 20 {
		cmds = append(cmds, fmt.Sprintf("tool%d --flag=%d \"arg $HOME\" 'x y' $(tool%d -q)", i*2, i, i*2+1))
		if i > 0 {
			line += ops[i%len(ops)]
		}
		line += cmds[i]
	}
	lines := make([]string, 1000)
	for i := range lines {
		lines[i] = fmt.Sprintf("%s # %d", line, i)
	}
	return lines
}

func benchBash(b *testing.B, distinct bool) {
	var c permissions.Config
	for i := range 50 {
		c.Deny = append(c.Deny, fmt.Sprintf("Bash(danger%d:*)", i))
		c.Allow = append(c.Allow, fmt.Sprintf("Bash(tool%d *)", i))
	}
	c.DefaultMode = permissions.Ask
	p, err := permissions.Compile(c)
	if err != nil {
		b.Fatal(err)
	}
	var cmds []string
	ops := []string{" && ", " | ", "; ", " || "}
	line := ""
	for i := range 20 {
		cmds = append(cmds, fmt.Sprintf("tool%d --flag=%d \"arg $HOME\" 'x y' $(tool%d -q)", i*2, i, i*2+1))
		if i > 0 {
			line += ops[i%len(ops)]
		}
		line += cmds[i]
	}
	args, _ := json.Marshal(map[string]string{"command": line})
	if d := p.Decide("Bash", args); d.Verdict != permissions.Allow {
		b.Fatalf("%s: %s", line, d.Reason())
	}
	lines := make([]json.RawMessage, 1)
	lines[0] = args
	if distinct {
		// Enough distinct lines to overflow the parse cache.
		lines = lines[:0]
		for i := range 1000 {
			a, _ := json.Marshal(map[string]string{"command": fmt.Sprintf("%s # %d", line, i)})
			lines = append(lines, a)
		}
	}
	b.ReportAllocs()
	cpu := cpuClock()
	i := 0
	for b.Loop() {
		p.Decide("Bash", lines[i%len(lines)])
		i++
	}
	reportCPU(b, cpu)
}

// cpuClock returns the process's CPU time so far (user and system).
func cpuClock() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process CPU time per operation since start: on a
// shared machine, ns/op is wall time and counts other processes' turns.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuClock()-start)/float64(b.N)/1e3, "cpu-µs/op")
}

// A call with a 4 MB argument against 1,000 rules that all name its tool.
func Benchmark4MBArgument1000Rules(b *testing.B) {
	var c permissions.Config
	for i := range 1000 {
		switch i % 4 {
		case 0:
			c.Deny = append(c.Deny, fmt.Sprintf("mcp__fs__write_file(path:/srv/d%d/**)", i))
		case 1:
			c.Ask = append(c.Ask, fmt.Sprintf("mcp__fs__write_file(path:/home/u/p%d/*.env, content:*SECRET%d*)", i, i))
		case 2:
			c.Allow = append(c.Allow, fmt.Sprintf("mcp__fs__write_file(path:/tmp/w%d/**)", i))
		default:
			c.Deny = append(c.Deny, fmt.Sprintf("mcp__fs__*(meta.tags:t%d-*)", i))
		}
	}
	c.WorkDir = "/tmp/w2"
	p, err := permissions.Compile(c)
	if err != nil {
		b.Fatal(err)
	}
	content := strings.Repeat("lorem ipsum dolor sit amet\n", 4<<20/27)
	tags := make([]string, 1000)
	for i := range tags {
		tags[i] = fmt.Sprintf("x%d", i)
	}
	args, _ := json.Marshal(map[string]any{"path": "/tmp/w2/a.txt", "content": content, "meta": map[string]any{"tags": tags}})
	if len(args) < 4<<20-1024 {
		b.Fatalf("argument is %d bytes", len(args))
	}
	if d := p.Decide("mcp__fs__write_file", args); d.Verdict != permissions.Allow {
		b.Fatalf("%s", d.Reason())
	}
	b.SetBytes(int64(len(args)))
	cpu := cpuClock()
	for b.Loop() {
		p.Decide("mcp__fs__write_file", args)
	}
	reportCPU(b, cpu)
}

// A repeated line is judged from the parse cache with the rules indexed by
// command name: its decision allocates a bounded few objects, whatever the
// number of rules and commands (it allocated 22 before the index and the
// cached first words).
func TestBashRepeatedLineAllocations(t *testing.T) {
	var c permissions.Config
	for i := range 50 {
		c.Deny = append(c.Deny, fmt.Sprintf("Bash(danger%d:*)", i))
		c.Allow = append(c.Allow, fmt.Sprintf("Bash(tool%d *)", i))
	}
	p, err := permissions.Compile(c)
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"command": bashLines()[0]})
	if d := p.Decide("Bash", args); d.Verdict != permissions.Allow {
		t.Fatal(d.Reason())
	}
	if n := testing.AllocsPerRun(100, func() { p.Decide("Bash", args) }); n > 12 {
		t.Errorf("a repeated decision allocates %v objects, want at most 12", n)
	}
}

// The allow rules indexed by first word keep the config's order: the
// first rule (in allow's order) that allows the first command is named.
func TestBashAllowIndexKeepsOrder(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		cmd   string
		want  string
	}{
		{[]string{"Bash(* --help)", "Bash(git *)"}, "git --help", "Bash(* --help)"},
		{[]string{"Bash(git *)", "Bash(* --help)"}, "git --help", "Bash(git *)"},
		{[]string{"Bash(ls *)", "Bash(* --help)", "Bash(git *)"}, "git --help && ls", "Bash(* --help)"},
		{[]string{"Read", "Bash(ls *)", "Bash(gi* *)"}, "git x && ls", "Bash(gi* *)"},
		{[]string{"Bash(ls *)"}, "git x && ls", ""},
	} {
		p, err := permissions.Compile(permissions.Config{Allow: tc.allow, DefaultMode: permissions.Ask})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]string{"command": tc.cmd})
		if d := p.Decide("Bash", args); d.Rule != tc.want {
			t.Errorf("%v %q: %s, want rule %q", tc.allow, tc.cmd, d.Reason(), tc.want)
		}
	}
}
