package acp

import (
	"errors"
	"time"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Name is the plugin's name.
const Name = "acp"

// Config configures the bridge. The zero Config reports calls and does not
// answer asks.
type Config struct {
	// Approval, when true, makes the plugin provide its bridge as
	// tools.ApprovalService, so the registry's asks are answered through
	// request_permission (replacing, while the plugin is loaded, any other
	// approval service).
	Approval bool
	// Fallback answers the asks of agent scopes attached to no session
	// (nil: they are unavailable).
	Fallback tools.Approver
	// MaxQueued bounds the updates waiting to be written, per session
	// (default DefaultMaxQueued); when the queue is full, the next update
	// waits for room (see Session).
	MaxQueued int
	// StallTimeout is how long a full queue may see no write complete
	// before the session breaks, taking the peer for stuck (default
	// DefaultStallTimeout).
	StallTimeout time.Duration
	// MaxRawBytes bounds rawInput and rawOutput (default
	// DefaultMaxRawBytes); a larger value is left out of the update.
	MaxRawBytes int
}

// Service is the bridge's service ("acp").
var Service = host.NewService[*Bridge]("acp")

// Plugin installs a [Bridge] on the host: its listeners on
// tools/pre-execute (first), tools/execute (outermost) and tools/result,
// provided as [Service], and as tools.ApprovalService when Config.Approval
// is set. Its configuration is a Config (or *Config, or nil). Disposing
// the fiber removes the listeners and closes every session.
var Plugin host.Plugin = plugin{}

type plugin struct{}

func (plugin) Name() string { return Name }

func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return err
	}
	b, err := Install(c, cfg)
	if err != nil {
		return err
	}
	if _, err := Service.Provide(c, b); err != nil {
		return err
	}
	if cfg.Approval {
		if _, err := tools.ApprovalService.Provide(c, b); err != nil {
			return err
		}
	}
	return nil
}

// Install makes a bridge that registers its listeners through c (global
// listeners: they act only for calls of attached scopes) while at least
// one session is attached, so that calls cost nothing more while none is. Everything is
// undone, and every session closed, when c's fiber is disposed. It
// provides no service; [Plugin] does.
func Install(c *host.Context, cfg Config) (*Bridge, error) {
	if c == nil {
		return nil, errors.New("acp: Install: nil context")
	}
	if cfg.MaxQueued <= 0 {
		cfg.MaxQueued = DefaultMaxQueued
	}
	if cfg.MaxRawBytes <= 0 {
		cfg.MaxRawBytes = DefaultMaxRawBytes
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = DefaultStallTimeout
	}
	var log zerolog.Logger
	if l := c.Logger(); l != nil {
		log = *l
	}
	b := &Bridge{cfg: cfg, log: log, life: c.Lifetime(), sessions: map[host.ScopeKey]*Session{}, c: c}
	if _, err := c.Track(host.EffectCustom, "acp: close sessions", b.Close); err != nil {
		return nil, err
	}
	return b, nil
}
