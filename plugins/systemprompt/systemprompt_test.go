package systemprompt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	sp "github.com/dsh-go/dsh/plugins/systemprompt"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// load boots a host with the plugin and returns the service.
func load(t *testing.T, cfg any) (*host.Host, *sp.Service) {
	t.Helper()
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	f, err := h.Root().Plugin(sp.Plugin, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	svc, err := sp.ServiceKey.Get(h.Root())
	if err != nil {
		t.Fatal(err)
	}
	return h, svc
}

func scope(t *testing.T, h *host.Host, key host.ScopeKey) *host.Context {
	t.Helper()
	c, err := h.Root().Scope(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func tool(name string) sp.ToolSchema {
	return sp.ToolSchema{Name: name, Description: "the " + name + " tool", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func tools(names ...string) sp.ToolContributor {
	return func(context.Context, host.ScopeKey) (sp.Contribution, error) {
		c := sp.Contribution{}
		for _, n := range names {
			c.Tools = append(c.Tools, tool(n))
		}
		return c, nil
	}
}

func assemble(t *testing.T, svc *sp.Service, scope host.ScopeKey) *sp.Prompt {
	t.Helper()
	p, err := svc.Assemble(context.Background(), scope)
	if err != nil {
		t.Fatalf("Assemble(%q): %v", scope, err)
	}
	return p
}

func sectionNames(p *sp.Prompt) []string {
	var out []string
	for _, s := range p.Sections {
		out = append(out, s.Name)
	}
	return out
}

// listener wraps a Draft → Draft edit as a waterfall listener that calls next.
func listener(edit func(d sp.Draft) sp.Draft) events.WaterfallListener[sp.Draft, sp.Draft] {
	return func(ctx context.Context, _ sp.Draft, next events.Next[sp.Draft]) (sp.Draft, error) {
		d, err := next(ctx)
		if err != nil {
			return d, err
		}
		return edit(d), nil
	}
}

func without(d sp.Draft, names ...string) sp.Draft {
	d.Tools = slices.DeleteFunc(d.Tools, func(x sp.ToolSchema) bool { return slices.Contains(names, x.Name) })
	d.Sections = slices.DeleteFunc(d.Sections, func(x sp.Rendered) bool { return slices.Contains(names, x.Name) })
	return d
}

func TestSectionsRenderLazilyPerScope(t *testing.T) {
	h, svc := load(t, nil)
	var mu sync.Mutex
	var calls []host.ScopeKey
	version := 0
	must[host.Disposer](t)(svc.Section(h.Root(), sp.Section{Name: "who", Render: func(_ context.Context, s host.ScopeKey) (string, error) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, s)
		version++
		return fmt.Sprintf("scope=%s v%d", s, version), nil
	}}))
	if len(calls) != 0 {
		t.Fatalf("Render called at registration: %v", calls)
	}
	for i, s := range []host.ScopeKey{"a", "b", "", "a"} {
		p := assemble(t, svc, s)
		if want := fmt.Sprintf("scope=%s v%d", s, i+1); p.Text() != want {
			t.Errorf("assembly %d: Text() = %q, want %q", i, p.Text(), want)
		}
		if p.Scope != s {
			t.Errorf("Prompt.Scope = %q, want %q", p.Scope, s)
		}
	}
	if want := []host.ScopeKey{"a", "b", "", "a"}; !reflect.DeepEqual(calls, want) {
		t.Errorf("Render calls = %q, want %q", calls, want)
	}
}

func TestSectionOrder(t *testing.T) {
	h, svc := load(t, nil)
	root := h.Root()
	for _, s := range []sp.Section{
		sp.StaticSection("b", 10, "B"),
		sp.StaticSection("a", 10, "A"),
		sp.StaticSection("z", -1, "Z"),
		sp.StaticSection("empty", 5, ""),
		sp.StaticSection("late", 200, "LATE"),
	} {
		must[host.Disposer](t)(svc.Section(root, s))
	}
	must[host.Disposer](t)(svc.Tools(root, func(context.Context, host.ScopeKey) (sp.Contribution, error) {
		return sp.Contribution{Sections: []sp.Section{sp.StaticSection("tools:sdk", 150, "SDK")}}, nil
	}))
	p := assemble(t, svc, "")
	if got, want := sectionNames(p), []string{"z", "a", "b", "tools:sdk", "late"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sections = %v, want %v (by Order, then Name; empty omitted)", got, want)
	}
	if got, want := p.Text(), "Z\n\nA\n\nB\n\nSDK\n\nLATE"; got != want {
		t.Errorf("Text() = %q, want %q", got, want)
	}
}

func TestScopedSectionShadowsGlobalForItsScopeOnly(t *testing.T) {
	h, svc := load(t, nil)
	a, b := scope(t, h, "a"), scope(t, h, "b")
	must[host.Disposer](t)(svc.Section(h.Root(), sp.StaticSection("persona", 0, "global persona")))
	offA := must[host.Disposer](t)(svc.Section(a, sp.StaticSection("persona", 0, "persona of a")))
	must[host.Disposer](t)(svc.Section(a, sp.StaticSection("only-a", 1, "a's notes")))
	// The same name in another scope's layer is fine.
	must[host.Disposer](t)(svc.Section(b, sp.StaticSection("only-a", 1, "b's notes")))

	if got := assemble(t, svc, "a").Text(); got != "persona of a\n\na's notes" {
		t.Errorf("scope a: %q", got)
	}
	if got := assemble(t, svc, "b").Text(); got != "global persona\n\nb's notes" {
		t.Errorf("scope b: %q", got)
	}
	if got := assemble(t, svc, "c").Text(); got != "global persona" {
		t.Errorf("scope c: %q", got)
	}
	if got := assemble(t, svc, "").Text(); got != "global persona" {
		t.Errorf("global: %q", got)
	}

	_, err := svc.Section(a, sp.StaticSection("persona", 3, "again"))
	if !errors.Is(err, sp.ErrDuplicate) || !strings.Contains(err.Error(), `scope "a"`) {
		t.Errorf("duplicate in one layer: err = %v, want ErrDuplicate naming the layer", err)
	}
	_, err = svc.Section(h.Root(), sp.StaticSection("persona", 3, "again"))
	if !errors.Is(err, sp.ErrDuplicate) {
		t.Errorf("duplicate in the global layer: err = %v", err)
	}

	if err := offA(); err != nil {
		t.Fatal(err)
	}
	if got := assemble(t, svc, "a").Text(); got != "global persona\n\na's notes" {
		t.Errorf("scope a after removing its persona: %q", got)
	}
}

func TestInvalidRegistrations(t *testing.T) {
	h, svc := load(t, nil)
	for name, sec := range map[string]sp.Section{
		"empty name": {Render: func(context.Context, host.ScopeKey) (string, error) { return "", nil }},
		"nil render": {Name: "x"},
	} {
		if _, err := svc.Section(h.Root(), sec); !errors.Is(err, sp.ErrInvalid) {
			t.Errorf("%s: err = %v, want ErrInvalid", name, err)
		}
	}
	if _, err := svc.Tools(h.Root(), nil); !errors.Is(err, sp.ErrInvalid) {
		t.Errorf("nil contributor: err = %v, want ErrInvalid", err)
	}
	if st := svc.Stats(); st.Contributors != 0 || len(st.Sections) != 0 {
		t.Errorf("failed registrations left %+v", st)
	}
}

func TestContributorsConcatenateInRegistrationOrder(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), tools("b1", "b2")))
	must[host.Disposer](t)(svc.Tools(h.Root(), tools("a1")))
	a := scope(t, h, "a")
	must[host.Disposer](t)(svc.Tools(a, tools("scoped")))
	if got, want := assemble(t, svc, "a").ToolNames(), []string{"b1", "b2", "a1", "scoped"}; !reflect.DeepEqual(got, want) {
		t.Errorf("scope a tools = %v, want %v", got, want)
	}
	if got, want := assemble(t, svc, "b").ToolNames(), []string{"b1", "b2", "a1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("scope b tools = %v, want %v (a scoped contributor contributes to its scope only)", got, want)
	}
}

