package tools

import (
	"context"
	"fmt"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
)

// This file is the seam a presentation mode other than native plugs into: Code Mode (package
// plugins/codemode) presents the tools through a reserved wire transport (run_code) and a prompt
// section, runs the transport's sub-calls through [SubCalls], and links the code runtime. The
// registry itself knows nothing of programs, and links no JavaScript engine.

// Presenter attaches a presentation mode (Code and Both) to a registry: [PluginWith] calls it
// once per registry, in every registry mode (an agent may present as Code or Both in a native
// registry, [Registry.PresentAs]), from the registry plugin's Apply, with the plugin's context
// and the fresh registry (not yet provided as a service).
type Presenter func(c *host.Context, r *Registry) (Presentation, error)

// Presentation is what a presentation mode contributes to a registry.
type Presentation struct {
	// Transport is the mode's reserved wire transport (Code Mode's run_code). Its name is
	// reserved: it cannot be registered, shadowed or named in a restriction; it resolves for every
	// scope presented in Code or Both ([Registry.ModeOf]; [Registry.Get], Visible, Schemas,
	// Execute) and is not in KnownNames. For an agent presented in Code only the calls whose
	// Parent is one of its executions in progress, for the same agent, reach the other tools.
	Transport Definition
	// Contribute is the mode's contribution to each prompt assembly for scope, under mode (Code
	// or Both): the mode scope is presented in ([Registry.ModeOf]).
	Contribute func(ctx context.Context, r *Registry, mode Mode, scope host.ScopeKey) (systemprompt.Contribution, error)
	// DirectCallHint, when not nil, is appended to the UNKNOWN_TOOL message of a direct call to
	// tool name by an agent presented in Code (which reaches only the transport), saying how
	// to call it instead.
	DirectCallHint func(name string) string
}

// PluginWith returns the tool registry plugin, named "tools" like [Plugin], that also accepts the
// modes Code and Both, presented by p (package plugins/codemode's Plugin is PluginWith of its
// presenter). p is called in every mode, native included, so that an agent may present as Code
// or Both on its own ([Registry.PresentAs]); the transport's name is then reserved in every
// mode.
func PluginWith(p Presenter) host.Plugin {
	if p == nil {
		return Plugin
	}
	return plugin{present: &p}
}

// Transport returns the reserved transport tool of the attached presentation (Code Mode's
// run_code): nil without one ([Plugin], New). Which scopes see it follows [Registry.ModeOf].
func (r *Registry) Transport() *Tool { return r.transport }

// presentedMode is the attached presentation of Code and Both: the
// transport's name, the contribution and the direct-call hint.
type presentedMode struct {
	hint  func(name string) string
	name  string
	contr func(ctx context.Context, r *Registry, mode Mode, scope host.ScopeKey) (systemprompt.Contribution, error)
}

// attach attaches the presentation p returns to r: the transport is frozen and installed, and
// its executions in progress are tracked (see inCodeRun). Whether a scope is presented through
// it is its mode's choice ([Registry.ModeOf]).
func (r *Registry) attach(c *host.Context, p Presenter) error {
	pres, err := p(c, r)
	if err != nil {
		return err
	}
	if pres.Contribute == nil || pres.Transport.Execute == nil {
		return fmt.Errorf("tools: the presentation of Code Mode has no transport body or no contribution")
	}
	def := pres.Transport
	body := def.Execute
	def.Execute = func(ctx context.Context, exec *Execution) (Output, error) {
		r.codeRuns.Store(exec.token, exec.agent)
		defer r.codeRuns.Delete(exec.token)
		return body(ctx, exec)
	}
	t, err := freeze(def, "")
	if err != nil {
		return fmt.Errorf("tools: the transport of Code Mode: %w", err)
	}
	r.transport = t
	r.pres = &presentedMode{hint: pres.DirectCallHint, name: t.name, contr: pres.Contribute}
	return nil
}

// contribute is scope's contribution to a prompt assembly, under the mode
// scope is presented in ([Registry.ModeOf]).
func (r *Registry) contribute(ctx context.Context, scope host.ScopeKey) (systemprompt.Contribution, error) {
	m := r.ModeOf(scope)
	if m == Native || r.pres == nil {
		return nativeContribution(r, scope), nil
	}
	return r.pres.contr(ctx, r, m, scope)
}

