package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/textcut"
	"github.com/dsh-go/dsh/plugins/permissions"
)

// Config configures one mounted MCP server: one [Plugin] instance per
// server. It is plain data in the "mcpServers" shape users already write
// (command/args/env/cwd for a stdio server, url/headers for a streamable
// HTTP one), plus the client's own settings; every field has a JSON name
// and the zero value of every optional field is a sensible default.
//
// Exactly one transport must be given: Command (stdio), URL (streamable
// HTTP) or, from Go only, Dial.
type Config struct {
	// Name names the server. It is the middle part of every tool name
	// (mcp__<name>__<tool>) and appears in logs and status events. It
	// must be a name permissions.CheckServerName accepts: 1 to
	// [MaxServerNameLen] characters of [A-Za-z0-9_-], without "__" and
	// not ending in "_", so that no server's tool names can pass for
	// another's and a permission rule on one server covers only its tools.
	Name string `json:"name"`

	// Command is the program to run as a stdio server (looked up in PATH
	// when it has no slash). The child runs in its own process group and
	// is killed, with everything it started, when the session ends.
	Command string `json:"command,omitempty"`
	// Args are the command's arguments.
	Args []string `json:"args,omitempty"`
	// Env adds to (or overrides in) the environment the child inherits
	// from this process.
	Env map[string]string `json:"env,omitempty"`
	// Cwd is the child's working directory; empty means this process's.
	Cwd string `json:"cwd,omitempty"`

	// URL is the endpoint of a streamable HTTP server (http or https).
	URL string `json:"url,omitempty"`
	// Headers are added to every HTTP request (authorization, ...).
	Headers map[string]string `json:"headers,omitempty"`
	// SSE says URL is a legacy HTTP+SSE endpoint (protocol 2024-11-05:
	// a GET event stream and a POST endpoint it announces) rather than a
	// streamable HTTP one.
	SSE bool `json:"sse,omitempty"`

	// Dial, from Go only, connects a fresh transport for each session
	// (the first one and every reconnection), for servers in the same
	// process (mcp.NewInMemoryTransports) or custom transports.
	Dial func(ctx context.Context) (mcp.Transport, error) `json:"-"`

	// Trusted says the server's tool annotations (readOnlyHint,
	// destructiveHint, idempotentHint, openWorldHint) may be acted on:
	// a trusted read-only tool runs in parallel in a batch, and policy
	// plugins may read the hints (tools.Annotations.Trusted). Annotations
	// of an untrusted server are only shown, never acted on.
	Trusted bool `json:"trusted,omitempty"`

	// CallTimeout bounds each tool call; when it expires the MCP request
	// is cancelled and the call fails with TOOL_TIMEOUT. Zero means no
	// bound other than the call's own context.
	CallTimeout Duration `json:"callTimeout,omitempty"`
	// ConnectTimeout bounds each connection attempt (start, handshake and
	// the first tools/list). Zero means DefaultConnectTimeout.
	ConnectTimeout Duration `json:"connectTimeout,omitempty"`

	// FailOnStartError makes a failed first connection fail the plugin:
	// Context.Plugin returns the error and nothing stays registered. By
	// default the plugin loads without tools and keeps retrying as for a
	// lost connection (see Reconnect).
	FailOnStartError bool `json:"failOnStartError,omitempty"`

	// Reconnect bounds the retries after a failed start or a lost
	// session.
	Reconnect Reconnect `json:"reconnect,omitzero"`

	// MaxMessageBytes bounds one inbound JSON-RPC message: a line of a
	// stdio server (a longer one ends the session), or a JSON response
	// body or one SSE event of an HTTP server (a longer one fails its
	// request). Zero means DefaultMaxMessageBytes.
	MaxMessageBytes int `json:"maxMessageBytes,omitempty"`

	// Elicitor, from Go only, answers the server's elicitation requests.
	// Nil routes them to the approval service (tools.ApprovalService) of
	// the host, and declines them when none is provided. An elicitation
	// is never accepted without an answerer saying so.
	Elicitor Elicitor `json:"-"`
	// Upstreams, from Go only, when set lists this server's session while
	// the plugin runs (for proxying resources, prompts, completions and
	// resource subscriptions) and reports its notifications about them
	// to the Upstreams' watchers.
	Upstreams *Upstreams `json:"-"`
	// Sampler, from Go only, answers the server's sampling requests; nil
	// declares no sampling capability and refuses them.
	Sampler Sampler `json:"-"`
}

// Reconnect is the retry schedule: attempt n (from 1) waits
// min(InitialDelay·2^(n-1), MaxDelay) before connecting.
type Reconnect struct {
	// MaxAttempts is the number of connection attempts after a loss (or
	// after a failed start) before the plugin gives up: its tools are
	// removed and its status is "failed". Zero means
	// DefaultMaxAttempts; negative disables reconnection.
	MaxAttempts int `json:"maxAttempts,omitempty"`
	// InitialDelay is the wait before the first retry; zero means
	// DefaultInitialDelay.
	InitialDelay Duration `json:"initialDelay,omitempty"`
	// MaxDelay caps the wait between retries; zero means
	// DefaultMaxDelay.
	MaxDelay Duration `json:"maxDelay,omitempty"`
}

