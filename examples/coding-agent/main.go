package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

//go:embed testdata/session.json
var defaultScript []byte

func main() {
	var (
		scriptPath = flag.String("script", "", "scripted model to play (default: the embedded testdata/session.json)")
		approve    = flag.String("approve", "auto", "how to answer approval asks: ask (terminal prompt), yes, no, or auto (ask when stdin is a terminal, else yes)")
		logPath    = flag.String("log", "", "session log (JSONL) path (default: session.jsonl in the workspace)")
		workspace  = flag.String("workspace", "", "workspace directory (default: a new temporary directory, removed afterwards)")
		verbose    = flag.Bool("v", false, "log the host's debug output to stderr")
	)
	flag.Parse()
	// A process that runs model-written programs bounds every regular
	// expression match (goja's regexp2 has no per-run limit): an explicit,
	// process-wide opt-in.
	coderuntime.LimitRegexpMatchTime()
	script := defaultScript
	if *scriptPath != "" {
		b, err := os.ReadFile(*scriptPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "coding-agent:", err)
			os.Exit(2)
		}
		script = b
	}
	mode := *approve
	if mode == "auto" {
		mode = "yes"
		if st, err := os.Stdin.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			mode = "ask"
		}
	}
	opts := Options{
		Script:    script,
		Approve:   mode,
		Stdin:     os.Stdin,
		Out:       os.Stdout,
		LogPath:   *logPath,
		Workspace: *workspace,
	}
	if *verbose {
		opts.Debug = os.Stderr
	}
	if err := Run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "coding-agent:", err)
		os.Exit(1)
	}
}

// Options configures one session run.
type Options struct {
	Script    []byte
	Approve   string // "ask", "yes" or "no"
	Stdin     io.Reader
	Out       io.Writer
	LogPath   string
	Workspace string
	Debug     io.Writer
}
