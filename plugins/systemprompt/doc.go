// Package systemprompt assembles what a model is shown at each turn: the
// system prompt's sections, in order, and the wire definitions of the tools
// it may call (import path github.com/dsh-go/dsh/plugins/systemprompt;
// package name systemprompt).
//
// Load [Plugin] and read the [*Service] through [ServiceKey]. Plugins
// register lazy [Section]s (rendered at every assembly, for the scope
// being assembled) and [ToolContributor]s (called at every assembly for
// that scope's [ToolSchema]s); [Service.Assemble] builds the [Prompt] of one
// agent scope; [AssembleEvent] listeners may edit it on the way.
//
//	root.Plugin(systemprompt.Plugin, systemprompt.Config{ToolOrder: []string{"read_file"}})
//	sp, _ := systemprompt.ServiceKey.Get(root)
//	sp.Section(root, systemprompt.StaticSection("persona", 0, "You are a careful coding agent."))
//	p, err := sp.Assemble(ctx, agent.ScopeKey())
//	// p.Text(): the sections, joined; p.Tools: the wire tool definitions
//
// The package knows nothing about tools. The tool registry (package tools,
// which imports this one, never the reverse) contributes its tools for
// each scope whenever this service is provided, in the shape its mode
// needs: the visible tools as definitions, or, under Code Mode, the
// run_code transport and the protected "tools:sdk" section.
//
// # Registration
//
// Everything is registered through a *host.Context and owned by its fiber:
// disposing the fiber (or calling the returned disposer) removes it.
//
//   - [Service.Tools] registers a [ToolContributor]: a function called at
//     every assembly with the scope, returning a [Contribution] (tool
//     schemas, extra lazy sections, protected names, reserved names).
//     Several contributors may be registered; their tools are concatenated
//     in registration order. A contributor registered through an agent
//     context contributes to that scope's assemblies only.
//   - [Service.Section] registers a lazy [Section] in the layer of the
//     calling context: global for a plain context, the agent's scope for an
//     agent context. A scoped section shadows a same-named global one for
//     that scope only. Two sections with one name in one layer fail.
//
// # Assembly
//
// [Service.Assemble] builds a [Prompt] for a scope, in this order:
//
//  1. Collect: call every contributor that applies to the scope, in
//     registration order. A contributor's error (or panic) rejects the whole
//     assembly, wrapped in a [*ContributorError] naming the contributor, so
//     an actionable message such as "Code Mode needs a code runtime" reaches
//     the caller. Duplicate tool names across or within contributions
//     reject.
//  2. Sections: global sections, contributed sections and the scope's own
//     sections (shadowing global ones of the same name, except protected
//     ones: that rejects with [ErrProtected]) are rendered lazily, now, with
//     the scope, in (Order, Name) order. A section rendering "" is omitted;
//     a render error or panic rejects.
//  3. Waterfall: the [AssembleEvent] waterfall ("system-prompt/assemble",
//     scope-filtered, failures propagate) runs with a copy of the collected
//     [Draft] as the (read-only) payload; its base returns a fresh copy at
//     every call of next, so listeners may add, remove or edit tool schemas
//     and sections in what next returned, and no listener's mutation can
//     reach the collected draft, a contributor's data or the base's result.
//  4. Protection: for every protected tool and section name the final state
//     is the contributed state: a protected entry a listener removed or
//     replaced is restored (and logged); unrelated additions stay.
//  5. Validation and order: duplicate tool or section names reject;
//     sections are sorted by (Order, Name); tools named in
//     [Config.ToolOrder] come first in that order, the rest keep their
//     order. A ToolOrder name that is neither a final tool nor a reserved
//     or known name of some contribution rejects with [ErrToolOrder].
//
// Every assembly error is an [*AssemblyError] carrying the scope; the
// sentinels ([ErrInvalid], [ErrDuplicate], [ErrProtected], [ErrToolOrder],
// [ErrClosed]) and a contributor's own errors match with errors.Is through
// it.
//
// # Concurrency
//
// A [*Service] is safe for concurrent use. Assembly reads an immutable
// snapshot of the registrations (copy-on-write behind an atomic pointer) and
// holds no lock while contributors, renderers or listeners run, so they may
// register, dispose and even assemble (up to the host's dispatch depth
// limit). Cancellation of the assembly's context.Context is checked between
// contributors and between section renders and is returned as the error.
package systemprompt