func TestContributorErrorRejectsAssembly(t *testing.T) {
	errNoRuntime := errors.New("Code Mode needs a code runtime with language typescript; load one or set tools mode to native")
	cases := []struct {
		name  string
		fn    sp.ToolContributor
		is    error
		inMsg string
	}{
		{"error", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{}, errNoRuntime
		}, errNoRuntime, "load one or set tools mode to native"},
		{"panic", func(context.Context, host.ScopeKey) (sp.Contribution, error) { panic(errNoRuntime) }, errNoRuntime, "panicked"},
		{"invalid schema", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{Tools: []sp.ToolSchema{{Name: "x", Parameters: json.RawMessage(`[1]`)}}}, nil
		}, sp.ErrInvalid, "JSON object"},
		{"invalid JSON", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{Tools: []sp.ToolSchema{{Name: "x", Parameters: json.RawMessage(`{`)}}}, nil
		}, sp.ErrInvalid, "not valid JSON"},
		{"duplicate across contributors", tools("first"), sp.ErrDuplicate, "also contributed by tool contributor #1"},
		{"duplicate within one", tools("x", "x"), sp.ErrDuplicate, "contributed twice"},
		{"protects an absent tool", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{Protected: []string{"run_code"}}, nil
		}, sp.ErrInvalid, `protects tool "run_code"`},
		{"protects an absent section", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{ProtectedSections: []string{"tools:sdk"}}, nil
		}, sp.ErrInvalid, `protects section "tools:sdk"`},
		{"section without render", func(context.Context, host.ScopeKey) (sp.Contribution, error) {
			return sp.Contribution{Sections: []sp.Section{{Name: "s"}}}, nil
		}, sp.ErrInvalid, "no Render"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, svc := load(t, nil)
			must[host.Disposer](t)(svc.Tools(h.Root(), tools("first")))
			f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("tools", nil, func(c *host.Context) error {
				_, err := svc.Tools(c, tc.fn)
				return err
			}), nil))
			if err := f.Err(); err != nil {
				t.Fatal(err)
			}
			p, err := svc.Assemble(context.Background(), "agent-1")
			if p != nil || err == nil {
				t.Fatalf("Assemble = %v, %v; want a rejection", p, err)
			}
			if !errors.Is(err, tc.is) {
				t.Errorf("err = %v; want errors.Is %v", err, tc.is)
			}
			var ae *sp.AssemblyError
			if !errors.As(err, &ae) || ae.Scope != "agent-1" {
				t.Errorf("err = %#v; want an *AssemblyError for scope agent-1", err)
			}
			var ce *sp.ContributorError
			if !errors.As(err, &ce) || ce.ID != 2 || ce.Plugin != "tools" {
				t.Errorf("err = %v; want a *ContributorError for contributor #2 of plugin tools, got %+v", err, ce)
			}
			if !strings.Contains(err.Error(), tc.inMsg) || !strings.Contains(err.Error(), `scope "agent-1"`) {
				t.Errorf("err = %q; want it to contain %q and the scope", err, tc.inMsg)
			}
		})
	}
}

