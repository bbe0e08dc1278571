package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/internal/safeerr"
	"github.com/dsh-go/dsh/plugins/audit"
)

func init() {
	commands["audit"] = command{
		summary: "read the audit record of a dsh.json's gateway (dsh audit query|tail)",
		run: subcommands("audit", map[string]command{
			"query": {summary: "print the recorded calls a search selects (newest first)", run: runAuditQuery},
			"tail":  {summary: "print calls as they finish, until interrupted", run: runAuditTail},
		}),
	}
	commands["console"] = command{
		summary: "serve the console (approval inbox, timeline, search) of a dsh.json's audit store",
		run:     runConsole,
	}
}

// auditFlags are the flags of dsh audit query|tail.
type auditFlags struct {
	fs                                    *flag.FlagSet
	config, tool, identity, session, code *string
	since, until                          *string
	unfinished, asJSON                    *bool
	limit                                 *int
}

func newAuditFlags(name string, stderr io.Writer) *auditFlags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return &auditFlags{fs: fs,
		config:     fs.String("config", "", "the dsh.json whose \"audit\" store to read (default $DSH_CONFIG, else ./dsh.json)"),
		tool:       fs.String("tool", "", "only this tool (a trailing * matches a prefix: mcp__fs__*)"),
		identity:   fs.String("identity", "", "only calls of this identity"),
		session:    fs.String("session", "", "only calls of this session"),
		code:       fs.String("code", "", "only results with this code (ok for successes)"),
		since:      fs.String("since", "", "only calls started at or after (RFC 3339, 2006-01-02T15:04, or a duration ago: 1h)"),
		until:      fs.String("until", "", "only calls started before"),
		unfinished: fs.Bool("unfinished", false, "only calls without a final result (running, or their gateway stopped mid-call)"),
		asJSON:     fs.Bool("json", false, "one JSON object per line"),
		limit:      fs.Int("limit", 100, "at most this many calls"),
	}
}

func (f *auditFlags) query() (audit.Query, error) {
	v := url.Values{}
	for k, p := range map[string]*string{"tool": f.tool, "identity": f.identity, "session": f.session, "code": f.code, "since": f.since, "until": f.until} {
		if *p != "" {
			v.Set(k, *p)
		}
	}
	if *f.unfinished {
		v.Set("unfinished", "1")
	}
	v.Set("limit", strconv.Itoa(*f.limit))
	return queryOf(v)
}

// openConfigStore opens the audit store of the config at flagPath.
func openConfigStore(ctx context.Context, flagPath string, stderr io.Writer) (audit.Store, *dshconfig.Config, bool) {
	cfg, ok := loadConfig(gatewayConfigPath(flagPath), stderr)
	if !ok {
		return nil, nil, false
	}
	ac := cfg.Audit
	if ac == nil {
		ac = dshconfig.DefaultAudit(cfg.File)
	}
	s, err := openStore(ctx, ac)
	if err != nil {
		printErrors(stderr, &dshconfig.Error{File: cfg.File, Key: "audit", Msg: safeerr.Text(err)})
		return nil, nil, false
	}
	return s, cfg, true
}

func printCall(w io.Writer, c audit.Call, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(c)
		fmt.Fprintln(w, string(b))
		return
	}
	code := c.Code
	switch {
	case c.Unfinished():
		code = "unfinished"
	case code == "":
		code = "ok"
	}
	dur := ""
	if !c.Unfinished() {
		dur = fmt.Sprintf("%.2fms", float64(c.Duration)/float64(time.Millisecond))
	}
	id := c.Identity
	if id == "" {
		id = "-"
	}
	fmt.Fprintf(w, "%s  %-28s %-12s %-24s %9s  %s\n", c.Started.UTC().Format("2006-01-02 15:04:05.000"), c.Tool, id, code, dur, decisionSummary(c.Decisions))
}

