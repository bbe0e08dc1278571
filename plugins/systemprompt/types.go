package systemprompt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
)

// ServiceKey is the system-prompt service: [Plugin] provides its
// [*Service] through it; contributors inject it and read it:
//
//	sp, err := systemprompt.ServiceKey.Get(c)
var ServiceKey = host.NewService[*Service]("system-prompt")

// The effect kinds this package records on the registering fiber, as
// [host.Fiber.Effects] reports them.
const (
	// EffectContributor is the kind of a [Service.Tools] registration.
	EffectContributor host.EffectKind = "prompt-contributor"
	// EffectSection is the kind of a [Service.Section] registration.
	EffectSection host.EffectKind = "prompt-section"
)

// ToolSchema is one wire tool definition as the model sees it: a name, a
// description and a JSON Schema for the arguments. It carries no callbacks
// and no execution budget. It is the one tool-schema type of the module:
// the tool registry returns it (tools.Registry.Schemas, tools.Tool.Schema)
// and Code Mode declares its SDK from it. It lives here, beside the
// assembly that shows it to the model, because the tool registry imports
// this package and not the reverse.
type ToolSchema struct {
	// Name is the tool's wire name; it must not be empty.
	Name string `json:"name"`
	// Description tells the model what the tool does.
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments: empty, or a JSON
	// object.
	Parameters json.RawMessage `json:"parameters"`
}

// Validate reports whether s can be sent to a model: a non-empty name and
// parameters that are empty or a valid JSON object. The error wraps
// [ErrInvalid].
func (s ToolSchema) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("%w: tool schema with an empty name", ErrInvalid)
	}
	if len(s.Parameters) == 0 {
		return nil
	}
	if !json.Valid(s.Parameters) {
		return fmt.Errorf("%w: tool %q: parameters are not valid JSON", ErrInvalid, s.Name)
	}
	if p := bytes.TrimLeft(s.Parameters, " \t\r\n"); p[0] != '{' {
		return fmt.Errorf("%w: tool %q: parameters must be a JSON object (a JSON Schema), not %.20s", ErrInvalid, s.Name, p)
	}
	return nil
}

// Clone returns a copy of s that shares no memory with it.
func (s ToolSchema) Clone() ToolSchema {
	if s.Parameters != nil {
		s.Parameters = slices.Clone(s.Parameters)
	}
	return s
}

// equal reports whether two schemas are byte-for-byte the same.
func (s ToolSchema) equal(o ToolSchema) bool {
	return s.Name == o.Name && s.Description == o.Description && bytes.Equal(s.Parameters, o.Parameters)
}

// Section is a lazy prompt section: Render is called at each assembly, with
// the scope being assembled, and its text placed by (Order, Name). A
// section that renders "" is omitted from that assembly.
type Section struct {
	// Name identifies the section (e.g. "tools:sdk"); it must not be
	// empty. A scoped section shadows a global one of the same name.
	Name string
	// Order places the section: lower first, ties broken by Name.
	Order int
	// Render produces the text. It may be called concurrently for
	// different assemblies and must not be nil.
	Render func(ctx context.Context, scope host.ScopeKey) (string, error)
}

// Validate reports whether sec can be registered: a non-empty name and a
// Render function. The error wraps [ErrInvalid].
func (sec Section) Validate() error {
	if sec.Name == "" {
		return fmt.Errorf("%w: section with an empty name", ErrInvalid)
	}
	if sec.Render == nil {
		return fmt.Errorf("%w: section %q has no Render function", ErrInvalid, sec.Name)
	}
	return nil
}

// StaticSection returns a section that renders text for every scope.
func StaticSection(name string, order int, text string) Section {
	return Section{Name: name, Order: order, Render: func(context.Context, host.ScopeKey) (string, error) { return text, nil }}
}

// Contribution is what a [ToolContributor] contributes to one assembly.
// The assembly copies it; the contributor keeps ownership of its slices.
type Contribution struct {
	// Tools are wire tool definitions contributed for this scope, in
	// order.
	Tools []ToolSchema
	// Sections are extra sections for this scope (e.g. Code Mode's
	// "tools:sdk", order 150). They belong to the global layer: a name
	// clash with a globally registered or another contributed section
	// rejects the assembly, while a scoped section may shadow one unless
	// it is protected.
	Sections []Section
	// Protected names tools of this assembly that listeners cannot remove
	// or replace: after the waterfall they are restored to the contributed
	// version. Each must be among the contributed tools.
	Protected []string
	// ProtectedSections names sections that listeners cannot remove or
	// replace and that no scoped section may shadow. Each must be a
	// globally registered or contributed section.
	ProtectedSections []string
	// Reserved are names valid in [Config.ToolOrder] besides the tools
	// (reserved transport names a mode may or may not contribute).
	Reserved []string
	// Known are further names valid in [Config.ToolOrder] besides the
	// tools: capabilities that exist for the scope but are absent from this
	// assembly because of per-scope runtime state (a tool registry's
	// pre-restriction name universe), so that naming a tool restricted away
	// for one agent is a normal absence rather than dead configuration.
	Known []string
}

