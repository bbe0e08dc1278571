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
// once per registry, from the registry plugin's Apply, with the plugin's context and the fresh
// registry (not yet provided as a service).
type Presenter func(c *host.Context, r *Registry) (Presentation, error)

// Presentation is what a presentation mode contributes to a registry.
type Presentation struct {
	// Transport is the mode's reserved wire transport (Code Mode's run_code). Its name is
	// reserved: it cannot be registered, shadowed or named in a restriction; it resolves for every
	// scope ([Registry.Get], Visible, Schemas, Execute) and is not in KnownNames. Under Code only
	// the calls whose Parent is one of its executions in progress, for the same agent, reach the
	// other tools.
	Transport Definition
	// Contribute is the mode's contribution to each prompt assembly for scope, under mode (Code
	// or Both).
	Contribute func(ctx context.Context, r *Registry, mode Mode, scope host.ScopeKey) (systemprompt.Contribution, error)
	// DirectCallHint, when not nil, is appended to the UNKNOWN_TOOL message of a direct call to
	// tool name under Code (which reaches only the transport), saying how to call it instead.
	DirectCallHint func(name string) string
}

// PluginWith returns the tool registry plugin, named "tools" like [Plugin], that also accepts the
// modes Code and Both, presented by p (package plugins/codemode's Plugin is PluginWith of its
// presenter). In native mode it is [Plugin] and p is not called.
func PluginWith(p Presenter) host.Plugin {
	if p == nil {
		return Plugin
	}
	return plugin{present: &p}
}

// Transport returns the reserved transport tool of the registry's mode: nil in native mode.
func (r *Registry) Transport() *Tool { return r.transport }

// presentedMode is the modeSupport of Code and Both: the Presentation's transport and
// contribution.
type presentedMode struct {
	m      Mode
	hint   func(name string) string
	name   string
	contr  func(ctx context.Context, r *Registry, mode Mode, scope host.ScopeKey) (systemprompt.Contribution, error)
	reserv []string
}

func (p *presentedMode) mode() Mode                  { return p.m }
func (p *presentedMode) reserved() []string          { return p.reserv }
func (p *presentedMode) isReserved(name string) bool { return name == p.name }
func (p *presentedMode) contribute(ctx context.Context, r *Registry, scope host.ScopeKey) (systemprompt.Contribution, error) {
	return p.contr(ctx, r, p.m, scope)
}

// attach presents r under mode m through p: the transport is frozen and installed, and its
// executions in progress are tracked (see inCodeRun).
func (r *Registry) attach(c *host.Context, m Mode, p Presenter) error {
	pres, err := p(c, r)
	if err != nil {
		return err
	}
	if pres.Contribute == nil || pres.Transport.Execute == nil {
		return fmt.Errorf("tools: the presentation of mode %q has no transport body or no contribution", m)
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
		return fmt.Errorf("tools: the transport of mode %q: %w", m, err)
	}
	r.transport = t
	r.mode = &presentedMode{m: m, hint: pres.DirectCallHint, name: t.name, contr: pres.Contribute, reserv: []string{t.name}}
	return nil
}

// SubCalls is the batch of the sub-calls one transport execution makes (the binding calls of one
// Code Mode run), scheduled as [Registry.ExecuteBatch] schedules a model turn, in submission
// order: each sub-call runs the full pipeline on the goroutine that runs it; policy stages,
// tools/result and the done hook follow submission order; a call whose tool declares it parallel
// overlaps neighbouring parallel ones in its tools/execute stage and body only (at most Cap at
// once); every other call is a barrier.
type SubCalls struct{ s *sched }

// SubCall is one sub-call's place in its batch (see [SubCalls.Entry]).
type SubCall struct{ e *entry }

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
func (b *SubCalls) Entry(n int64) SubCall { return SubCall{e: &entry{index: int(n - 1)}} }

// Run runs call as sc on the calling goroutine through the full pipeline, in its batch's order,
// and returns its one result. The call is a sub-call: its Parent is the transport execution's
// token, and its ID may exceed [MaxCallIDLen] by the suffix a sub-call id adds (":code:<n>").
func (b *SubCalls) Run(ctx context.Context, sc SubCall, call Call) Result {
	call.subCall = true
	sc.e.call = call
	return b.s.run(ctx, sc.e, call)
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
	if p, ok := r.mode.(*presentedMode); ok && p.hint != nil {
		return p.hint(name)
	}
	return ""
}