func TestRenderFailureRejectsAssembly(t *testing.T) {
	h, svc := load(t, nil)
	boom := errors.New("boom")
	must[host.Disposer](t)(svc.Section(h.Root(), sp.Section{Name: "bad", Render: func(context.Context, host.ScopeKey) (string, error) { return "", boom }}))
	if _, err := svc.Assemble(context.Background(), ""); !errors.Is(err, boom) || !strings.Contains(err.Error(), `section "bad"`) {
		t.Errorf("err = %v; want boom naming the section", err)
	}
}

func TestAssemblyCancelled(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), tools("x")))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.Assemble(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v; want context.Canceled", err)
	}
}

func TestListenersAddAndRemoveSchemas(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), tools("bash", "read_file", "write_file")))
	must[host.Disposer](t)(svc.Section(h.Root(), sp.StaticSection("persona", 0, "P")))
	// Global listener: drops write_file everywhere, adds a "todo" tool and a section.
	off := must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft {
		d = without(d, "write_file")
		d.Tools = append(d.Tools, tool("todo"))
		d.Sections = append(d.Sections, sp.Rendered{Name: "extra", Order: -5, Text: "X"})
		return d
	})))
	// Scoped listener: drops bash for scope "reader" only.
	reader := scope(t, h, "reader")
	must[host.Disposer](t)(host.OnWaterfall(reader, sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft {
		return without(d, "bash")
	})))

	p := assemble(t, svc, "reader")
	if got, want := p.ToolNames(), []string{"read_file", "todo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("reader tools = %v, want %v", got, want)
	}
	if got, want := p.Text(), "X\n\nP"; got != want {
		t.Errorf("reader text = %q, want %q (listener sections sorted by Order)", got, want)
	}
	if got, want := assemble(t, svc, "writer").ToolNames(), []string{"bash", "read_file", "todo"}; !reflect.DeepEqual(got, want) {
		t.Errorf("writer tools = %v, want %v", got, want)
	}
	if err := off(); err != nil {
		t.Fatal(err)
	}
	if got, want := assemble(t, svc, "writer").ToolNames(), []string{"bash", "read_file", "write_file"}; !reflect.DeepEqual(got, want) {
		t.Errorf("after removing the listener: %v, want %v", got, want)
	}
}