// ToolContributor is called at every assembly with the scope being
// assembled and returns that scope's contribution. An error rejects the
// whole assembly with that message (wrapped in a [*ContributorError]), so
// it should say what to do, e.g. "Code Mode needs a code runtime with
// language typescript; load one or set tools mode to native". It may be
// called concurrently for different assemblies.
type ToolContributor func(ctx context.Context, scope host.ScopeKey) (Contribution, error)

// Rendered is a section as rendered for one assembly.
type Rendered struct {
	// Name is the section's name.
	Name string
	// Order is the section's order; sections sort by (Order, Name).
	Order int
	// Text is the rendered text; an empty text omits the section.
	Text string
}

// Draft is the payload and result of the [AssembleEvent] waterfall: the
// sections and tools collected for Scope.
//
// The payload is a copy of the collected draft, shared by the listeners of
// one dispatch: read it, do not modify it. Build the result from what next
// returns instead: every call of next returns a fresh deep copy, which the
// listener owns and may edit in place (add, remove or reorder entries).
// Nothing a listener does to either value reaches the collected draft, the
// contributors or the final [Prompt]. Changing Scope has no effect.
type Draft struct {
	// Scope is the scope being assembled ("" = global).
	Scope host.ScopeKey
	// Sections are the rendered, non-empty sections in (Order, Name)
	// order. Listeners may add sections; the result is sorted again.
	Sections []Rendered
	// Tools are the wire tool definitions in contributed order.
	Tools []ToolSchema
}

// Clone returns a deep copy of d.
func (d Draft) Clone() Draft {
	out := Draft{Scope: d.Scope, Sections: slices.Clone(d.Sections)}
	if d.Tools != nil {
		out.Tools = make([]ToolSchema, len(d.Tools))
		for i, t := range d.Tools {
			out.Tools[i] = t.Clone()
		}
	}
	return out
}

// AssembleEvent is the assembly waterfall. Listeners registered with
// host.OnWaterfall through a plain context see every assembly; through an
// agent context, only that scope's. A listener typically calls next and
// edits the result:
//
//	d, err := next(ctx)
//	d.Tools = slices.DeleteFunc(d.Tools, func(t ToolSchema) bool { return t.Name == "bash" })
//	return d, err
//
// A listener error (or panic) rejects the assembly. Protected tools and
// sections are restored after the waterfall whatever listeners return.
var AssembleEvent = events.NewWaterfall[Draft, Draft](events.Descriptor{
	Name:     "system-prompt/assemble",
	Mode:     events.ModeWaterfall,
	Filtered: true,
	Failure:  events.Propagate,
	Doc:      "Assembling a scope's system prompt: listeners may add or remove tool schemas and sections; protected ones are restored afterwards.",
})

// Prompt is an assembled system prompt. It is the caller's: it shares no
// memory with the service, contributors or listeners.
type Prompt struct {
	// Scope is the scope the prompt was assembled for ("" = global).
	Scope host.ScopeKey
	// Sections are the non-empty sections, sorted by (Order, Name).
	Sections []Rendered
	// Tools are the wire tool definitions, in the configured order.
	Tools []ToolSchema
}

// sectionSeparator joins sections in [Prompt.Text].
const sectionSeparator = "\n\n"

// Text returns the sections' texts in order, separated by a blank line
// ("\n\n").
func (p *Prompt) Text() string {
	texts := make([]string, len(p.Sections))
	for i, s := range p.Sections {
		texts[i] = s.Text
	}
	return strings.Join(texts, sectionSeparator)
}

// ToolNames returns the names of p's tools, in order.
func (p *Prompt) ToolNames() []string {
	names := make([]string, len(p.Tools))
	for i, t := range p.Tools {
		names[i] = t.Name
	}
	return names
}

// Config configures the plugin.
type Config struct {
	// ToolOrder lists tool names to put first, in this order; the other
	// tools follow in contributed order. Every name must be a tool of the
	// assembly or a reserved or known name of a contribution, or the
	// assembly is rejected with [ErrToolOrder].
	ToolOrder []string `json:"toolOrder,omitempty"`
}

// Validate reports an empty or duplicate ToolOrder name. The error wraps
// [ErrInvalid].
func (c Config) Validate() error {
	seen := make(map[string]int, len(c.ToolOrder))
	for i, n := range c.ToolOrder {
		if n == "" {
			return fmt.Errorf("%w: config toolOrder[%d] is empty", ErrInvalid, i)
		}
		if j, ok := seen[n]; ok {
			return fmt.Errorf("%w: config toolOrder names %q twice (at %d and %d)", ErrInvalid, n, j, i)
		}
		seen[n] = i
	}
	return nil
}
