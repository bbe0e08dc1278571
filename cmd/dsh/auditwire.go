package main

import (
	"context"
	"fmt"
	"sync"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	"github.com/dsh-go/dsh/plugins/audit"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// openStore opens the audit store a config names.
func openStore(ctx context.Context, a *dshconfig.Audit) (audit.Store, error) {
	if a.Store == "postgres" {
		return audit.OpenPostgres(ctx, a.DSN)
	}
	return audit.OpenSQLite(ctx, a.Path)
}

// auditing is the audit of one serving gateway: its store, the recorder
// of every call, the console approval inbox, the live feed of the
// console, and the sessions' identities.
type auditing struct {
	store    audit.Store
	rec      *audit.Recorder
	inbox    *audit.Inbox
	live     *liveHub
	instance string

	mu       sync.Mutex
	sessions map[host.ScopeKey]audit.SessionInfo
}

// wantsAudit reports whether serving cfg records calls: an "audit" key,
// --audit, --console, or an ask routed to the console (whose inbox lives
// in the store).
func wantsAudit(cfg *dshconfig.Config, flag, console bool) bool {
	if cfg.Audit != nil || flag || console || cfg.Approval.Approver == "console" {
		return true
	}
	for _, m := range []map[string]string{cfg.Approval.Rules, cfg.Approval.Identities} {
		for _, ch := range m {
			if ch == "console" {
				return true
			}
		}
	}
	return false
}

// startAuditing opens the store and installs the recorder on g; the
// recorder feeds cl too, when there is a call log (whose redact patterns
// then apply to the audit record as well).
func startAuditing(ctx context.Context, g *gateway, cfg *dshconfig.Config, log zerolog.Logger, cl *callLog) (*auditing, error) {
	ac := cfg.Audit
	if ac == nil {
		ac = dshconfig.DefaultAudit(cfg.File)
	}
	store, err := openStore(ctx, ac)
	if err != nil {
		return nil, &dshconfig.Error{File: cfg.File, Key: "audit", Msg: err.Error()}
	}
	au := &auditing{store: store, live: newLiveHub(), instance: audit.NewID(), sessions: map[host.ScopeKey]audit.SessionInfo{}}
	name := ac.Instance
	live, redactKeys := au.live.call, ac.Redact
	if cl != nil {
		live = func(e audit.Event) { au.live.call(e); cl.event(e) }
		redactKeys = append(append([]string(nil), ac.Redact...), cl.cfg.Redact...)
	}
	rec, err := audit.NewRecorder(audit.Config{
		Store: store, Instance: au.instance, Name: name,
		Writer:      audit.WriterConfig{Queue: ac.Queue, OnFull: audit.OnFull(ac.OnFull), BlockTimeout: ac.BlockTimeout},
		MaxArgBytes: ac.MaxArgBytes, MaxPreviewBytes: ac.MaxPreviewBytes, Redact: redactKeys,
		Session: au.session,
		Explain: explainer(g),
		Live:    live,
		Logger:  &log,
	})
	if err != nil {
		store.Close()
		return nil, &dshconfig.Error{File: cfg.File, Key: "audit", Msg: err.Error()}
	}
	au.rec = rec
	if err := rec.Install(g.root, g.reg); err != nil {
		au.Close()
		return nil, err
	}
	in, err := audit.NewInbox(ctx, audit.InboxConfig{
		Store: store, Instance: au.instance, Name: name, Timeout: cfg.Approval.Timeout,
		Redactor: rec.Redactor(), Session: au.session, Logger: &log,
		Rule: func(req tools.ApprovalRequest) string {
			if req.Execution == nil {
				return ""
			}
			pol, _ := g.policyOf(req.Agent)
			if pol == nil {
				return ""
			}
			d := pol.Decide(req.Tool, req.Execution.Args())
			if d.Verdict == permissions.Ask {
				return d.Rule
			}
			return ""
		},
	})
	if err != nil {
		au.Close()
		return nil, &dshconfig.Error{File: cfg.File, Key: "audit", Msg: err.Error()}
	}
	au.inbox = in
	au.live.watch(store)
	return au, nil
}

// explainer names the permission rule behind a call's decision, for the
// recorder.
func explainer(g *gateway) func(e *tools.Execution) audit.Explanation {
	return func(e *tools.Execution) audit.Explanation {
		pol, profile := g.policyOf(e.Agent())
		if pol == nil {
			return audit.Explanation{Verdict: string(permissions.Deny)}
		}
		d := pol.Decide(e.Name(), e.Args())
		x := audit.Explanation{Verdict: string(d.Verdict), Rule: d.Rule}
		if g.prof != nil && len(g.prof.set.Load().profiles) > 0 {
			x.Profile = profile // recorded once profiles are configured
		}
		return x
	}
}

// session is the recorder's view of a session.
func (au *auditing) session(agent host.ScopeKey) audit.SessionInfo {
	au.mu.Lock()
	defer au.mu.Unlock()
	if si, ok := au.sessions[agent]; ok {
		return si
	}
	return audit.SessionInfo{Session: string(agent), Agent: string(agent)}
}

// onSession records a new MCP session's identity, until its scope ends.
func (au *auditing) onSession(scope *host.Context, identity string, key host.ScopeKey) error {
	au.mu.Lock()
	au.sessions[key] = audit.SessionInfo{Identity: identity, Session: au.instance[:8] + "/" + string(key), Agent: string(key)}
	au.mu.Unlock()
	_, err := scope.Track(host.EffectCustom, "audit: session", func() error {
		au.mu.Lock()
		delete(au.sessions, key)
		au.mu.Unlock()
		if au.inbox != nil {
			au.inbox.ForgetSession(key)
		}
		return nil
	})
	return err
}

// Close withdraws the waiting console asks, writes the queued records and
// closes the store.
func (au *auditing) Close() error {
	if au.inbox != nil {
		au.inbox.Close()
	}
	if au.rec != nil {
		au.rec.Close()
	}
	if au.store == nil { // startRecording's: no store, no console
		return nil
	}
	au.live.close()
	return au.store.Close()
}

// approvalRouter routes each ask to the console inbox or to the calling
// client, as "approval" in dsh.json says. When unsure it picks the
// console: a console-routed rule that matches the call sends it there
// even when another rule asked first.
type approvalRouter struct {
	client  tools.Approver
	console *audit.Inbox
	all     bool                                          // "approver": "console"
	rules   *permissions.Policy                           // the console-routed ask rules alone; nil: none
	deflt   bool                                          // asks of defaultMode go to the console
	pol     func(agent host.ScopeKey) *permissions.Policy // nil: none applies
	// identities routed to the console, and the session's identity.
	identities map[string]bool
	identity   func(agent host.ScopeKey) string
}

func newApprovalRouter(cfg *dshconfig.Config, client tools.Approver, console *audit.Inbox, pol func(agent host.ScopeKey) *permissions.Policy) (*approvalRouter, error) {
	r := &approvalRouter{client: client, console: console, all: cfg.Approval.Approver == "console", pol: pol, identities: map[string]bool{}}
	for id, ch := range cfg.Approval.Identities {
		if ch == "console" {
			r.identities[id] = true
		}
	}
	var ask []string
	for rule, ch := range cfg.Approval.Rules {
		if ch != "console" {
			continue
		}
		if rule == "defaultMode" {
			r.deflt = true
			continue
		}
		ask = append(ask, rule)
	}
	if len(ask) > 0 {
		pc := cfg.Permissions
		pc.Allow, pc.Deny, pc.PostBlock, pc.Ask, pc.DefaultMode = nil, nil, nil, ask, permissions.Allow
		p, err := permissions.Compile(pc)
		if err != nil {
			return nil, &dshconfig.Error{File: cfg.File, Key: "approval.rules", Msg: err.Error()}
		}
		r.rules = p
	}
	return r, nil
}

// toConsole reports whether req goes to the console.
func (r *approvalRouter) toConsole(req tools.ApprovalRequest) bool {
	if r.all {
		return true
	}
	if len(r.identities) > 0 && r.identity != nil && r.identities[r.identity(req.Agent)] {
		return true
	}
	var args []byte
	if req.Execution != nil {
		args = req.Execution.Args()
	}
	if r.rules != nil && r.rules.Decide(req.Tool, args).Verdict == permissions.Ask {
		return true
	}
	if r.deflt {
		p := r.pol(req.Agent)
		if p == nil {
			return true // no policy applies: the call is denied; unsure, so the console
		}
		d := p.Decide(req.Tool, args)
		if d.Verdict != permissions.Ask || d.Rule == "" {
			return true // asked by defaultMode, or by something other than a rule
		}
	}
	return false
}

// Approve implements tools.Approver.
func (r *approvalRouter) Approve(ctx context.Context, req tools.ApprovalRequest) (tools.ApprovalOutcome, error) {
	if r.toConsole(req) {
		if r.console == nil {
			return tools.Unavailable, nil
		}
		return r.console.Approve(ctx, req)
	}
	audit.SetApprover(ctx, "client", "client")
	if r.client == nil {
		return tools.Unavailable, nil
	}
	return r.client.Approve(ctx, req)
}

// routeApprovals provides the router as the approval service of g,
// replacing the MCP server's (which it calls for the client's asks).
func routeApprovals(g *gateway, cfg *dshconfig.Config, au *auditing) error {
	client, _ := tools.ApprovalService.Lookup(g.root)
	r, err := newApprovalRouter(cfg, client, au.inbox, func(agent host.ScopeKey) *permissions.Policy {
		p, _ := g.policyOf(agent)
		return p
	})
	if err != nil {
		return err
	}
	r.identity = func(agent host.ScopeKey) string { return au.session(agent).Identity }
	if _, err := tools.ApprovalService.Provide(g.root, r); err != nil {
		return fmt.Errorf("approval routing: %w", err)
	}
	return nil
}

// mcpOnSession is the MCP server's OnSession hook: it records the
// session's identity for the audit record.
func (au *auditing) mcpOnSession(scope *host.Context, info mcpserver.SessionInfo) error {
	return au.onSession(scope, info.Identity, info.Scope)
}
