package systemprompt

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dsh-go/dsh/host"
)

// Assemble builds the system prompt for scope ("" = global): it collects
// the contributions, renders the sections, runs the [AssembleEvent]
// waterfall, restores protected entries, validates names and applies
// [Config.ToolOrder] (see the package documentation for each step).
//
// Contributors, renderers and listeners run on the calling goroutine,
// under ctx; cancellation is checked between contributors and between
// renders and returned as the error. Any failure rejects the whole
// assembly with an [*AssemblyError]; no partial prompt is returned.
func (s *Service) Assemble(ctx context.Context, scope host.ScopeKey) (*Prompt, error) {
	p, err := s.assemble(ctx, scope)
	if err != nil {
		return nil, &AssemblyError{Scope: scope, Err: err}
	}
	return p, nil
}

func (s *Service) assemble(ctx context.Context, scope host.ScopeKey) (*Prompt, error) {
	if s.closed.Load() {
		return nil, ErrClosed
	}
	if scope != "" {
		if err := host.ValidateScopeKey(string(scope)); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	t := s.tab.Load()

	// 1. Collect the contributions.
	col, err := collect(ctx, t, scope)
	if err != nil {
		return nil, err
	}

	// 2. Resolve and render the sections.
	secs, err := resolveSections(t, scope, col)
	if err != nil {
		return nil, err
	}
	rendered, err := render(ctx, scope, secs)
	if err != nil {
		return nil, err
	}
	base := Draft{Scope: scope, Sections: rendered, Tools: col.tools}

	// 3. The waterfall. Listeners get a copy; the base returns a fresh copy
	// at each call, so nothing a listener does reaches base.
	out, err := s.waterfall(ctx, base)
	if err != nil {
		return nil, err
	}
	out = out.Clone() // listeners may keep and mutate what they returned

	// 4. Protection.
	tools := s.protectTools(scope, base.Tools, out.Tools, col.protTools)
	sections := s.protectSections(scope, base.Sections, out.Sections, col.protSecs)

	// 5. Validation and order.
	if tools, err = checkTools(tools); err != nil {
		return nil, err
	}
	if sections, err = checkSections(sections); err != nil {
		return nil, err
	}
	if tools, err = s.order(tools, col.reserved, col.known); err != nil {
		return nil, err
	}
	return &Prompt{Scope: scope, Sections: sections, Tools: tools}, nil
}

func (s *Service) waterfall(ctx context.Context, base Draft) (Draft, error) {
	return host.Waterfall(ctx, s.host.Emitter(base.Scope), AssembleEvent, base.Clone(),
		func(context.Context) (Draft, error) { return base.Clone(), nil })
}

// collection is what the contributors contributed to one assembly.
type collection struct {
	tools       []ToolSchema // owned copies, in contributed order
	toolFrom    map[string]*contributor
	contributed []pendingSection
	protTools   map[string]bool
	protSecs    map[string]*contributor
	reserved    map[string]bool
	known       map[string]bool
}

// pendingSection is a section to render and where it came from.
type pendingSection struct {
	sec  Section
	from string
}

func (ct *contributor) String() string {
	return fmt.Sprintf("tool contributor #%d (plugin %s)", ct.id, ct.plugin)
}

func (ct *contributor) fail(err error) error {
	return &ContributorError{ID: ct.id, Plugin: ct.plugin, Err: err}
}

func collect(ctx context.Context, t *table, scope host.ScopeKey) (*collection, error) {
	col := &collection{
		toolFrom:  map[string]*contributor{},
		protTools: map[string]bool{},
		protSecs:  map[string]*contributor{},
		reserved:  map[string]bool{},
		known:     map[string]bool{},
	}
	type claim struct {
		name string
		by   *contributor
	}
	var protected []claim
	for _, ct := range t.contributors {
		if ct.scope != "" && ct.scope != scope {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := callContributor(ctx, ct, scope)
		if err != nil {
			return nil, ct.fail(err)
		}
		for _, tool := range c.Tools {
			if err := tool.Validate(); err != nil {
				return nil, ct.fail(err)
			}
			if prev, ok := col.toolFrom[tool.Name]; ok {
				if prev == ct {
					return nil, ct.fail(fmt.Errorf("%w: tool %q is contributed twice", ErrDuplicate, tool.Name))
				}
				return nil, ct.fail(fmt.Errorf("%w: tool %q is also contributed by %v", ErrDuplicate, tool.Name, prev))
			}
			col.toolFrom[tool.Name] = ct
			col.tools = append(col.tools, tool.Clone())
		}
		for _, sec := range c.Sections {
			if err := sec.Validate(); err != nil {
				return nil, ct.fail(err)
			}
			col.contributed = append(col.contributed, pendingSection{sec: sec, from: ct.String()})
		}
		for _, n := range c.Protected {
			protected = append(protected, claim{n, ct})
		}
		for _, n := range c.ProtectedSections {
			if n == "" {
				return nil, ct.fail(fmt.Errorf("%w: empty protected section name", ErrInvalid))
			}
			if _, ok := col.protSecs[n]; !ok {
				col.protSecs[n] = ct
			}
		}
		for _, n := range c.Reserved {
			if n == "" {
				return nil, ct.fail(fmt.Errorf("%w: empty reserved name", ErrInvalid))
			}
			col.reserved[n] = true
		}
		for _, n := range c.Known {
			col.known[n] = true
		}
	}
	for _, p := range protected {
		if _, ok := col.toolFrom[p.name]; !ok {
			return nil, p.by.fail(fmt.Errorf("%w: protects tool %q, which no contributor contributes", ErrInvalid, p.name))
		}
		col.protTools[p.name] = true
	}
	return col, nil
}

func callContributor(ctx context.Context, ct *contributor, scope host.ScopeKey) (c Contribution, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(v)
		}
	}()
	return ct.fn(ctx, scope)
}