func TestListenerMutationsCannotCorruptTheBase(t *testing.T) {
	h, svc := load(t, nil)
	contributed := []sp.ToolSchema{tool("bash")}
	must[host.Disposer](t)(svc.Tools(h.Root(), func(context.Context, host.ScopeKey) (sp.Contribution, error) {
		return sp.Contribution{Tools: contributed}, nil
	}))
	// The outer listener vandalizes its payload in place, then delegates.
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent,
		func(ctx context.Context, p sp.Draft, next events.Next[sp.Draft]) (sp.Draft, error) {
			p.Tools[0].Name = "hacked"
			p.Tools[0].Parameters[2] = 'X'
			return next(ctx)
		}))
	// The inner listener mutates what next returned, then calls next again.
	var second sp.Draft
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent,
		func(ctx context.Context, _ sp.Draft, next events.Next[sp.Draft]) (sp.Draft, error) {
			d, _ := next(ctx)
			d.Tools[0].Description = "changed"
			d.Tools[0].Parameters[2] = 'Y'
			var err error
			second, err = next(ctx)
			return second, err
		}))
	p := assemble(t, svc, "")
	want := tool("bash")
	if len(p.Tools) != 1 || p.Tools[0].Name != want.Name || p.Tools[0].Description != want.Description || string(p.Tools[0].Parameters) != string(want.Parameters) {
		t.Errorf("tools = %+v, want the contributed %+v", p.Tools, want)
	}
	if string(contributed[0].Parameters) != string(want.Parameters) {
		t.Errorf("the contributor's own slice was mutated: %s", contributed[0].Parameters)
	}
	// The returned prompt is the caller's: mutating it changes nothing.
	p.Tools[0].Parameters[2] = 'Z'
	second.Tools[0].Name = "late"
	if got := assemble(t, svc, ""); string(got.Tools[0].Parameters) != string(want.Parameters) || got.Tools[0].Name != "bash" {
		t.Errorf("next assembly saw a mutation: %+v", got.Tools)
	}
}

func TestListenerErrorRejectsAssembly(t *testing.T) {
	h, svc := load(t, nil)
	boom := errors.New("boom")
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent,
		func(ctx context.Context, _ sp.Draft, next events.Next[sp.Draft]) (sp.Draft, error) {
			return sp.Draft{}, boom
		}))
	if _, err := svc.Assemble(context.Background(), ""); !errors.Is(err, boom) {
		t.Errorf("err = %v; want boom", err)
	}
}

func TestListenerDuplicateOrInvalidRejects(t *testing.T) {
	for name, edit := range map[string]func(sp.Draft) sp.Draft{
		"duplicate tool": func(d sp.Draft) sp.Draft { d.Tools = append(d.Tools, tool("bash")); return d },
		"duplicate section": func(d sp.Draft) sp.Draft {
			d.Sections = append(d.Sections, sp.Rendered{Name: "persona", Text: "again"})
			return d
		},
		"unnamed tool": func(d sp.Draft) sp.Draft { d.Tools = append(d.Tools, sp.ToolSchema{}); return d },
	} {
		t.Run(name, func(t *testing.T) {
			h, svc := load(t, nil)
			must[host.Disposer](t)(svc.Tools(h.Root(), tools("bash")))
			must[host.Disposer](t)(svc.Section(h.Root(), sp.StaticSection("persona", 0, "P")))
			must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent, listener(edit)))
			_, err := svc.Assemble(context.Background(), "")
			if !errors.Is(err, sp.ErrDuplicate) && !errors.Is(err, sp.ErrInvalid) {
				t.Errorf("err = %v; want ErrDuplicate or ErrInvalid", err)
			}
		})
	}
}

