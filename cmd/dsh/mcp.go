package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/safeerr"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
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
	addr := fs.String("http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	verbose := fs.Bool("v", false, "log at debug level (to stderr)")
	askTimeout := fs.Duration("ask-timeout", 0, "deny an ask the client has not answered by then (0: wait as long as the call)")
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
	cfg, ok := loadConfig(gatewayConfigPath(*configPath), stderr)
	if !ok {
		return exitUsage
	}
	if len(cfg.Servers) == 0 {
		fmt.Fprintf(stderr, "dsh: %s: mcpServers: no server to serve\n", cfg.File)
		return exitUsage
	}
	g, err := openGateway(cfg, newLogger(stderr, *verbose))
	if err != nil {
		printErrors(stderr, err)
		return exitUsage
	}
	defer g.Close()
	srv, err := mcpserver.New(g.root, g.reg, mcpserver.Config{
		Implementation:     mcp.Implementation{Name: "dsh", Version: version},
		ElicitationTimeout: *askTimeout,
		Hidden:             deniedTools(cfg),
	})
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	defer srv.Close()
	if *addr == "" {
		t := &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{stdout}}
		if err := srv.Run(ctx, t); err != nil && !safeerr.Is(err, context.Canceled) {
			fmt.Fprintln(stderr, "dsh:", err)
			return exitFailure
		}
		return exitOK
	}
	h, err := srv.Handler(nil)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(stderr, "dsh:", err)
		return exitFailure
	}
	fmt.Fprintf(stderr, "dsh: serving MCP on http://%s\n", ln.Addr())
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
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
