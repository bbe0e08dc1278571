package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
)

//go:embed testdata/session.json
var defaultScript []byte

func main() {
	// A worker process of the isolated code runtime serves its run and exits here.
	isolated.ServeIfWorker()
	var (
		scriptPath = flag.String("script", "", "scripted model to play (default: the embedded testdata/session.json)")
		approve    = flag.String("approve", "auto", "how to answer approval asks: auto or ask (read each answer from stdin, a terminal, a pipe or a file: y allows, n rejects, end of input denies), yes, or no")
		logPath    = flag.String("log", "", "session log (JSONL) path (default: a new file in the system's temporary directory, outside the workspace and kept after the session; its path is printed)")
		workspace  = flag.String("workspace", "", "workspace directory (default: a new temporary directory, removed afterwards)")
		verbose    = flag.Bool("v", false, "log the host's debug output to stderr")
	)
	flag.Parse()
	// A process that runs model-written programs bounds every regular
	// expression match (goja's regexp2 has no per-run limit): an explicit,
	// process-wide opt-in.
	goja.LimitRegexpMatchTime()
	script := defaultScript
	if *scriptPath != "" {
		b, err := os.ReadFile(*scriptPath)
		if err != nil {
			fmt.Fprintln(os.Stderr, "coding-agent:", err)
			os.Exit(2)
		}
		script = b
	}
	opts := Options{
		Script:    script,
		Approve:   *approve,
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
	Script []byte
	// Approve is how approval asks are answered: "ask" or "auto" (the
	// same: each answer is a line read from Stdin, whatever Stdin is, so
	// a piped "n" rejects and the end of input denies), "yes" or "no".
	Approve string
	Stdin   io.Reader
	Out     io.Writer
	// LogPath is where the session log is written; empty means a new
	// file in the system's temporary directory (never in the workspace:
	// the session's tools cannot touch it, and it outlives a temporary
	// workspace).
	LogPath   string
	Workspace string
	Debug     io.Writer
}
