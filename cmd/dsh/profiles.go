package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/internal/dshconfig"
	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/permissions"
	"github.com/dsh-go/dsh/plugins/tools"
)

// This file is the gateway's per-identity permission profiles (dsh.json
// "profiles"): each HTTP session remembers who opened it (the http.tokens
// entry, or the JWT's claims), and each call is decided by the policy of
// the profile that caller resolves to in the profiles in force at that
// call (so a --watch reload applies at once). A caller no profile matches
// gets the top-level permissions, or nothing when http.unmapped is
// "refuse": its session is refused, and a call of a session whose caller
// stops resolving (a reload) is denied. Sessions without an identity
// (stdio, --no-auth) and calls of no session get the top-level
// permissions. A profile's tools mode is presented to its sessions
// (tools.Registry.PresentAs on the session's scope) when they open, and
// again after each reload. A session keeps the caller of the token that
// opened it (a JWT's claims then).

// The keys of auth.TokenInfo.Extra the HTTP face sets: the http.tokens
// name of a configured bearer token, and a JWT's claims.
const (
	extraToken  = "dsh/token"
	extraClaims = "dsh/claims"
)

// profileSet is the compiled "profiles" of one config.
type profileSet struct {
	profiles []dshconfig.Profile
	pols     []*permissions.Policy
	refuse   bool
}

// compileProfiles compiles cfg's profiles; every error names its key.
func compileProfiles(cfg *dshconfig.Config) (*profileSet, error) {
	ps := &profileSet{profiles: cfg.Profiles, refuse: cfg.HTTP.Unmapped == dshconfig.UnmappedRefuse}
	var errs []error
	for _, p := range cfg.Profiles {
		pol, err := permissions.Compile(p.Permissions)
		if err != nil {
			errs = append(errs, &dshconfig.Error{File: cfg.File, Key: p.Key + ".permissions", Msg: err.Error()})
		}
		ps.pols = append(ps.pols, pol)
	}
	if err := checkProfileModes(cfg); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return ps, nil
}

// needsCodeMode reports whether cfg presents Code Mode to anyone: its
// mode, or a profile's.
func needsCodeMode(cfg *dshconfig.Config) bool {
	if cfg.Mode == tools.Code || cfg.Mode == tools.Both {
		return true
	}
	for _, p := range cfg.Profiles {
		if p.Mode == tools.Code || p.Mode == tools.Both {
			return true
		}
	}
	return false
}

// checkProfileModes refuses a profile's tools mode code or both in a dsh
// built without Code Mode.
func checkProfileModes(cfg *dshconfig.Config) error {
	if codeRuntimePlugin != nil {
		return nil
	}
	var errs []error
	for _, p := range cfg.Profiles {
		if p.Mode == tools.Code || p.Mode == tools.Both {
			errs = append(errs, &dshconfig.Error{File: cfg.File, Key: p.Key + ".tools.mode",
				Msg: fmt.Sprintf("tools mode %q needs Code Mode, and this dsh was built without it (-tags dsh_nocodemode); use mode %q", p.Mode, tools.Native)})
		}
	}
	return errors.Join(errs...)
}

// sessionCaller is what a session's profile is resolved from: its
// caller, or a profile named outright (`dsh tools --profile`).
type sessionCaller struct {
	identity string
	caller   dshconfig.Caller
	profile  string
}

// profileState is the gateway's profiles in force and its sessions'
// callers.
type profileState struct {
	set      atomic.Pointer[profileSet]
	mu       sync.Mutex
	sessions map[host.ScopeKey]sessionCaller
	// shown are the sessions' presentations (their profile's tools
	// mode), kept current across reloads.
	shown map[host.ScopeKey]*presented
}

// presented is one session's presentation: the mode its profile asks
// for, declared through its scope (empty: the registry's own).
type presented struct {
	mu    sync.Mutex
	scope *host.Context
	mode  tools.Mode
	undo  host.Disposer
}

