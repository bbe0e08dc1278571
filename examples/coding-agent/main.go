// Command coding-agent is the example agent session: an agent loop that
// embeds the dsh host, driven by a scripted model (a replayable list of
// assistant turns with tool calls, testdata/session.json) in a temporary
// workspace. It shows native tool calling and Code Mode, an approval ask
// answered on the terminal (or automatically with -approve=yes), the
// timeout policy, a guard's denial and a post-execute block. Each call's
// cards are printed as terminal text, and the session log (tool calls,
// results, code-dispatch events, context messages) is written as JSONL.
//
// It runs offline with no keys:
//
//	go run ./examples/coding-agent
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"
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