// codeMode is what the tool registry contributes in code mode: the
// protected run_code transport and the protected tools:sdk section.
func codeMode(sdk func(host.ScopeKey) string) sp.ToolContributor {
	return func(_ context.Context, s host.ScopeKey) (sp.Contribution, error) {
		return sp.Contribution{
			Tools: []sp.ToolSchema{{Name: "run_code", Description: "Run a TypeScript program.",
				Parameters: json.RawMessage(`{"type":"object","properties":{"code":{"type":"string"}},"required":["code"]}`)}},
			Sections: []sp.Section{{Name: "tools:sdk", Order: 150, Render: func(_ context.Context, s host.ScopeKey) (string, error) {
				return sdk(s), nil
			}}},
			Protected:         []string{"run_code"},
			ProtectedSections: []string{"tools:sdk"},
			Reserved:          []string{"run_code"},
		}, nil
	}
}

func sdkText(s host.ScopeKey) string { return "declare const tools: {} // " + string(s) }

func TestC2CodeModeAssemblesExactlyRunCode(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), codeMode(sdkText)))
	p := assemble(t, svc, "a")
	if got := p.ToolNames(); !reflect.DeepEqual(got, []string{"run_code"}) {
		t.Errorf("tools = %v, want [run_code]", got)
	}
	if got := sectionNames(p); !reflect.DeepEqual(got, []string{"tools:sdk"}) || p.Sections[0].Text != sdkText("a") {
		t.Errorf("sections = %+v, want the SDK for scope a", p.Sections)
	}
}

func TestC2ProtectedToolsAndSectionsRestoredAfterListeners(t *testing.T) {
	edits := map[string]func(sp.Draft) sp.Draft{
		"remove all": func(d sp.Draft) sp.Draft {
			d.Tools, d.Sections = nil, nil
			d.Tools = append(d.Tools, tool("extra"))
			return d
		},
		"replace": func(d sp.Draft) sp.Draft {
			for i := range d.Tools {
				if d.Tools[i].Name == "run_code" {
					d.Tools[i].Description = "hijacked"
					d.Tools[i].Parameters = json.RawMessage(`{}`)
				}
			}
			for i := range d.Sections {
				d.Sections[i].Text = "hijacked"
				d.Sections[i].Order = -1
			}
			d.Tools = append(d.Tools, tool("extra"))
			return d
		},
		"duplicate protected": func(d sp.Draft) sp.Draft {
			d.Tools = append(d.Tools, sp.ToolSchema{Name: "run_code"}, tool("extra"))
			d.Sections = append(d.Sections, sp.Rendered{Name: "tools:sdk", Text: "mine"})
			return d
		},
		"short-circuit": nil,
	}
	for name, edit := range edits {
		t.Run(name, func(t *testing.T) {
			h, svc := load(t, nil)
			must[host.Disposer](t)(svc.Tools(h.Root(), codeMode(sdkText)))
			want := assemble(t, svc, "a")
			fn := listener(edit)
			if edit == nil { // not calling next at all
				fn = func(context.Context, sp.Draft, events.Next[sp.Draft]) (sp.Draft, error) {
					return sp.Draft{Tools: []sp.ToolSchema{tool("extra")}}, nil
				}
			}
			must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent, fn))
			p := assemble(t, svc, "a")
			if got := p.ToolNames(); !reflect.DeepEqual(got, []string{"run_code", "extra"}) {
				t.Errorf("tools = %v, want run_code restored and the unrelated addition kept", got)
			}
			if !reflect.DeepEqual(p.Tools[0], want.Tools[0]) {
				t.Errorf("run_code = %+v, want the contributed %+v", p.Tools[0], want.Tools[0])
			}
			if !reflect.DeepEqual(p.Sections, want.Sections) {
				t.Errorf("sections = %+v, want the contributed %+v", p.Sections, want.Sections)
			}
		})
	}
}

func TestC2ProtectedToolKeepsItsPositionWhenRestored(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), tools("bash", "read_file")))
	must[host.Disposer](t)(svc.Tools(h.Root(), codeMode(sdkText)))
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft {
		return without(d, "run_code", "read_file")
	})))
	if got, want := assemble(t, svc, "").ToolNames(), []string{"bash", "run_code"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tools = %v, want %v", got, want)
	}
}