// PresentAs declares the mode (Native, Code or Both) the calling agent
// scope's tools are presented in, shadowing the registry's [Registry.Mode]
// for that agent only ([Registry.ModeOf]) until the returned disposer runs
// or c's fiber is disposed. What follows it is what the agent is shown:
// its prompt contribution (the wire definitions and, under Code and Both,
// the tools:sdk section), [Registry.Visible] and [Registry.Get] of the
// transport, the MCP gateway's session view; and, under Code, a direct
// call by that agent to an end capability is UNKNOWN_TOOL as under the
// registry's mode code. What the agent can call is unchanged
// ([Registry.EndCapabilities], restrictions, and every policy stage per
// call). Each change emits tools/change (kinds ChangePresent and
// ChangeUnpresent).
//
// It fails on a plain context ([ErrNotScoped]: the registry's own mode is
// Config.Mode), for a mode that is not Native, Code or Both, for Code and
// Both when Code Mode is not attached ([ErrNoCodeMode]: load
// codemode.Plugin), for a scope that already has a declaration in force
// ([ErrPresentedTwice]), and on a closed fiber.
func (r *Registry) PresentAs(c *host.Context, m Mode) (host.Disposer, error) {
	scope := c.ScopeKey()
	if scope == "" {
		return nil, fmt.Errorf("%w: PresentAs chooses one agent's presentation; the registry's own mode is its config's mode", ErrNotScoped)
	}
	switch m {
	case Native:
	case Code, Both:
		if r.pres == nil {
			return nil, fmt.Errorf("%w: agent %q cannot present as %q: load codemode.Plugin (package github.com/dsh-go/dsh/plugins/codemode) instead of tools.Plugin", ErrNoCodeMode, scope, m)
		}
	default:
		return nil, fmt.Errorf("tools: agent %q cannot present as %q: not a mode (allowed: %s)", scope, m, modeList())
	}
	pa := &presentAs{m: m}
	gone := false // guarded by r.mu: the teardown ran
	d, err := c.Track(EffectPresentAs, string(m), func() error {
		r.mu.Lock()
		gone = true
		l := r.layers[scope]
		removed := l != nil && l.presentAs == pa
		if removed {
			l.presentAs = nil
			r.dropLocked(scope)
		}
		r.mu.Unlock()
		if removed {
			r.changed(ChangeUnpresent, scope, nil)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	if gone {
		r.mu.Unlock()
		return nil, fmt.Errorf("tools: presenting agent %q as %q: %w", scope, m, host.ErrFiberClosed)
	}
	l := r.layerLocked(scope)
	if prev := l.presentAs; prev != nil {
		r.mu.Unlock()
		_ = d()
		return nil, fmt.Errorf("%w: agent %q is already presented as %q", ErrPresentedTwice, scope, prev.m)
	}
	l.presentAs = pa
	r.mu.Unlock()
	r.changed(ChangePresent, scope, nil)
	return d, nil
}

// SubCalls is the batch of the sub-calls one transport execution makes (the binding calls of one
// Code Mode run), scheduled as [Registry.ExecuteBatch] schedules a model turn, in submission
// order: each sub-call runs the full pipeline on the goroutine that runs it; policy stages,
// tools/result and the done hook follow submission order; a call whose tool declares it parallel
// overlaps neighbouring parallel ones in its tools/execute stage and body only (at most Cap at
// once); every other call is a barrier.
type SubCalls struct{ s *sched }

// SubCall is one sub-call's place in its batch (see [SubCalls.Entry]).
type SubCall struct{ c *subCall }

// subCall is a sub-call's Execution and its entry, in one allocation instead of two: the
// Execution is the call's own and never reused, as any other; one kept after its call keeps its
// entry's memory too (about 200 bytes). The Execution comes first, so that it starts its
// allocation (as one allocated alone does).
type subCall struct {
	exec Execution
	e    entry
}

// NewSubCalls returns a batch for the sub-calls of one transport execution, capped at the
// registry's Config.MaxParallelSubCalls (default [DefaultMaxParallel]). done, when not nil, is
// called once per sub-call after its tools/result, in submission order, on the sub-call's
// goroutine, with the call as submitted and its result.
func (r *Registry) NewSubCalls(done func(ctx context.Context, call Call, res Result)) *SubCalls {
	s := newSched(r, r.maxSubCalls)
	if done != nil {
		s.done = func(ctx context.Context, e *entry, _ *Execution, res Result) { done(ctx, e.call, res) }
	}
	return &SubCalls{s: s}
}

// Cap is the most sub-calls of the batch in their tools/execute stage at once.
func (b *SubCalls) Cap() int { return b.s.cap }

// Entry is the place of the sub-call numbered n, from 1 in submission order. Each number must be
// run exactly once, and every number below it too (a number never run holds up the later ones).
func (b *SubCalls) Entry(n int64) SubCall {
	return SubCall{c: &subCall{e: entry{index: int(n - 1)}}}
}

// Run runs call as sc on the calling goroutine through the full pipeline, in its batch's order,
// and returns its one result. The call is a sub-call: its Parent is the transport execution's
// token, and its ID may exceed [MaxCallIDLen] by the suffix a sub-call id adds (":code:<n>").
func (b *SubCalls) Run(ctx context.Context, sc SubCall, call Call) Result {
	call.subCall = true
	sc.c.e.call = call
	return b.s.run(ctx, &sc.c.e, &sc.c.exec, call)
}

// inCodeRun reports whether parent is a transport execution in progress for the same agent: a
// sub-call cannot borrow another agent's run.
func (r *Registry) inCodeRun(parent Token, agent host.ScopeKey) bool {
	if parent.IsZero() {
		return false
	}
	runAgent, ok := r.codeRuns.Load(parent)
	return ok && runAgent.(host.ScopeKey) == agent
}

// codeOnlyHint is the mode's hint for a direct call to tool name (see
// Presentation.DirectCallHint), or nothing.
func (r *Registry) codeOnlyHint(name string) string {
	if r.pres != nil && r.pres.hint != nil {
		return r.pres.hint(name)
	}
	return ""
}