func newProfileState(ps *profileSet) *profileState {
	st := &profileState{sessions: map[host.ScopeKey]sessionCaller{}, shown: map[host.ScopeKey]*presented{}}
	st.set.Store(ps)
	return st
}

// callerOf is the caller an HTTP session's token describes.
func callerOf(info mcpserver.SessionInfo) dshconfig.Caller {
	var c dshconfig.Caller
	if info.Token == nil {
		return c
	}
	if name, ok := info.Token.Extra[extraToken].(string); ok {
		c.Token = name
	}
	if cl, ok := info.Token.Extra[extraClaims].(map[string]any); ok {
		c.Claims = cl
	}
	return c
}

// resolve returns the profile index of sc in ps (-1: the top-level
// permissions), and false when sc is refused.
func (ps *profileSet) resolve(sc sessionCaller) (int, bool) {
	if sc.profile != "" {
		for i := range ps.profiles {
			if ps.profiles[i].Name == sc.profile {
				return i, true
			}
		}
		return -1, false // named, and gone: nothing applies
	}
	i := dshconfig.ResolveProfile(ps.profiles, sc.caller)
	if i < 0 && ps.refuse {
		return -1, false
	}
	return i, true
}

// policyOf returns the policy deciding the calls of agent and its
// profile's name (dshconfig.DefaultProfile for the top-level
// permissions); nil when the agent's caller resolves to no profile and
// unmapped callers are refused.
func (g *gateway) policyOf(agent host.ScopeKey) (*permissions.Policy, string) {
	st := g.prof
	if st == nil {
		return g.pol.Load(), dshconfig.DefaultProfile
	}
	st.mu.Lock()
	sc, ok := st.sessions[agent]
	st.mu.Unlock()
	if !ok {
		return g.pol.Load(), dshconfig.DefaultProfile
	}
	ps := st.set.Load()
	i, ok := ps.resolve(sc)
	switch {
	case !ok:
		return nil, ""
	case i < 0:
		return g.pol.Load(), dshconfig.DefaultProfile
	}
	return ps.pols[i], ps.profiles[i].Name
}

// callPolicy is the gateway's permissions.PerCall.
func (g *gateway) callPolicy(e *tools.Execution) *permissions.Policy {
	p, _ := g.policyOf(e.Agent())
	return p
}

