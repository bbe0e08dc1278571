package tools

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// Effect kinds the registry records on the registering fiber (see
// host.Fiber.Effects).
const (
	EffectTool        host.EffectKind = "tool"
	EffectRestriction host.EffectKind = "restriction"
	EffectGuard       host.EffectKind = "guard"
	EffectPresentAs   host.EffectKind = "presentAs"
)

// Restriction masks the GLOBAL tool layer for one agent scope: Allow keeps
// only the named global tools, Deny removes the named ones (both may be
// set: allowed and not denied). The agent's own registrations are explicit
// grants and bypass restrictions.
type Restriction struct {
	Allow []string `json:"allow,omitempty"`
	Deny  []string `json:"deny,omitempty"`
}

type guardEntry struct{ fn Guard }

type restriction struct {
	allow map[string]struct{} // nil = no allow mask
	deny  map[string]struct{}
}

func (r *restriction) admits(name string) bool {
	if r.allow != nil {
		if _, ok := r.allow[name]; !ok {
			return false
		}
	}
	_, denied := r.deny[name]
	return !denied
}

// layer is one scope's registrations ("" = global). Its slices are
// copy-on-write so that a reader may keep them after unlocking.
type layer struct {
	tools        map[string]*Tool
	restrictions []*restriction
	guards       []*guardEntry
	// presentAs is the agent's own presentation mode ([Registry.PresentAs]),
	// nil when it follows the registry's; never set on the global layer.
	presentAs *presentAs
}

// presentAs is one PresentAs declaration (its own identity, so that a
// disposer removes only its own).
type presentAs struct{ m Mode }

func (l *layer) empty() bool {
	return len(l.tools) == 0 && len(l.restrictions) == 0 && len(l.guards) == 0 && l.presentAs == nil
}

// Registry is the tool registry service (provided through
// [Service], name "tools"). It is safe for concurrent use.
//
// Tools live in layers: the global layer (registered through a plain
// context) and one layer per agent scope (registered through that agent's
// scoped context), which shadows same-named global tools for that agent.
// Every registration is recorded on the calling context's fiber and undone
// when that fiber is disposed.
//
// Layers are maps behind one RWMutex that is held only for map operations,
// never while user code runs: lookups cost the same with 10 or 10,000
// tools, and bulk registration stays linear (a copy-on-write snapshot of a
// 10,000-entry layer per registration would make it quadratic).
type Registry struct {
	c *host.Context
	h *host.Host
	// mode is the registry's presentation mode (Config.Mode; Native for
	// New), which an agent may shadow for itself ([Registry.PresentAs]).
	mode Mode
	// pres is the attached presentation of Code and Both (nil without a
	// presenter: [Plugin], New).
	pres *presentedMode

	// transport is the reserved run_code tool of the attached presentation
	// (nil without one). It lives outside the layers: every scope presented
	// in Code or Both sees it, restrictions cannot name it, and KnownNames
	// does not list it.
	transport *Tool
	// codeRuns holds the tokens of run_code executions in progress (Token →
	// their agent, a host.ScopeKey): under Code, only calls whose Parent is
	// one of them, for the same agent, may reach an end capability.
	codeRuns sync.Map
	// maxSubCalls is Config.MaxParallelSubCalls (0: DefaultMaxParallel).
	maxSubCalls int

	mu     sync.RWMutex
	layers map[host.ScopeKey]*layer
	// global is layers[""], which is never dropped (its fields are
	// guarded by mu like every layer's).
	global *layer
	// guarded counts the guards registered in every layer, written under
	// mu: a call reads no guard list while it is 0.
	guarded atomic.Int32

	// tracers follow every call (trace.go).
	tracers tracers
}

func newRegistry(c *host.Context) *Registry {
	global := &layer{tools: map[string]*Tool{}}
	return &Registry{c: c, h: c.Host(), mode: Native, layers: map[host.ScopeKey]*layer{"": global}, global: global}
}

// New returns a registry that works through c (approval lookups, event
// dispatch) in native mode, without providing it as a service or feeding a
// system prompt. [Plugin] is the usual way to get one; New is for
// embedding and tests.
func New(c *host.Context) *Registry { return newRegistry(c) }

// Mode returns the registry's presentation mode (Config.Mode), which an
// agent's [Registry.PresentAs] shadows for that agent: see
// [Registry.ModeOf].
func (r *Registry) Mode() Mode { return r.mode }

// ModeOf returns the mode scope's tools are presented in: the agent's own
// [Registry.PresentAs] declaration while it lasts, else the registry's
// [Registry.Mode] (always the latter for the global scope "").
func (r *Registry) ModeOf(scope host.ScopeKey) Mode {
	r.mu.RLock()
	m := r.modeLocked(scope)
	r.mu.RUnlock()
	return m
}