func TestC2ScopedSectionCannotShadowProtectedSection(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), codeMode(sdkText)))
	a := scope(t, h, "a")
	// Registration succeeds (protection is a property of the assembly) ...
	must[host.Disposer](t)(svc.Section(a, sp.StaticSection("tools:sdk", 150, "fake SDK")))
	// ... but assembling scope a fails loudly, naming the section.
	_, err := svc.Assemble(context.Background(), "a")
	if !errors.Is(err, sp.ErrProtected) || !strings.Contains(err.Error(), `"tools:sdk"`) {
		t.Errorf("err = %v; want ErrProtected naming tools:sdk", err)
	}
	// Other scopes are unaffected.
	if p := assemble(t, svc, "b"); p.Sections[0].Text != sdkText("b") {
		t.Errorf("scope b sections = %+v", p.Sections)
	}
	// A global section of the same name as a contributed one is a clash.
	must[host.Disposer](t)(svc.Section(h.Root(), sp.StaticSection("tools:sdk", 1, "global")))
	if _, err := svc.Assemble(context.Background(), "b"); !errors.Is(err, sp.ErrDuplicate) {
		t.Errorf("err = %v; want ErrDuplicate", err)
	}
}

func TestScopedSectionMayShadowUnprotectedContributedSection(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), func(context.Context, host.ScopeKey) (sp.Contribution, error) {
		return sp.Contribution{Sections: []sp.Section{sp.StaticSection("hint", 0, "contributed")}}, nil
	}))
	must[host.Disposer](t)(svc.Section(scope(t, h, "a"), sp.StaticSection("hint", 0, "scoped")))
	if got := assemble(t, svc, "a").Text(); got != "scoped" {
		t.Errorf("scope a: %q", got)
	}
	if got := assemble(t, svc, "b").Text(); got != "contributed" {
		t.Errorf("scope b: %q", got)
	}
}