// Defaults of the zero Config fields.
const (
	DefaultConnectTimeout  = 30 * time.Second
	DefaultMaxAttempts     = 5
	DefaultInitialDelay    = 500 * time.Millisecond
	DefaultMaxDelay        = 30 * time.Second
	DefaultMaxMessageBytes = 16 << 20
	// MaxServerNameLen is the longest accepted Config.Name, in bytes:
	// "mcp__<name>__" and one character of a tool's name fit in
	// [MaxToolNameLen].
	MaxServerNameLen = permissions.MaxServerNameLen
)

// Validate reports every problem of c, joined, each naming its field.
func (c Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch {
	case c.Name == "":
		add("name: empty (the server name is part of every tool name)")
	case len(c.Name) > MaxServerNameLen:
		add("name: %d bytes, longer than %d", len(c.Name), MaxServerNameLen)
	case !utf8.ValidString(c.Name):
		add("name: not valid UTF-8")
	case strings.ContainsFunc(c.Name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		add("name %q: contains a control character", c.Name)
	default:
		if err := permissions.CheckServerName(c.Name); err != nil {
			add("name %q: %w", c.Name, err)
		}
	}
	n := 0
	if c.Command != "" {
		n++
	}
	if c.URL != "" {
		n++
		if u, err := url.Parse(c.URL); err != nil {
			add("url %q: %v", c.URL, err)
		} else if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
			add("url %q: need an http or https URL with a host", c.URL)
		}
	}
	if c.Dial != nil {
		n++
	}
	switch {
	case n == 0:
		add("no transport: set command (stdio) or url (streamable HTTP)")
	case n > 1:
		add("several transports: set exactly one of command, url (and, from Go, Dial)")
	}
	if c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Cwd != "") {
		add("args, env and cwd need a command")
	}
	if c.URL == "" && len(c.Headers) > 0 {
		add("headers need a url")
	}
	if c.URL == "" && c.SSE {
		add("sse needs a url")
	}
	for k := range c.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			add("env: invalid variable name %q", k)
		}
	}
	for k, v := range c.Headers {
		if k == "" || strings.ContainsAny(k, " :\r\n\x00") || strings.ContainsAny(v, "\r\n\x00") {
			add("headers: invalid header %q", k)
		}
	}
	for _, d := range []struct {
		field string
		v     Duration
	}{
		{"callTimeout", c.CallTimeout}, {"connectTimeout", c.ConnectTimeout},
		{"reconnect.initialDelay", c.Reconnect.InitialDelay}, {"reconnect.maxDelay", c.Reconnect.MaxDelay},
	} {
		if d.v < 0 {
			add("%s: negative duration %v", d.field, time.Duration(d.v))
		}
	}
	if c.MaxMessageBytes < 0 {
		add("maxMessageBytes: negative (%d)", c.MaxMessageBytes)
	}
	if len(errs) > 0 {
		name := c.Name
		return fmt.Errorf("mcpclient: config of server %q: %w", name, errors.Join(errs...))
	}
	return nil
}

// withDefaults returns c with its zero fields replaced by the defaults.
func (c Config) withDefaults() Config {
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = Duration(DefaultConnectTimeout)
	}
	if c.Reconnect.MaxAttempts == 0 {
		c.Reconnect.MaxAttempts = DefaultMaxAttempts
	}
	if c.Reconnect.InitialDelay == 0 {
		c.Reconnect.InitialDelay = Duration(DefaultInitialDelay)
	}
	if c.Reconnect.MaxDelay == 0 {
		c.Reconnect.MaxDelay = Duration(DefaultMaxDelay)
	}
	if c.Reconnect.MaxDelay < c.Reconnect.InitialDelay {
		c.Reconnect.MaxDelay = c.Reconnect.InitialDelay
	}
	if c.MaxMessageBytes == 0 {
		c.MaxMessageBytes = DefaultMaxMessageBytes
	}
	return c
}

// backoff returns the wait before retry attempt n (n ≥ 1).
func (r Reconnect) backoff(n int) time.Duration {
	d := time.Duration(r.InitialDelay)
	for i := 1; i < n && d < time.Duration(r.MaxDelay); i++ {
		d *= 2
	}
	return min(d, time.Duration(r.MaxDelay))
}

// Duration is a time.Duration that reads and writes JSON as a Go duration
// string ("30s", "1m30s", "250ms") and also reads a number as
// milliseconds (30000), the unit other MCP clients' configs use.
type Duration time.Duration

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string or a number of milliseconds (null
// leaves d unchanged). A negative, non-numeric or overflowing value is an
// error.
func (d *Duration) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if string(b) == "null" {
		return nil // as encoding/json does for a missing value
	}
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("duration: %w", err)
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: %w (write it like \"30s\" or as milliseconds)", s, err)
		}
		if v < 0 {
			return fmt.Errorf("duration %q is negative", s)
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"30s\" or a number of milliseconds", textcut.Truncate(string(b), 40))
	}
	if ms < 0 || math.IsNaN(ms) || ms*float64(time.Millisecond) > math.MaxInt64 {
		return fmt.Errorf("duration %s ms is out of range", textcut.Truncate(string(b), 40))
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// d returns d as a time.Duration.
func (d Duration) d() time.Duration { return time.Duration(d) }

// String returns the duration string.
func (d Duration) String() string { return time.Duration(d).String() }