func runAuditQuery(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newAuditFlags("dsh audit query", stderr)
	if err := f.fs.Parse(args); err != nil {
		return exitUsage
	}
	q, err := f.query()
	if err != nil {
		fmt.Fprintln(stderr, "dsh audit query:", err)
		return exitUsage
	}
	s, _, ok := openConfigStore(ctx, *f.config, stderr)
	if !ok {
		return exitUsage
	}
	defer s.Close()
	calls, err := s.Calls(ctx, q)
	if err != nil {
		fmt.Fprintln(stderr, "dsh audit query:", safeerr.Text(err))
		return exitFailure
	}
	for _, c := range calls {
		printCall(stdout, c, *f.asJSON)
	}
	return exitOK
}

func runAuditTail(ctx context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	f := newAuditFlags("dsh audit tail", stderr)
	interval := f.fs.Duration("interval", time.Second, "how often to look besides the store's notifications")
	if err := f.fs.Parse(args); err != nil {
		return exitUsage
	}
	q, err := f.query()
	if err != nil || *interval <= 0 {
		if err == nil {
			err = fmt.Errorf("--interval must be positive")
		}
		fmt.Fprintln(stderr, "dsh audit tail:", err)
		return exitUsage
	}
	s, _, ok := openConfigStore(ctx, *f.config, stderr)
	if !ok {
		return exitUsage
	}
	defer s.Close()
	wake := make(chan struct{}, 1)
	unsub := s.Subscribe(func(n audit.Notice) {
		if n.Kind == "calls" || n.Kind == "resync" {
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	defer unsub()
	q.FinishedAfter, q.Limit = time.Now().Add(-time.Millisecond), 1000
	seen := map[string]bool{} // the records at the cursor's instant
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	fmt.Fprintln(stderr, "dsh audit tail: waiting for calls (Ctrl-C to stop)")
	for {
		calls, err := s.Calls(ctx, q)
		if err != nil {
			if ctx.Err() != nil {
				return exitOK
			}
			fmt.Fprintln(stderr, "dsh audit tail:", safeerr.Text(err))
			return exitFailure
		}
		for _, c := range calls {
			if seen[c.ID] {
				continue
			}
			printCall(stdout, c, *f.asJSON)
			if c.Finished.After(q.FinishedAfter) {
				q.FinishedAfter, seen = c.Finished, map[string]bool{}
			}
			seen[c.ID] = true
		}
		select {
		case <-ctx.Done():
			return exitOK
		case <-wake:
		case <-tick.C:
		}
	}
}

func runConsole(ctx context.Context, args []string, _ io.Reader, _, stderr io.Writer) int {
	fs := flag.NewFlagSet("dsh console", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the dsh.json whose audit store to serve (default $DSH_CONFIG, else ./dsh.json)")
	listen := fs.String("listen", "127.0.0.1:8081", "the address to serve on (a non-loopback one needs console.tokens or $"+consoleTokenEnv+")")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dsh console: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	s, cfg, ok := openConfigStore(ctx, *configPath, stderr)
	if !ok {
		return exitUsage
	}
	defer s.Close()
	live := newLiveHub()
	live.watch(s)
	defer live.close()
	if s.Kind() == "sqlite" {
		// The gateways writing the file are other processes, whose
		// changes SQLite does not announce: the pages look again.
		pctx, stopPoll := context.WithCancel(ctx)
		polled := make(chan struct{})
		go func() {
			defer close(polled)
			live.poll(pctx, 2*time.Second)
		}()
		defer func() { stopPoll(); <-polled }()
	}
	// The MCP face's tokens, to refuse a console token equal to one.
	var mcpAuth *authSetup
	if a, err := setupAuth(ctx, cfg.HTTP, cfg.File, true, false, os.Getenv, zerolog.Nop()); err == nil {
		defer a.stop()
		mcpAuth = a
	}
	stop, err := serveConsole(*listen, s, live, "", cfg, mcpAuth, stderr)
	if err != nil {
		printErrors(stderr, fmt.Errorf("dsh console --listen %s: %w", *listen, err))
		return exitUsage
	}
	<-ctx.Done()
	stop()
	return exitOK
}
