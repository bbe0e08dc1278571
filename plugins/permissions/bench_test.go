package permissions_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// A 20-command compound line against 100 Bash rules, each iteration a
// different line (nothing is cached), and the same line again (the second
// decision of a call, the guard's, finds its commands parsed).
func BenchmarkBash20Commands100Rules(b *testing.B) {
	b.Run("distinct", func(b *testing.B) { benchBash(b, true) })
	b.Run("repeated", func(b *testing.B) { benchBash(b, false) })
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
