package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/internal/safeerr"
	mcpclient "github.com/dsh-go/dsh/plugins/mcp-client"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	timeoutpolicy "github.com/dsh-go/dsh/plugins/timeout-policy"
	"github.com/dsh-go/dsh/plugins/tools"
)

// gateway is a host with the registry, the config's policy and its mounted
// servers.
type gateway struct {
	h    *host.Host
	root *host.Context
	reg  *tools.Registry
	cfg  *dshconfig.Config
	// fwd forwards the mounted servers' elicitations to the serving
	// session's client (serving only; see openGatewayWith).
	fwd *elicitForwarder
	// pol is the permission policy in force; reload replaces it whole.
	pol *permissions.Live
	// tolerant: servers other than required ones may fail (serving).
	tolerant bool
	// servers are the mounted servers by name: their entry and fiber
	// (reload disposes, restarts or adds them). Guarded by reloadMu.
	servers map[string]mounted
	// up lists the mounted servers' sessions for proxying resources and
	// prompts (serving only).
	up *mcpclient.Upstreams
	// prof is the per-identity permission profiles (profiles.go).
	prof *profileState
}

// mounted is one server of the gateway: its config entry and fiber.
type mounted struct {
	entry dshconfig.Server
	fiber *host.Fiber
}

// elicitForwarder sends a mounted server's elicitation to the MCP server
// serving the calling session, once there is one (it is made after the
// servers are mounted); until then, and for a call of no session, the
// request is declined.
type elicitForwarder struct {
	srv atomic.Pointer[mcpserver.Server]
}

func (f *elicitForwarder) Elicit(ctx context.Context, req mcpclient.ElicitationRequest) (*mcp.ElicitResult, error) {
	srv := f.srv.Load()
	if srv == nil {
		return &mcp.ElicitResult{Action: mcpclient.ActionDecline}, nil
	}
	return srv.ForwardElicitation(ctx, req.Agent, req.Server, req.Params)
}

// openGateway builds the host for cfg: the registry in the config's mode,
// the per-tool timeouts, the permission rules, then every server, each of
// which must start. On any failure everything started is stopped and the
// error names the config key at fault.
func openGateway(cfg *dshconfig.Config, log zerolog.Logger) (*gateway, error) {
	return openGatewayWith(cfg, log, false)
}

// foreverAttempts is a tolerated server's retry count when its entry sets
// none: in effect, for as long as the gateway runs.
const foreverAttempts = math.MaxInt32

// openGatewayWith is openGateway; with tolerant, only the servers marked
// "required" must start: another that cannot is reported (its error, with
// a stdio server's exit status and stderr tail, is logged at warn level),
// its tools are absent, and it is retried with backoff (forever unless its
// "reconnect.maxAttempts" says otherwise) until it comes up, when its
// tools appear and clients are told (list_changed). Serving (tolerant),
// the servers' elicitations go to the serving session's client through
// g.fwd, with their real message and schema.
func openGatewayWith(cfg *dshconfig.Config, log zerolog.Logger, tolerant bool) (g *gateway, err error) {
	var fwd *elicitForwarder
	if tolerant {
		fwd = &elicitForwarder{}
	}
	h := host.New(host.WithLogger(log))
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	root := h.Root()
	load := func(key string, p host.Plugin, c any) error {
		f, err := root.Plugin(p, c)
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			if key == "" {
				return err
			}
			return &dshconfig.Error{File: cfg.File, Key: key, Msg: err.Error()}
		}
		return nil
	}
	if err := load("", systemprompt.Plugin, nil); err != nil {
		return nil, err
	}
	if cfg.Mode == tools.Code || cfg.Mode == tools.Both {
		if codeRuntimePlugin == nil {
			return nil, &dshconfig.Error{File: cfg.File, Key: "mode", Msg: fmt.Sprintf("tools mode %q needs Code Mode, and this dsh was built without it (-tags dsh_nocodemode); use mode %q", cfg.Mode, tools.Native)}
		}
	}
	profs, err := compileProfiles(cfg)
	if err != nil {
		return nil, err
	}
	if needsCodeMode(cfg) {
		if err := load("mode", codeRuntimePlugin, nil); err != nil {
			return nil, err
		}
	}
	registry := tools.Plugin
	if needsCodeMode(cfg) {
		registry = codeModeRegistry
	}
	if err := load("mode", registry, tools.Config{Mode: cfg.Mode}); err != nil {
		return nil, err
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		return nil, err
	}
	if len(cfg.Timeouts) > 0 {
		if err := load("timeouts", timeoutpolicy.Plugin, timeoutConfig(cfg.Timeouts)); err != nil {
			return nil, err
		}
	}
	g = &gateway{h: h, root: root, reg: reg, cfg: cfg, fwd: fwd, tolerant: tolerant, servers: map[string]mounted{}, prof: newProfileState(profs)}
	if tolerant {
		g.up = &mcpclient.Upstreams{}
	}
	pol, err := permissions.Compile(cfg.Permissions)
	if err != nil {
		return nil, &dshconfig.Error{File: cfg.File, Key: "permissions", Msg: err.Error()}
	}
	g.pol = permissions.NewLive(pol)
	if err := load("permissions", permissions.Plugin, permissions.PerCall(g.callPolicy)); err != nil {
		return nil, err
	}
	for _, s := range cfg.Servers {
		f, err := root.Plugin(mcpclient.Plugin, g.clientConfig(s))
		if err == nil {
			err = f.Err()
		}
		if err != nil {
			return nil, &dshconfig.Error{File: cfg.File, Key: "mcpServers." + s.Name, Msg: err.Error()}
		}
		g.servers[s.Name] = mounted{entry: s, fiber: f}
	}
	return g, nil
}