func TestC3ToolOrder(t *testing.T) {
	mode := "native"
	var mu sync.Mutex
	registry := func(ctx context.Context, s host.ScopeKey) (sp.Contribution, error) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch m {
		case "code":
			return codeMode(sdkText)(ctx, s)
		case "both":
			c, _ := codeMode(sdkText)(ctx, s)
			c.Tools = append([]sp.ToolSchema{tool("bash"), tool("read_file")}, c.Tools...)
			return c, nil
		}
		return sp.Contribution{Tools: []sp.ToolSchema{tool("bash"), tool("read_file"), tool("grep")}, Reserved: []string{"run_code"}}, nil
	}
	setMode := func(m string) { mu.Lock(); mode = m; mu.Unlock() }

	h, svc := load(t, sp.Config{ToolOrder: []string{"run_code", "read_file"}})
	must[host.Disposer](t)(svc.Tools(h.Root(), registry))

	// native: run_code is reserved (valid, absent), read_file goes first.
	if got, want := assemble(t, svc, "a").ToolNames(), []string{"read_file", "bash", "grep"}; !reflect.DeepEqual(got, want) {
		t.Errorf("native: %v, want %v", got, want)
	}
	setMode("both")
	if got, want := assemble(t, svc, "a").ToolNames(), []string{"run_code", "read_file", "bash"}; !reflect.DeepEqual(got, want) {
		t.Errorf("both: %v, want %v", got, want)
	}
	// code: read_file is no longer contributed, so the configured order is stale.
	setMode("code")
	_, err := svc.Assemble(context.Background(), "a")
	if !errors.Is(err, sp.ErrToolOrder) {
		t.Fatalf("code: err = %v; want ErrToolOrder", err)
	}
	for _, s := range []string{`"read_file"`, "remove it from toolOrder", `scope "a"`, `"run_code"`} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("code: err = %q; want it to mention %s", err, s)
		}
	}

	// A listener-added tool is a valid toolOrder target; a name nobody
	// contributes or reserves is not.
	h2, svc2 := load(t, sp.Config{ToolOrder: []string{"todo", "nope"}})
	must[host.Disposer](t)(svc2.Tools(h2.Root(), tools("bash")))
	must[host.Disposer](t)(host.OnWaterfall(h2.Root(), sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft {
		d.Tools = append(d.Tools, tool("todo"))
		return d
	})))
	_, err = svc2.Assemble(context.Background(), "")
	if !errors.Is(err, sp.ErrToolOrder) || !strings.Contains(err.Error(), `"nope"`) || strings.Contains(err.Error(), `names "todo"`) {
		t.Errorf("err = %v; want ErrToolOrder for nope only", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for name, cfg := range map[string]any{
		"empty name": sp.Config{ToolOrder: []string{"a", ""}},
		"duplicate":  &sp.Config{ToolOrder: []string{"a", "b", "a"}},
		"wrong type": map[string]any{"toolOrder": []string{"a"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := host.New()
			defer h.Close()
			f, err := h.Root().Plugin(sp.Plugin, cfg)
			if f.State() != host.Failed || !errors.Is(err, sp.ErrInvalid) {
				t.Errorf("state %v, err %v; want Failed with ErrInvalid", f.State(), err)
			}
			if _, ok := sp.ServiceKey.Lookup(h.Root()); ok {
				t.Error("service provided despite invalid config")
			}
		})
	}
	for name, cfg := range map[string]any{"nil": nil, "nil pointer": (*sp.Config)(nil), "pointer": &sp.Config{ToolOrder: []string{"x"}}} {
		t.Run(name, func(t *testing.T) {
			h, svc := load(t, cfg)
			if _, err := svc.Tools(h.Root(), tools("a", "x")); err != nil {
				t.Fatal(err)
			}
			want := []string{"a", "x"}
			if name == "pointer" {
				want = []string{"x", "a"} // the configured ToolOrder applies
			}
			if got := assemble(t, svc, "").ToolNames(); !reflect.DeepEqual(got, want) {
				t.Errorf("tools = %v, want %v", got, want)
			}
		})
	}
}

func TestDisposalThroughFiberRemovesEverything(t *testing.T) {
	h, svc := load(t, nil)
	before := h.Stats()
	a := scope(t, h, "a")
	var offs []host.Disposer
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("feeder", nil, func(c *host.Context) error {
		for _, reg := range []func() (host.Disposer, error){
			func() (host.Disposer, error) { return svc.Tools(c, tools("bash")) },
			func() (host.Disposer, error) { return svc.Section(c, sp.StaticSection("persona", 0, "P")) },
			func() (host.Disposer, error) {
				return host.OnWaterfall(c, sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft { return d }))
			},
		} {
			off, err := reg()
			if err != nil {
				return err
			}
			offs = append(offs, off)
		}
		return nil
	}), nil))
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	offScoped := must[host.Disposer](t)(svc.Section(a, sp.StaticSection("persona", 0, "scoped")))
	must[host.Disposer](t)(svc.Tools(a, tools("scoped_tool")))

	kinds := func(es []host.EffectInfo) []host.EffectKind {
		var out []host.EffectKind
		for _, e := range es {
			out = append(out, e.Kind)
		}
		return out
	}
	if got, want := kinds(f.Effects()), []host.EffectKind{sp.EffectContributor, sp.EffectSection, host.EffectListener}; !reflect.DeepEqual(got, want) {
		t.Errorf("feeder effects = %v, want %v", got, want)
	}
	if st := svc.Stats(); st.Contributors != 2 || st.Sections[""] != 1 || st.Sections["a"] != 1 {
		t.Errorf("stats = %+v", st)
	}
	if got := assemble(t, svc, "a"); got.Text() != "scoped" || !reflect.DeepEqual(got.ToolNames(), []string{"bash", "scoped_tool"}) {
		t.Errorf("before dispose: %q %v", got.Text(), got.ToolNames())
	}

	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if err := a.Fiber().Dispose(); err != nil {
		t.Fatal(err)
	}
	if es := f.Effects(); len(es) != 0 {
		t.Errorf("feeder effects after dispose = %v", es)
	}
	if es := a.Fiber().Effects(); len(es) != 0 {
		t.Errorf("scope effects after dispose = %v", es)
	}
	if st := svc.Stats(); st.Contributors != 0 || len(st.Sections) != 0 {
		t.Errorf("stats after dispose = %+v, want empty", st)
	}
	after := h.Stats()
	if !reflect.DeepEqual(before, after) {
		t.Errorf("host stats after dispose = %+v, want %+v", after, before)
	}
	if p := assemble(t, svc, "a"); len(p.Tools) != 0 || len(p.Sections) != 0 {
		t.Errorf("after dispose: %+v", p)
	}
	// Disposers are idempotent, also after the fiber's disposal.
	for _, off := range append(offs, offScoped) {
		if err := off(); err != nil {
			t.Errorf("disposer after dispose: %v", err)
		}
	}
	// A disposed fiber refuses new registrations.
	if _, err := svc.Tools(a, tools("x")); !errors.Is(err, host.ErrFiberClosed) {
		t.Errorf("Tools on a disposed scope: %v; want ErrFiberClosed", err)
	}
	if _, err := svc.Section(a, sp.StaticSection("x", 0, "x")); !errors.Is(err, host.ErrFiberClosed) {
		t.Errorf("Section on a disposed scope: %v; want ErrFiberClosed", err)
	}
	if st := svc.Stats(); st.Contributors != 0 || len(st.Sections) != 0 {
		t.Errorf("refused registrations left %+v", st)
	}
}