// PresentedAs returns the mode scope chose for itself with
// [Registry.PresentAs] and true while that declaration lasts; otherwise
// the registry's [Registry.Mode] and false (always for the global scope
// ""). A message about scope's presentation names the setting that
// decides it: the agent's own, or the registry's.
func (r *Registry) PresentedAs(scope host.ScopeKey) (Mode, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if scope != "" {
		if l := r.layers[scope]; l != nil && l.presentAs != nil {
			return l.presentAs.m, true
		}
	}
	return r.mode, false
}

// modeLocked is ModeOf with r.mu held.
func (r *Registry) modeLocked(scope host.ScopeKey) Mode {
	if scope != "" {
		if l := r.layers[scope]; l != nil && l.presentAs != nil {
			return l.presentAs.m
		}
	}
	return r.mode
}

// isReserved reports whether name is the attached presentation's
// transport.
func (r *Registry) isReserved(name string) bool {
	return r.transport != nil && name == r.transport.name
}

func layerName(scope host.ScopeKey) string {
	if scope == "" {
		return "the global layer"
	}
	return fmt.Sprintf("the layer of agent %q", scope)
}

// layerLocked returns scope's layer, creating it; r.mu must be held for
// writing.
func (r *Registry) layerLocked(scope host.ScopeKey) *layer {
	l := r.layers[scope]
	if l == nil {
		l = &layer{tools: map[string]*Tool{}}
		r.layers[scope] = l
	}
	return l
}

// dropLocked forgets an empty scoped layer; r.mu held for writing.
func (r *Registry) dropLocked(scope host.ScopeKey) {
	if scope != "" {
		if l := r.layers[scope]; l != nil && l.empty() {
			delete(r.layers, scope)
		}
	}
}

func (r *Registry) changed(kind ChangeKind, scope host.ScopeKey, names []string) {
	_ = host.Emit(context.Background(), r.h.Emitter(scope), Change, ChangeNotice{Kind: kind, Scope: scope, Names: names})
}