// clientConfig is the mcp-client configuration of the server entry s.
func (g *gateway) clientConfig(s dshconfig.Server) mcpclient.Config {
	mc := mcpclient.Config{
		Name: s.Name, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd,
		URL: s.URL, Headers: s.Headers, SSE: s.SSE, Trusted: s.Trusted,
		CallTimeout:      mcpclient.Duration(s.Timeout),
		ConnectTimeout:   mcpclient.Duration(s.ConnectTimeout),
		FailOnStartError: !g.tolerant || s.Required,
		Reconnect: mcpclient.Reconnect{
			MaxAttempts:  s.Reconnect.MaxAttempts,
			InitialDelay: mcpclient.Duration(s.Reconnect.InitialDelay),
			MaxDelay:     mcpclient.Duration(s.Reconnect.MaxDelay),
		},
	}
	if g.tolerant && mc.Reconnect.MaxAttempts == 0 {
		mc.Reconnect.MaxAttempts = foreverAttempts
	}
	if g.fwd != nil {
		mc.Elicitor, mc.Sampler = g.fwd, g.fwd
	}
	mc.Upstreams = g.up
	return mc
}

func (g *gateway) Close() error { return g.h.Close() }

// timeoutConfig is the timeout policy's configuration for the
// "timeouts" entries: the first entry whose pattern names a tool bounds
// it (TOOL_TIMEOUT when the budget expires); a tool's own declared budget
// still wins.
func timeoutConfig(ts []dshconfig.Timeout) timeoutpolicy.Config {
	var cfg timeoutpolicy.Config
	for _, t := range ts {
		cfg.Tools = append(cfg.Tools, timeoutpolicy.ToolBudget{Tool: t.Tool, Budget: t.Budget})
	}
	return cfg
}

// gatewayConfigPath is the config file: flagPath, else $DSH_CONFIG, else
// ./dsh.json.
func gatewayConfigPath(flagPath string) string {
	if flagPath != "" {
		return flagPath
	}
	if p := os.Getenv("DSH_CONFIG"); p != "" {
		return p
	}
	return "dsh.json"
}

// loadConfig loads the config at path, printing every problem to stderr.
func loadConfig(path string, stderr io.Writer) (*dshconfig.Config, bool) {
	cfg, err := dshconfig.Load(path)
	if err != nil {
		printErrors(stderr, err)
		return nil, false
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, "dsh: warning:", w)
	}
	return cfg, true
}

// printErrors prints each joined error on its own line.
func printErrors(w io.Writer, err error) {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			printErrors(w, e)
		}
		return
	}
	var ce *dshconfig.Error
	if safeerr.AsAny(err, &ce) {
		fmt.Fprintln(w, "dsh:", ce.Error())
		return
	}
	fmt.Fprintln(w, "dsh:", err)
}

// newLogger logs to w at warn level, or debug when verbose.
func newLogger(w io.Writer, verbose bool) zerolog.Logger {
	lvl := zerolog.WarnLevel
	if verbose {
		lvl = zerolog.DebugLevel
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: w, NoColor: true}).Level(lvl).With().Timestamp().Logger()
}
