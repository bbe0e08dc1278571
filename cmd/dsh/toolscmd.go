package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/approval"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

// cliAgent is the agent scope of `dsh tools call`.
const cliAgent host.ScopeKey = "dsh-cli"

func init() {
	commands["tools"] = command{
		summary: "list or call the guarded tools of a dsh.json from a terminal",
		run: subcommands("tools", map[string]command{
			"list": {summary: "list the tools the config serves (under mode code: run_code, then the tools its programs call)", run: runToolsList},
			"call": {summary: "call one tool through the config's policy: dsh tools call NAME ['{json args}']", run: runToolsCall},
		}),
	}
}

// toolsFlags parses the flags shared by list and call.
func toolsFlags(name string, args []string, stderr io.Writer) (fs *flag.FlagSet, configPath *string, verbose *bool, ok bool) {
	fs = flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath = fs.String("config", "", "the dsh.json (default $DSH_CONFIG, else ./dsh.json)")
	verbose = fs.Bool("v", false, "log at debug level (to stderr)")
	return fs, configPath, verbose, true
}

// profileFlag is --profile of list and call.
func profileFlag(fs *flag.FlagSet) *string {
	return fs.String("profile", "", "as an identity of this profile of dsh.json \"profiles\" would: its rules and tools mode (default: the top-level ones)")
}

func runToolsList(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, configPath, verbose, _ := toolsFlags("dsh tools list", args, stderr)
	asJSON := fs.Bool("json", false, "print the wire schemas of every tool as JSON (under mode code: run_code's and those of the tools its programs call)")
	profile := profileFlag(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dsh tools list: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	cfg, ok := loadConfig(gatewayConfigPath(*configPath), stderr)
	if !ok {
		return exitUsage
	}
	g, err := openGateway(cfg, newLogger(stderr, *verbose))
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	defer g.Close()
	if err := g.asProfile(*profile); err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitUsage
	}
	if *asJSON {
		b, err := json.MarshalIndent(g.reg.Schemas(cliAgent), "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "dsh:", err)
			return exitFailure
		}
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	listTools(stdout, g.reg, cliAgent, g.hiddenFor(cliAgent))
	return exitOK
}

// listTools prints the tools of scope, one "name<TAB>first line of the
// description" line each. Under mode code an MCP client is served run_code
// only, and its programs call the other tools: the two groups are listed
// under a heading each, so that neither looks like the other (--json
// lists the schemas of both).
func listTools(w io.Writer, reg *tools.Registry, scope host.ScopeKey, hidden func(string) bool) {
	line := func(t *tools.Tool) {
		if t != reg.Transport() && hidden != nil && hidden(t.Name()) {
			return // denied without condition: not offered (as in tools/list)
		}
		desc, _, _ := strings.Cut(t.Description(), "\n")
		fmt.Fprintf(w, "%s\t%s\n", cardtext.Line(t.Name()), cardtext.Line(desc))
	}
	if reg.ModeOf(scope) != tools.Code {
		for _, t := range reg.Visible(scope) {
			line(t)
		}
		return
	}
	fmt.Fprintln(w, `# served to MCP clients ("mode": "code"):`)
	for _, t := range reg.Visible(scope) {
		if t == reg.Transport() {
			line(t)
		}
	}
	fmt.Fprintln(w, "# called from run_code programs as tools.NAME(args), not served directly:")
	for _, t := range reg.EndCapabilities(scope) {
		line(t)
	}
}

func runToolsCall(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs, configPath, verbose, _ := toolsFlags("dsh tools call", args, stderr)
	profile := profileFlag(fs)
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() < 1 || fs.NArg() > 2 {
		fmt.Fprintln(stderr, "usage: dsh tools call [--config dsh.json] NAME ['{json arguments}']")
		return exitUsage
	}
	name := fs.Arg(0)
	var raw json.RawMessage
	if fs.NArg() == 2 {
		raw = json.RawMessage(fs.Arg(1))
		if !json.Valid(raw) {
			fmt.Fprintln(stderr, "dsh tools call: the arguments are not valid JSON")
			return exitUsage
		}
	}
	cfg, ok := loadConfig(gatewayConfigPath(*configPath), stderr)
	if !ok {
		return exitUsage
	}
	log := newLogger(stderr, *verbose)
	tel, err := startTelemetry(ctx, os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitUsage
	}
	defer tel.shutdown()
	g, err := openGateway(cfg, log)
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	defer g.Close()
	if err := tel.instrument(g, nil); err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	// An ask is answered at the terminal: the question on stderr, the
	// answer on stdin.
	if _, err := g.root.Plugin(approval.Plugin, approval.Config{Answerer: approval.NewTerminal(stdin, stderr)}); err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	if err := g.asProfile(*profile); err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitUsage
	}
	res := g.reg.Execute(ctx, tools.Call{ID: "cli-1", Name: name, Arguments: raw, Agent: cliAgent})
	for _, c := range res.Content {
		switch c.Type {
		case tools.ContentText:
			fmt.Fprint(stdout, c.Text)
			if !strings.HasSuffix(c.Text, "\n") {
				fmt.Fprintln(stdout)
			}
		default:
			b, _ := json.Marshal(c)
			fmt.Fprintln(stdout, string(b))
		}
	}
	if res.IsError {
		fmt.Fprintf(stderr, "dsh: %s failed: %s (%s)\n", cardtext.Line(name), res.Error.Code, res.Error.Name)
		return exitFailure
	}
	return exitOK
}