// onSession binds an HTTP session with an identity to its caller, until
// its scope ends, and presents the tools in its profile's mode. A caller
// refused (no profile, http.unmapped "refuse") refuses the session.
func (g *gateway) onSession(scope *host.Context, info mcpserver.SessionInfo) error {
	st := g.prof
	if st == nil || info.Transport != "http" || info.Identity == "" {
		return nil
	}
	sc := sessionCaller{identity: info.Identity, caller: callerOf(info)}
	if _, ok := st.set.Load().resolve(sc); !ok {
		return fmt.Errorf("identity %q matches no profile, and http.unmapped is %q", info.Identity, dshconfig.UnmappedRefuse)
	}
	pr := &presented{scope: scope}
	st.mu.Lock()
	st.sessions[info.Scope] = sc
	st.shown[info.Scope] = pr
	st.mu.Unlock()
	if _, err := scope.Track(host.EffectCustom, "profiles: session", func() error {
		st.mu.Lock()
		delete(st.sessions, info.Scope)
		delete(st.shown, info.Scope)
		st.mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	return g.present(pr, sc)
}

// present makes pr's presentation the tools mode of the profile sc
// resolves to now (none: the registry's mode).
func (g *gateway) present(pr *presented, sc sessionCaller) error {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	ps := g.prof.set.Load()
	var want tools.Mode
	key := ""
	if i, ok := ps.resolve(sc); ok && i >= 0 {
		want, key = ps.profiles[i].Mode, ps.profiles[i].Key
	}
	if want == pr.mode {
		return nil
	}
	if pr.undo != nil {
		_ = pr.undo()
		pr.undo, pr.mode = nil, ""
	}
	if want == "" {
		return nil
	}
	d, err := g.reg.PresentAs(pr.scope, want)
	if err != nil {
		return fmt.Errorf("%s.tools.mode: %w", key, err)
	}
	pr.undo, pr.mode = d, want
	return nil
}

// representSessions brings every open session's presentation to its
// profile's tools mode in the profiles now in force (after a reload); a
// session ending meanwhile is skipped.
func (g *gateway) representSessions() {
	st := g.prof
	st.mu.Lock()
	type one struct {
		pr *presented
		sc sessionCaller
	}
	all := make([]one, 0, len(st.shown))
	for k, pr := range st.shown {
		all = append(all, one{pr, st.sessions[k]})
	}
	st.mu.Unlock()
	for _, o := range all {
		_ = g.present(o.pr, o.sc) // fails only for a session whose scope is closing
	}
}

// sessionRules are a session's own Hidden and Access: those of the
// policy its calls are decided by (nothing hidden is offered; with no
// policy everything is hidden and refused).
func (g *gateway) sessionRules(info mcpserver.SessionInfo) mcpserver.SessionRules {
	return mcpserver.SessionRules{
		Hidden: func(tool string) bool {
			p, _ := g.policyOf(info.Scope)
			return p == nil || p.DeniesTool(tool)
		},
		Access: func(name string, args json.RawMessage) mcpserver.AccessDecision {
			p, _ := g.policyOf(info.Scope)
			if p == nil {
				return mcpserver.AccessDecision{Verdict: mcpserver.AccessDeny, Reason: permissions.ErrNoPolicy.Error()}
			}
			return resourceAccess(p, name, args)
		},
	}
}

// reloadProfiles checks that the profiles of cfg can replace those in
// force: they compile, and a tools mode code or both has Code Mode loaded
// (it is loaded at start only when a mode needs it).
func (g *gateway) reloadProfiles(cfg *dshconfig.Config) (*profileSet, error) {
	ps, err := compileProfiles(cfg)
	if err != nil {
		return nil, err
	}
	if g.reg.Transport() == nil {
		for _, p := range cfg.Profiles {
			if p.Mode == tools.Code || p.Mode == tools.Both {
				return nil, &dshconfig.Error{File: cfg.File, Key: p.Key + ".tools.mode",
					Msg: fmt.Sprintf("%q needs Code Mode, which this gateway did not load at start (no mode needed it): restart dsh to apply", p.Mode)}
			}
		}
	}
	return ps, nil
}

// asProfile makes the calls of the CLI's agent scope (`dsh tools list`
// and `dsh tools call` with --profile) those of the profile named name:
// its rules decide them and its tools mode presents the tools. "" keeps
// the top-level permissions and mode.
func (g *gateway) asProfile(name string) error {
	sc, err := g.root.Scope(cliAgent)
	if err != nil {
		return err
	}
	if name == "" || name == dshconfig.DefaultProfile {
		return nil
	}
	ps := g.prof.set.Load()
	i, ok := ps.resolve(sessionCaller{profile: name})
	if !ok {
		known := make([]string, 0, len(ps.profiles))
		for _, p := range ps.profiles {
			known = append(known, p.Name)
		}
		return fmt.Errorf("--profile %q: %s has no such profile (it has: %s)", name, g.cfg.File, strings.Join(append(known, dshconfig.DefaultProfile), ", "))
	}
	g.prof.mu.Lock()
	g.prof.sessions[cliAgent] = sessionCaller{profile: name}
	g.prof.mu.Unlock()
	if m := ps.profiles[i].Mode; m != "" {
		if _, err := g.reg.PresentAs(sc, m); err != nil {
			return fmt.Errorf("%s.tools.mode: %w", ps.profiles[i].Key, err)
		}
	}
	return nil
}

// hiddenFor is what is not offered to agent: the tools its policy denies
// without condition (everything, with no policy).
func (g *gateway) hiddenFor(agent host.ScopeKey) func(string) bool {
	return func(tool string) bool {
		p, _ := g.policyOf(agent)
		return p == nil || p.DeniesTool(tool)
	}
}