func panicked(v any) error {
	if err, ok := v.(error); ok {
		return fmt.Errorf("panicked: %w", err)
	}
	return fmt.Errorf("panicked: %v", v)
}

// resolveSections merges the global layer, the contributed sections and
// the scope's layer, and sorts the result by (Order, Name).
func resolveSections(t *table, scope host.ScopeKey, col *collection) ([]pendingSection, error) {
	byName := map[string]pendingSection{}
	for _, e := range t.sections[""] {
		byName[e.sec.Name] = pendingSection{sec: e.sec, from: "plugin " + e.plugin}
	}
	for _, p := range col.contributed {
		if prev, ok := byName[p.sec.Name]; ok {
			return nil, fmt.Errorf("%w: section %q is contributed by %s and also by %s; rename one", ErrDuplicate, p.sec.Name, p.from, prev.from)
		}
		byName[p.sec.Name] = p
	}
	for _, n := range slices.Sorted(maps.Keys(col.protSecs)) {
		if _, ok := byName[n]; !ok {
			return nil, col.protSecs[n].fail(fmt.Errorf("%w: protects section %q, which is neither registered globally nor contributed", ErrInvalid, n))
		}
	}
	if scope != "" {
		for _, e := range t.sections[scope] {
			if by, ok := col.protSecs[e.sec.Name]; ok {
				return nil, fmt.Errorf("%w: section %q registered for scope %q by plugin %s would shadow the protected section of that name (protected by %v); rename or remove it",
					ErrProtected, e.sec.Name, string(scope), e.plugin, by)
			}
			byName[e.sec.Name] = pendingSection{sec: e.sec, from: "plugin " + e.plugin}
		}
	}
	list := make([]pendingSection, 0, len(byName))
	for _, p := range byName {
		list = append(list, p)
	}
	slices.SortFunc(list, func(a, b pendingSection) int {
		return cmp.Or(cmp.Compare(a.sec.Order, b.sec.Order), strings.Compare(a.sec.Name, b.sec.Name))
	})
	return list, nil
}

func render(ctx context.Context, scope host.ScopeKey, secs []pendingSection) ([]Rendered, error) {
	out := make([]Rendered, 0, len(secs))
	for _, p := range secs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		text, err := callRender(ctx, p.sec, scope)
		if err != nil {
			return nil, fmt.Errorf("rendering section %q (from %s): %w", p.sec.Name, p.from, err)
		}
		if text != "" {
			out = append(out, Rendered{Name: p.sec.Name, Order: p.sec.Order, Text: text})
		}
	}
	return out, nil
}

func callRender(ctx context.Context, sec Section, scope host.ScopeKey) (text string, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = panicked(v)
		}
	}()
	return sec.Render(ctx, scope)
}

// protectTools makes the final state of every protected tool name the
// contributed one: listener versions of a protected name are replaced by
// the contributed schema at the first one's position, further copies are
// dropped, and a removed one is re-inserted at its contributed index
// (clamped to the list's length). Other entries are kept as they are.
func (s *Service) protectTools(scope host.ScopeKey, base, out []ToolSchema, prot map[string]bool) []ToolSchema {
	if len(prot) == 0 {
		return out
	}
	contributed := make(map[string]ToolSchema, len(prot))
	for _, t := range base {
		if prot[t.Name] {
			contributed[t.Name] = t
		}
	}
	final := make([]ToolSchema, 0, len(out)+len(prot))
	placed := map[string]bool{}
	for _, t := range out {
		if !prot[t.Name] {
			final = append(final, t)
			continue
		}
		c := contributed[t.Name]
		if placed[t.Name] {
			s.restored(scope, "tool", t.Name, "dropped a listener's extra copy of")
			continue
		}
		placed[t.Name] = true
		if !t.equal(c) {
			s.restored(scope, "tool", t.Name, "restored the contributed schema of")
		}
		final = append(final, c.Clone())
	}
	for i, t := range base {
		if prot[t.Name] && !placed[t.Name] {
			placed[t.Name] = true
			s.restored(scope, "tool", t.Name, "restored removed")
			final = slices.Insert(final, min(i, len(final)), t.Clone())
		}
	}
	return final
}