// Register freezes def into a [*Tool] and adds it to the calling context's
// layer: global for a plain context, the agent's own for an agent scope
// (shadowing a same-named global tool there, whichever came first). It
// fails (wrapping [ErrInvalidDefinition], [ErrDuplicate] naming the layer,
// [ErrReserved], or host.ErrFiberClosed) without registering anything. The
// tool is removed when the returned disposer runs or c's fiber is
// disposed. Every change emits tools/change.
func (r *Registry) Register(c *host.Context, def Definition) (host.Disposer, error) {
	scope := c.ScopeKey()
	t, err := freeze(def, scope)
	if err != nil {
		return nil, err
	}
	if r.isReserved(t.name) {
		return nil, fmt.Errorf("%w: %q is Code Mode's transport and cannot be registered or shadowed", ErrReserved, t.name)
	}
	gone := false // guarded by r.mu: the teardown ran
	d, err := c.Track(EffectTool, t.name, func() error {
		r.mu.Lock()
		gone = true
		l := r.layers[scope]
		removed := l != nil && l.tools[t.name] == t
		if removed {
			delete(l.tools, t.name)
			r.dropLocked(scope)
		}
		r.mu.Unlock()
		if removed {
			r.changed(ChangeUnregister, scope, []string{t.name})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if gone {
		r.mu.Unlock()
		return nil, fmt.Errorf("tools: registering tool %q: %w", t.name, host.ErrFiberClosed)
	}
	l := r.layerLocked(scope)
	if _, dup := l.tools[t.name]; dup {
		r.mu.Unlock()
		_ = d()
		return nil, fmt.Errorf("%w: tool %q is already registered in %s", ErrDuplicate, t.name, layerName(scope))
	}
	l.tools[t.name] = t
	r.mu.Unlock()
	r.changed(ChangeRegister, scope, []string{t.name})
	return d, nil
}

// Restrict masks the global tool surface for the calling agent scope (see
// [Restriction]); several restrictions intersect, and each lifts
// independently when its disposer runs or c's fiber is disposed. It fails
// on a plain context ([ErrNotScoped]), for an empty filter
// ([ErrEmptyRestriction]: the materialized-empty-config trap), for a name
// the scope does not know ([ErrUnknownName], checked against
// [Registry.KnownNames] at this moment, so a typo fails loudly while a
// tool hidden by another restriction does not), and for a reserved
// transport name ([ErrReserved]). The names are a snapshot: a Deny mask
// admits global tools registered later, an Allow mask excludes them.
func (r *Registry) Restrict(c *host.Context, f Restriction) (host.Disposer, error) {
	scope := c.ScopeKey()
	if scope == "" {
		return nil, fmt.Errorf("%w: restrictions mask the global surface for one agent; call Restrict through the agent's scoped context", ErrNotScoped)
	}
	if len(f.Allow) == 0 && len(f.Deny) == 0 {
		return nil, fmt.Errorf("%w: a restriction needs Allow or Deny names", ErrEmptyRestriction)
	}
	names := slices.Concat(f.Allow, f.Deny)
	for _, n := range names {
		if r.isReserved(n) {
			return nil, fmt.Errorf("%w: %q is Code Mode's transport; it stays available and cannot be named in a restriction", ErrReserved, n)
		}
	}
	known := r.KnownNames(scope)
	var unknown []string
	for _, n := range names {
		if _, ok := slices.BinarySearch(known, n); !ok && !slices.Contains(unknown, n) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("%w: %s (agent %q knows %d tools)", ErrUnknownName, quoteAll(unknown), scope, len(known))
	}
	rs := &restriction{}
	if len(f.Allow) > 0 {
		rs.allow = make(map[string]struct{}, len(f.Allow))
		for _, n := range f.Allow {
			rs.allow[n] = struct{}{}
		}
	}
	if len(f.Deny) > 0 {
		rs.deny = make(map[string]struct{}, len(f.Deny))
		for _, n := range f.Deny {
			rs.deny[n] = struct{}{}
		}
	}
	label := "allow=" + strings.Join(f.Allow, ",") + " deny=" + strings.Join(f.Deny, ",")
	gone := false
	d, err := c.Track(EffectRestriction, label, func() error {
		r.mu.Lock()
		gone = true
		l := r.layers[scope]
		removed := false
		if l != nil {
			if i := slices.Index(l.restrictions, rs); i >= 0 {
				l.restrictions = slices.Delete(slices.Clone(l.restrictions), i, i+1)
				removed = true
				r.dropLocked(scope)
			}
		}
		r.mu.Unlock()
		if removed {
			r.changed(ChangeUnrestrict, scope, slices.Clone(names))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if gone {
		r.mu.Unlock()
		return nil, fmt.Errorf("tools: restricting: %w", host.ErrFiberClosed)
	}
	l := r.layerLocked(scope)
	l.restrictions = append(slices.Clip(l.restrictions), rs)
	r.mu.Unlock()
	r.changed(ChangeRestrict, scope, slices.Clone(names))
	return d, nil
}

func quoteAll(ns []string) string {
	q := make([]string, len(ns))
	for i, n := range ns {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// Guard registers a monotonic guard (see [Guard]) for the calling
// context's layer: a plain context's guard applies to every call, an agent
// scope's only to that agent's calls. It is removed with the returned
// disposer or c's fiber.
func (r *Registry) Guard(c *host.Context, g Guard) (host.Disposer, error) {
	if g == nil {
		return nil, fmt.Errorf("tools: registering a nil guard")
	}
	scope := c.ScopeKey()
	entry := &guardEntry{fn: g} // its own identity, even for a func registered twice
	gone := false
	d, err := c.Track(EffectGuard, "guard", func() error {
		r.mu.Lock()
		gone = true
		if l := r.layers[scope]; l != nil {
			if i := slices.Index(l.guards, entry); i >= 0 {
				l.guards = slices.Delete(slices.Clone(l.guards), i, i+1)
				r.guarded.Add(-1)
				r.dropLocked(scope)
			}
		}
		r.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if gone {
		r.mu.Unlock()
		return nil, fmt.Errorf("tools: registering a guard: %w", host.ErrFiberClosed)
	}
	l := r.layerLocked(scope)
	l.guards = append(slices.Clip(l.guards), entry)
	r.guarded.Add(1)
	r.mu.Unlock()
	return d, nil
}

// resolveLocked resolves name for scope; r.mu held for reading. The
// reserved transport resolves for every scope presented in Code or Both.
func (r *Registry) resolveLocked(name string, scope host.ScopeKey) *Tool {
	if r.isReserved(name) {
		if r.modeLocked(scope) == Native {
			return nil // reserved: no layer holds a tool of that name
		}
		return r.transport
	}
	var sl *layer
	if scope != "" {
		sl = r.layers[scope]
		if sl != nil {
			if t := sl.tools[name]; t != nil {
				return t
			}
		}
	}
	t := r.global.tools[name]
	if t == nil || sl == nil {
		return t
	}
	for _, rs := range sl.restrictions {
		if !rs.admits(name) {
			return nil
		}
	}
	return t
}

// Get resolves name as scope sees it: the scope's own tool, else the
// global one unless a restriction hides it; the reserved run_code
// transport for a scope presented in Code or Both ([Registry.ModeOf]). The *Tool is the registry's frozen
// snapshot, the same one Execute would dispatch to.
func (r *Registry) Get(name string, scope host.ScopeKey) (*Tool, bool) {
	r.mu.RLock()
	t := r.resolveLocked(name, scope)
	r.mu.RUnlock()
	return t, t != nil
}

// Visible returns the tools scope can execute, sorted by name: the global
// layer after restrictions and shadowing, plus the scope's own layer, plus
// (when scope is presented in Code or Both, [Registry.ModeOf]) the reserved
// run_code transport. It is the view prompt assembly, Get and Execute
// share.
func (r *Registry) Visible(scope host.ScopeKey) []*Tool {
	return r.visible(scope, true)
}

// EndCapabilities returns [Registry.Visible] without the reserved
// transport: the tools a Code Mode program of scope gets bindings for and
// the tools:sdk section declares, sorted by name.
func (r *Registry) EndCapabilities(scope host.ScopeKey) []*Tool {
	return r.visible(scope, false)
}

// visible lists scope's tools; withTransport adds the transport when
// scope is presented in Code or Both.
func (r *Registry) visible(scope host.ScopeKey, withTransport bool) []*Tool {
	r.mu.RLock()
	withTransport = withTransport && r.transport != nil && r.modeLocked(scope) != Native
	g := r.layers[""]
	var sl *layer
	if scope != "" {
		sl = r.layers[scope]
	}
	n := len(g.tools)
	if sl != nil {
		n += len(sl.tools)
	}
	out := make([]*Tool, 0, n+1)
	if withTransport {
		out = append(out, r.transport)
	}
	for name, t := range g.tools {
		if sl != nil {
			if _, shadowed := sl.tools[name]; shadowed {
				continue
			}
			ok := true
			for _, rs := range sl.restrictions {
				ok = ok && rs.admits(name)
			}
			if !ok {
				continue
			}
		}
		out = append(out, t)
	}
	if sl != nil {
		for _, t := range sl.tools {
			out = append(out, t)
		}
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Tool) int { return strings.Compare(a.name, b.name) })
	return out
}

// KnownNames returns the pre-restriction name universe of scope, sorted:
// every global tool and every tool of the scope's own layer. Restrict
// validates names against it. Reserved transport names are not included;
// see [Registry.Reserved].
func (r *Registry) KnownNames(scope host.ScopeKey) []string {
	r.mu.RLock()
	g := r.layers[""]
	var sl *layer
	if scope != "" {
		sl = r.layers[scope]
	}
	out := make([]string, 0, len(g.tools))
	for name := range g.tools {
		out = append(out, name)
	}
	if sl != nil {
		for name := range sl.tools {
			if _, dup := g.tools[name]; !dup {
				out = append(out, name)
			}
		}
	}
	r.mu.RUnlock()
	slices.Sort(out)
	return out
}

// Reserved returns the reserved transport names: none without Code Mode
// ([Plugin], New); run_code when Code Mode is attached ([PluginWith]), in
// every registry mode, since any agent may present as Code or Both
// ([Registry.PresentAs]). They are not in
// [Registry.KnownNames]: they cannot be registered, shadowed or named in a
// restriction.
func (r *Registry) Reserved() []string {
	if r.transport == nil {
		return nil
	}
	return []string{r.transport.name}
}

// Schemas returns the wire schemas of [Registry.Visible] (scope), sorted by
// name, each a fresh copy without callbacks or the timeout budget.
func (r *Registry) Schemas(scope host.ScopeKey) []systemprompt.ToolSchema {
	return schemas(r.Visible(scope))
}

// guards returns the guards for an execution: global first, then the
// agent's own, each in registration order. The slices are copy-on-write,
// so they stay valid after unlocking. While no layer has a guard it takes
// no lock.
func (r *Registry) guards(scope host.ScopeKey) (global, scoped []*guardEntry) {
	if r.guarded.Load() == 0 {
		return nil, nil
	}
	r.mu.RLock()
	global = r.global.guards
	if scope != "" {
		if l := r.layers[scope]; l != nil {
			scoped = l.guards
		}
	}
	r.mu.RUnlock()
	return global, scoped
}

// PresentCall renders a pending call of name as scope sees it, or nil
// (unknown tool, no presenter, the presenter declined or panicked).
func (r *Registry) PresentCall(name string, scope host.ScopeKey, args []byte) CallView {
	t, _ := r.Get(name, scope)
	return t.PresentCall(args)
}

// PresentResult renders a completed call of name as scope sees it, or nil.
func (r *Registry) PresentResult(name string, scope host.ScopeKey, args []byte, res ResultData) ResultView {
	t, _ := r.Get(name, scope)
	return t.PresentResult(args, res)
}
