// Command dsh is the dsh gateway: it mounts the MCP servers of a dsh.json
// (the "mcpServers" shape of Claude Desktop, Cursor and Claude Code
// configs), guards their tools with the policy declared in the same file,
// and serves the guarded result to any MCP client, or lets a person try
// the tools from a terminal.
//
//	dsh mcp serve --config dsh.json                                   # serve over stdio
//	DSH_TOKEN=... dsh mcp serve --config dsh.json --http 127.0.0.1:8080 # streamable HTTP
//	dsh tools list --config dsh.json
//	dsh tools call --config dsh.json mcp__fs__read_file '{"path":"/tmp/x"}'
//
// See internal/dshconfig for the file format. A config with any problem is
// refused as a whole, with every problem named by file and key, and the
// command exits with status 2; nothing starts half-configured.
//
// `dsh mcp serve` keeps serving when a server cannot start: the server is
// reported (exit status, stderr tail) and retried, its tools absent until
// it comes up; "required": true on its entry refuses to start instead.
// `dsh tools` needs every server.
//
// # Serving HTTP
//
// --http is closed by default. A bare port (":8080") listens on loopback
// only; another address needs authentication. Every request must carry
// a bearer token: one of dsh.json's "http.tokens" (named by variable or
// file), a JWT of "http.jwt" (checked against the issuer's JWKS, issuer,
// audience, expiry, scopes), $DSH_TOKEN, or, on loopback with none of
// these, a token generated and printed at start; --no-auth is accepted on
// loopback only. The Host header (every connection: IP literals, loopback
// names, this machine's name and "http.allowedHosts") and the Origin
// header (loopback origins and "http.allowedOrigins") are checked first
// (403). A session belongs to the identity that opened it. Bodies,
// header and body read time, connections, sessions (in all and per
// identity), calls in flight (per session and in all) and idle sessions
// are bounded ("http.limits"); JSON-RPC batches are refused.
//
// An ask goes to the calling client as an elicitation (the client's own
// consent) unless --asks deny, the default on a non-loopback address,
// denies it, or dsh.json's "approval" routes it to the console.
//
// # The audit record and the console
//
// --audit (or "audit" in dsh.json) records every call in the audit store
// (plugins/audit: SQLite beside the config, or PostgreSQL). --console ADDR
// serves the console: the approval inbox of the asks routed there
// ("approval": {"approver": "console"} or per ask rule), a live timeline
// and a search over the record, behind its own tokens (console.tokens,
// $DSH_CONSOLE_TOKEN, or one printed at start on loopback), with Host,
// Origin and CSRF checks. `dsh console` serves it from the store alone;
// `dsh audit query|tail` read the record.
//
// # Adding a subcommand
//
// Subcommands are the entries of the commands table. A file of this
// package adds its own from an init function, so no other file changes:
//
//	func init() {
//		commands["hook"] = command{
//			summary: "run as a Claude Code or Codex hook",
//			run:     runHook,
//		}
//	}
//
// run gets the arguments after the subcommand's name, the standard
// streams, and a context cancelled on SIGINT/SIGTERM; it returns the exit
// status (0 ok, 1 failure, 2 usage or configuration error).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
)

// command is one subcommand of dsh.
type command struct {
	// summary is the one-line description shown by `dsh help`.
	summary string
	// run runs the subcommand with the arguments after its name and
	// returns the process exit status. It must return once ctx is done.
	run func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// Exit statuses.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// commands is the subcommand table; files of this package add entries from
// init (see the package documentation).
var commands = map[string]command{}

func main() {
	// A worker process of the isolated code runtime serves its run and exits here.
	serveCodeWorker()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args[0] to its command.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		usage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "dsh: unknown command %q\n\n", args[0])
		usage(stderr)
		return exitUsage
	}
	return c.run(ctx, args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: dsh <command> [arguments]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	slices.Sort(names)
	width := 0
	for _, n := range names {
		width = max(width, len(n))
	}
	for _, n := range names {
		fmt.Fprintf(w, "  %-*s  %s\n", width, n, commands[n].summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run dsh <command> -h for a command's flags.")
}

// subcommands dispatches a nested table (dsh mcp serve, dsh tools list).
func subcommands(prefix string, table map[string]command) func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		names := make([]string, 0, len(table))
		for n := range table {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
			w := stderr
			if len(args) > 0 {
				w = stdout
			}
			fmt.Fprintf(w, "usage: dsh %s <%s> [arguments]\n", prefix, strings.Join(names, "|"))
			for _, n := range names {
				fmt.Fprintf(w, "  %s  %s\n", n, table[n].summary)
			}
			if len(args) == 0 {
				return exitUsage
			}
			return exitOK
		}
		c, ok := table[args[0]]
		if !ok {
			fmt.Fprintf(stderr, "dsh %s: unknown command %q (want %s)\n", prefix, args[0], strings.Join(names, ", "))
			return exitUsage
		}
		return c.run(ctx, args[1:], stdin, stdout, stderr)
	}
}