func TestServiceClosesWithItsPlugin(t *testing.T) {
	h := host.New()
	defer h.Close()
	f := must[*host.Fiber](t)(h.Root().Plugin(sp.Plugin, nil))
	svc := must[*sp.Service](t)(sp.ServiceKey.Get(h.Root()))
	// A plugin injecting the service re-registers against the new one on restart.
	starts := 0
	must[*host.Fiber](t)(h.Root().Plugin(host.Define("tools", []host.ServiceKey{sp.ServiceKey}, func(c *host.Context) error {
		starts++
		s, err := sp.ServiceKey.Get(c)
		if err != nil {
			return err
		}
		_, err = s.Tools(c, tools("bash"))
		return err
	}), nil))
	if err := f.Update(sp.Config{ToolOrder: []string{"bash"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Assemble(context.Background(), ""); !errors.Is(err, sp.ErrClosed) {
		t.Errorf("old service after restart: %v; want ErrClosed", err)
	}
	if _, err := svc.Section(h.Root(), sp.StaticSection("x", 0, "x")); !errors.Is(err, sp.ErrClosed) {
		t.Errorf("old service Section: %v; want ErrClosed", err)
	}
	cur := must[*sp.Service](t)(sp.ServiceKey.Get(h.Root()))
	if got := assemble(t, cur, "").ToolNames(); starts != 2 || !reflect.DeepEqual(got, []string{"bash"}) {
		t.Errorf("starts = %d, tools = %v", starts, got)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if _, ok := sp.ServiceKey.Lookup(h.Root()); ok {
		t.Error("service still provided after dispose")
	}
}

func TestAssembleEventDeclared(t *testing.T) {
	h, _ := load(t, nil)
	var found *events.Descriptor
	for _, d := range h.Events() {
		if d.Name == "system-prompt/assemble" {
			found = d
		}
	}
	if found == nil || found.Mode != events.ModeWaterfall || !found.Filtered || found.FailurePolicy() != events.Propagate {
		t.Errorf("descriptor = %+v", found)
	}
}

func TestConcurrentAssemblyAndRegistration(t *testing.T) {
	h, svc := load(t, nil)
	must[host.Disposer](t)(svc.Tools(h.Root(), codeMode(sdkText)))
	must[host.Disposer](t)(host.OnWaterfall(h.Root(), sp.AssembleEvent, listener(func(d sp.Draft) sp.Draft {
		return without(d, "run_code", "tools:sdk")
	})))
	const workers, rounds = 4, 50
	var wg sync.WaitGroup
	errs := make(chan error, 2*workers*rounds)
	for w := range workers {
		key := host.ScopeKey(fmt.Sprintf("agent-%d", w))
		wg.Go(func() {
			for i := range rounds {
				c, err := h.Root().Scope(key)
				if err != nil {
					errs <- err
					return
				}
				name := fmt.Sprintf("t%d_%d", w, i)
				if _, err := svc.Tools(c, tools(name)); err != nil {
					errs <- err
				}
				off, err := svc.Section(h.Root(), sp.StaticSection("s-"+name, i, "x"))
				if err != nil {
					errs <- err
				}
				if _, err := svc.Section(c, sp.StaticSection("own", 0, string(key))); err != nil {
					errs <- err
				}
				_ = off()
				_ = c.Fiber().Dispose()
			}
		})
		wg.Go(func() {
			for range rounds {
				p, err := svc.Assemble(context.Background(), key)
				if err != nil {
					errs <- err
					continue
				}
				if len(p.Tools) == 0 || p.Tools[0].Name != "run_code" || !slices.Contains(sectionNames(p), "tools:sdk") {
					errs <- fmt.Errorf("protection lost: %v %v", p.ToolNames(), sectionNames(p))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if st := svc.Stats(); st.Contributors != 1 || len(st.Sections) != 0 {
		t.Errorf("stats after all disposals = %+v", st)
	}
}
