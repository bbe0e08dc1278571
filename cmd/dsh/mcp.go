package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/safeerr"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
)

// version is announced to MCP clients.
const version = "0.1.0"

func init() {
	commands["mcp"] = command{
		summary: "serve the guarded tools of a dsh.json to MCP clients (dsh mcp serve)",
		run: subcommands("mcp", map[string]command{
			"serve": {summary: "mount the config's servers and serve them, guarded, over stdio or HTTP", run: runServe},
		}),
	}
}

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("dsh mcp serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	configPath := fs.String("config", "", "the dsh.json to serve (default $DSH_CONFIG, else ./dsh.json)")
	addr := fs.String("http", "", "serve streamable HTTP on this address instead of stdio: 127.0.0.1:8080 (loopback; a bare :8080 means the same), or 0.0.0.0:8080 (every interface; needs authentication)")
	noAuth := fs.Bool("no-auth", false, "serve HTTP without authentication (refused unless the address is loopback)")
	asks := fs.String("asks", "", "where asks go: \"client\" (an elicitation to the calling client, which answers for itself) or \"deny\" (asks are denied); default client, but deny on a non-loopback address")
	verbose := fs.Bool("v", false, "log at debug level (to stderr)")
	watch := fs.Bool("watch", false, "reload the config file when it changes: new rules and servers apply at once, sessions stay; an invalid file is refused and the running config stays")
	askTimeout := fs.Duration("ask-timeout", 0, "deny an ask the client has not answered by then (0: wait as long as the call)")
	auditFlag := fs.Bool("audit", false, "record every call in the audit store (dsh.json \"audit\"; default: SQLite, dsh-audit.db beside the config)")
	consoleAddr := fs.String("console", "", "serve the console (approval inbox, timeline, search) on this address, e.g. 127.0.0.1:8081; implies --audit")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *askTimeout < 0 {
		fmt.Fprintln(stderr, "dsh mcp serve: --ask-timeout must not be negative")
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "dsh mcp serve: unexpected arguments %q\n", fs.Args())
		return exitUsage
	}
	if *asks != "" && *asks != "client" && *asks != "deny" {
		fmt.Fprintf(stderr, "dsh mcp serve: --asks must be \"client\" or \"deny\", not %q\n", *asks)
		return exitUsage
	}
	if *noAuth && *addr == "" {
		fmt.Fprintln(stderr, "dsh mcp serve: --no-auth applies to --http only")
		return exitUsage
	}
	cfgPath := gatewayConfigPath(*configPath)
	cfg, ok := loadConfig(cfgPath, stderr)
	if !ok {
		return exitUsage
	}
	if len(cfg.Servers) == 0 {
		fmt.Fprintf(stderr, "dsh: %s: mcpServers: no server to serve\n", cfg.File)
		return exitUsage
	}
	log := newLogger(stderr, *verbose)
	tel, err := startTelemetry(ctx, os.Getenv, log)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitUsage
	}
	defer tel.shutdown() // last: after the sessions and servers are closed
	cl, err := openCallLog(cfg, stderr, log)
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	defer cl.Close()
	var (
		listen   string
		loopback = true
		a        *authSetup
	)
	if *addr != "" {
		var note string
		var err error
		listen, loopback, note, err = listenAddr(*addr)
		if err != nil {
			fmt.Fprintln(stderr, "dsh mcp serve:", err)
			return exitUsage
		}
		if note != "" {
			fmt.Fprintln(stderr, "dsh:", note)
		}
		a, err = setupAuth(ctx, cfg.HTTP, cfg.File, loopback, *noAuth, os.Getenv, log)
		if err != nil {
			printErrors(stderr, fmt.Errorf("dsh mcp serve --http %s: %w", *addr, err))
			return exitUsage
		}
		defer a.stop()
	} else if cfg.HTTP.Key != "" {
		fmt.Fprintf(stderr, "dsh: warning: %s: http: applies to --http only (serving stdio)\n", cfg.File)
	}
	g, err := openGatewayWith(cfg, log, true)
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	defer g.Close()
	au, err := recordingFor(ctx, g, cfg, wantsAudit(cfg, *auditFlag, *consoleAddr != ""), cl, tel, log)
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	if au != nil {
		defer au.Close()
	}
	if err := tel.instrument(g, au); err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	lim := withDefaults(cfg.HTTP.Limits)
	scfg := mcpserver.Config{
		Implementation:     mcp.Implementation{Name: "dsh", Version: version},
		ElicitationTimeout: *askTimeout,
		Hidden:             func(tool string) bool { return g.pol.Load().DeniesTool(tool) },
		Upstream:           g.up,
		Access: func(name string, args json.RawMessage) mcpserver.AccessDecision {
			return resourceAccess(g.pol.Load(), name, args)
		},
		NoClientApproval: *asks == "deny" || (*asks == "" && !loopback),
	}
	scfg.SessionRules = g.sessionRules
	scfg.OnSession = func(scope *host.Context, info mcpserver.SessionInfo) error {
		if err := g.onSession(scope, info); err != nil {
			return err
		}
		if au != nil {
			return au.mcpOnSession(scope, info)
		}
		return nil
	}
	if *addr != "" {
		scfg.MaxSessions, scfg.MaxSessionsPerIdentity = lim.MaxSessions, lim.MaxSessionsPerIdentity
		scfg.MaxCallsPerSession, scfg.MaxCalls = lim.MaxCallsPerSession, lim.MaxCalls
	}
	srv, err := mcpserver.New(g.root, g.reg, scfg)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	defer srv.Close()
	if g.fwd != nil {
		g.fwd.srv.Store(srv)
	}
	if au != nil {
		if err := routeApprovals(g, cfg, au); err != nil {
			printErrors(stderr, err)
			return exitFailure
		}
	}
	if *consoleAddr != "" {
		stopConsole, err := serveConsole(*consoleAddr, au.store, au.live, au.instance, cfg, a, stderr)
		if err != nil {
			printErrors(stderr, fmt.Errorf("dsh mcp serve --console %s: %w", *consoleAddr, err))
			return exitUsage
		}
		defer stopConsole()
	}
	if *watch {
		wctx, stop := context.WithCancel(ctx)
		done, err := watchConfig(wctx, g, cfgPath, stderr, srv.Refresh)
		if err != nil {
			stop()
			fmt.Fprintln(stderr, "dsh: --watch:", err)
			return exitFailure
		}
		defer func() { stop(); <-done }()
	}
	if *addr == "" {
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		if err := srv.Run(ctx, t); err != nil && !safeerr.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "dsh:", err)
			return exitFailure
		}
		return exitOK
	}
	mh, err := srv.Handler(&mcp.StreamableHTTPOptions{
		MaxRequestBodyBytes: lim.MaxBodyBytes,
		SessionTimeout:      lim.SessionIdleTimeout,
		// httpFace checks the Host of every connection (the go-sdk's check
		// covers loopback connections only, and refuses the names of
		// http.allowedHosts there, which a reverse proxy on the same
		// machine sends).
		DisableLocalhostProtection: true,
	})
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "dsh: serving MCP on http://%s/ (accepting %s)\n", ln.Addr(), a.summary)
	if a.generated != "" {
		fmt.Fprintf(stderr, "dsh: no token configured: this run accepts\n  Authorization: Bearer %s\n"+
			"dsh: (set $%s, or http.tokens in %s, to choose the token)\n", a.generated, tokenEnv, cfg.File)
	}
	hs := &http.Server{
		Handler:           httpFace(mh, a, cfg.HTTP, lim),
		ReadHeaderTimeout: lim.HeaderTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          stdlog.New(io.Discard, "", 0),
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(newLimitListener(ln, lim.MaxConnections)) }()
	select {
	case err := <-done:
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	case <-ctx.Done():
	}
	srv.Close() // end the sessions (their streams) so Shutdown can finish
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	<-done
	return exitOK
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// resourceAccess decides a read of a mounted server's resource or a get
// of its prompt by the permission rules that name it (deny, then ask,
// then allow, with argument conditions). The default mode does not apply:
// a read or get no rule names is allowed, as before rules applied to them.
func resourceAccess(p *permissions.Policy, name string, args json.RawMessage) mcpserver.AccessDecision {
	d := p.Decide(name, args)
	if d.Rule == "" {
		// No rule names it: a default of deny still refuses (a closed
		// gateway stays closed); ask and allow serve it, so that a
		// client without elicitation can still read what no rule names.
		if d.Verdict == permissions.Deny {
			return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: d.Reason()}
		}
		return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow}
	}
	switch d.Verdict {
	case permissions.Allow:
		return mcpserver.AccessDecision{Verdict: mcpserver.AccessAllow, Reason: d.Reason()}
	case permissions.Ask:
		return mcpserver.AccessDecision{Verdict: mcpserver.AccessAsk, Reason: d.Reason()}
	}
	return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: d.Reason()}
}