// protectSections makes the final state of every protected section name
// the rendered one: listener versions are dropped and the contributed
// rendering (if it rendered non-empty) is put back. Sections are sorted
// afterwards, so position does not matter.
func (s *Service) protectSections(scope host.ScopeKey, base, out []Rendered, prot map[string]*contributor) []Rendered {
	if len(prot) == 0 {
		return out
	}
	contributed := map[string]Rendered{}
	for _, r := range base {
		if _, ok := prot[r.Name]; ok {
			contributed[r.Name] = r
		}
	}
	final := make([]Rendered, 0, len(out)+len(prot))
	seen := map[string]bool{}
	for _, r := range out {
		if _, ok := prot[r.Name]; !ok {
			final = append(final, r)
			continue
		}
		if c, ok := contributed[r.Name]; !ok || r != c || seen[r.Name] {
			s.restored(scope, "section", r.Name, "overrode a listener's change to")
		}
		seen[r.Name] = true
	}
	for _, r := range base {
		if _, ok := prot[r.Name]; ok {
			if !seen[r.Name] {
				s.restored(scope, "section", r.Name, "restored removed")
			}
			final = append(final, r)
		}
	}
	return final
}

func (s *Service) restored(scope host.ScopeKey, kind, name, what string) {
	s.log.Warn().Str("scope", string(scope)).Str(kind, name).
		Msgf("assembly listener changed protected %s %q; %s it", kind, name, what)
}

// checkTools validates the final tools: valid schemas, unique names.
func checkTools(tools []ToolSchema) ([]ToolSchema, error) {
	seen := make(map[string]bool, len(tools))
	for _, t := range tools {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("after the assembly waterfall: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: tool %q appears twice after the assembly waterfall (did a listener add a tool that is already contributed?)", ErrDuplicate, t.Name)
		}
		seen[t.Name] = true
	}
	return tools, nil
}

// checkSections validates the final sections (named, unique), drops empty
// ones and sorts them by (Order, Name).
func checkSections(secs []Rendered) ([]Rendered, error) {
	seen := make(map[string]bool, len(secs))
	out := secs[:0]
	for _, r := range secs {
		if r.Name == "" {
			return nil, fmt.Errorf("%w: a section with an empty name after the assembly waterfall", ErrInvalid)
		}
		if seen[r.Name] {
			return nil, fmt.Errorf("%w: section %q appears twice after the assembly waterfall", ErrDuplicate, r.Name)
		}
		seen[r.Name] = true
		if r.Text != "" {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b Rendered) int {
		return cmp.Or(cmp.Compare(a.Order, b.Order), strings.Compare(a.Name, b.Name))
	})
	return out, nil
}

// order applies Config.ToolOrder: listed tools first, in that order, the
// rest in their current order. A listed name that is neither a tool nor a
// reserved or known name rejects.
func (s *Service) order(tools []ToolSchema, reserved, known map[string]bool) ([]ToolSchema, error) {
	if len(s.cfg.ToolOrder) == 0 {
		return tools, nil
	}
	idx := make(map[string]int, len(tools))
	for i, t := range tools {
		idx[t.Name] = i
	}
	var bad []error
	for _, n := range s.cfg.ToolOrder {
		if _, ok := idx[n]; !ok && !reserved[n] && !known[n] {
			bad = append(bad, fmt.Errorf("%w: config toolOrder names %q, which is not among the tools the current tools mode contributes (tools: %s; reserved: %s); remove it from toolOrder or make the tool available",
				ErrToolOrder, n, nameList(tools), keyList(reserved)))
		}
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	out := make([]ToolSchema, 0, len(tools))
	used := make(map[string]bool, len(s.cfg.ToolOrder))
	for _, n := range s.cfg.ToolOrder {
		if i, ok := idx[n]; ok {
			out = append(out, tools[i])
			used[n] = true
		}
	}
	for _, t := range tools {
		if !used[t.Name] {
			out = append(out, t)
		}
	}
	return out, nil
}

func nameList(tools []ToolSchema) string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return quoteList(names)
}

func keyList(m map[string]bool) string {
	return quoteList(slices.Sorted(maps.Keys(m)))
}

func quoteList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
