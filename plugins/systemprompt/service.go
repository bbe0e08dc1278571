package systemprompt

import (
	"fmt"
	"maps"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"

	"github.com/dsh-go/dsh/host"
)

// Plugin is the system-prompt plugin, named "system-prompt". Its
// configuration is a [Config] (or *Config; nil means the zero Config),
// validated at load. It provides a fresh [*Service] through [ServiceKey] on
// every (re)start; when the plugin is disposed or restarted the old service
// closes (its methods return [ErrClosed]) and plugins injecting
// "system-prompt" restart against the new one.
var Plugin host.Plugin = plugin{}

type plugin struct{}

// Name implements host.Named.
func (plugin) Name() string { return ServiceKey.Name() }

// Apply implements host.Plugin.
func (plugin) Apply(c *host.Context) error {
	cfg, err := host.DecodeConfig[Config](c)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s := newService(c, cfg)
	if err := c.Host().Declare(AssembleEvent); err != nil {
		return err
	}
	if _, err := c.Track(host.EffectCustom, "system-prompt/close", func() error {
		s.closed.Store(true)
		return nil
	}); err != nil {
		return err
	}
	_, err = ServiceKey.Provide(c, s)
	return err
}

// Service assembles system prompts from registered sections, tool
// contributors and [AssembleEvent] listeners. Get it with
// systemprompt.ServiceKey.Get(c). A Service
// is safe for concurrent use.
type Service struct {
	host *host.Host
	cfg  Config
	log  zerolog.Logger

	closed atomic.Bool
	// mu serializes writers of tab; assemblies read tab without locking.
	mu  sync.Mutex
	seq uint64
	tab atomic.Pointer[table]
}

// table is an immutable snapshot of the registrations.
type table struct {
	contributors []*contributor                    // registration order
	sections     map[host.ScopeKey][]*sectionEntry // per layer, registration order
}

type contributor struct {
	id     uint64
	scope  host.ScopeKey
	plugin string
	fn     ToolContributor
}

type sectionEntry struct {
	sec    Section
	scope  host.ScopeKey
	plugin string
}

func newService(c *host.Context, cfg Config) *Service {
	cfg.ToolOrder = slices.Clone(cfg.ToolOrder)
	s := &Service{host: c.Host(), cfg: cfg, log: *c.Logger()}
	s.tab.Store(&table{sections: map[host.ScopeKey][]*sectionEntry{}})
	return s
}

// Tools registers a tool contributor, owned by c's fiber: the returned
// disposer (or disposing the fiber) removes it. Several contributors may be
// registered; their tools are concatenated in registration order, and a
// tool name contributed twice rejects the assembly. A contributor
// registered through an agent context is called only for that scope's
// assemblies; one registered through a plain context, for every scope.
func (s *Service) Tools(c *host.Context, fn ToolContributor) (host.Disposer, error) {
	if fn == nil {
		return nil, fmt.Errorf("system-prompt: %w: nil tool contributor", ErrInvalid)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("system-prompt: registering a tool contributor: %w", ErrClosed)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	ct := &contributor{id: s.seq, scope: c.ScopeKey(), plugin: c.Fiber().Name(), fn: fn}
	// Track under s.mu: a concurrent disposal of the fiber runs the
	// teardown, which waits for s.mu and so always sees the entry stored.
	d, err := c.Track(EffectContributor, fmt.Sprintf("tool contributor #%d", ct.id), func() error {
		s.update(func(t *table) {
			t.contributors = slices.DeleteFunc(t.contributors, func(x *contributor) bool { return x == ct })
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("system-prompt: %w", err)
	}
	s.updateLocked(func(t *table) { t.contributors = append(t.contributors, ct) })
	return d, nil
}

// Section registers a lazy section in the layer of c's scope (global for a
// plain context), owned by c's fiber: the returned disposer (or disposing
// the fiber) removes it. A scoped section shadows a same-named global or
// contributed section for that scope only; shadowing a protected section
// fails when the scope is assembled. A second section with the same name
// in the same layer fails with [ErrDuplicate].
func (s *Service) Section(c *host.Context, sec Section) (host.Disposer, error) {
	if err := sec.Validate(); err != nil {
		return nil, fmt.Errorf("system-prompt: %w", err)
	}
	if s.closed.Load() {
		return nil, fmt.Errorf("system-prompt: registering section %q: %w", sec.Name, ErrClosed)
	}
	layer := c.ScopeKey()
	e := &sectionEntry{sec: sec, scope: layer, plugin: c.Fiber().Name()}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.tab.Load().sections[layer] {
		if x.sec.Name == sec.Name {
			return nil, fmt.Errorf("system-prompt: %w: section %q is already registered in %s by plugin %s",
				ErrDuplicate, sec.Name, layerName(layer), x.plugin)
		}
	}
	d, err := c.Track(EffectSection, sec.Name, func() error {
		s.update(func(t *table) {
			ls := slices.DeleteFunc(slices.Clone(t.sections[layer]), func(x *sectionEntry) bool { return x == e })
			if len(ls) == 0 {
				delete(t.sections, layer)
			} else {
				t.sections[layer] = ls
			}
		})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("system-prompt: %w", err)
	}
	s.updateLocked(func(t *table) { t.sections[layer] = append(slices.Clip(t.sections[layer]), e) })
	return d, nil
}

// update applies f to a copy of the table and publishes it.
func (s *Service) update(f func(*table)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updateLocked(f)
}

// updateLocked is update with s.mu held. f may replace the (cloned)
// contributors slice and the per-layer slices, but must not modify the
// elements of the old ones in place.
func (s *Service) updateLocked(f func(*table)) {
	old := s.tab.Load()
	t := &table{contributors: slices.Clone(old.contributors), sections: maps.Clone(old.sections)}
	if t.sections == nil {
		t.sections = map[host.ScopeKey][]*sectionEntry{}
	}
	f(t)
	s.tab.Store(t)
}

// Stats counts the current registrations, for tests and debugging.
type Stats struct {
	// Contributors is the number of registered tool contributors.
	Contributors int
	// Sections counts registered sections per layer ("" = global); layers
	// without sections are omitted.
	Sections map[host.ScopeKey]int
}

// Stats returns a snapshot of the registrations: after a plugin's fiber is
// disposed, nothing it registered is counted.
func (s *Service) Stats() Stats {
	t := s.tab.Load()
	st := Stats{Contributors: len(t.contributors), Sections: map[host.ScopeKey]int{}}
	for k, v := range t.sections {
		st.Sections[k] = len(v)
	}
	return st
}

func layerName(s host.ScopeKey) string {
	if s == "" {
		return "the global layer"
	}
	return fmt.Sprintf("the layer of scope %q", string(s))
}
