package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestR1_RegisterStoresFrozenSnapshot(t *testing.T) {
	e := newEnv(t)
	params := []byte(`{"type":"object", "properties":{"a":{"type":"string"}}}`)
	def := echo("snap", "original")
	def.Parameters = params
	def.Timeout = time.Second
	mustRegister(t, e.reg, e.root, def)

	// Change everything the caller still holds.
	copy(params, `{"type":"XXXXXX"`)
	def.Description = "changed"
	def.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("replaced")}}, nil
	}
	tool, ok := e.reg.Get("snap", "")
	if !ok {
		t.Fatal("not registered")
	}
	if tool.Description() != "Replies original." {
		t.Errorf("description = %q", tool.Description())
	}
	if got := string(tool.Parameters()); got != `{"type":"object","properties":{"a":{"type":"string"}}}` {
		t.Errorf("parameters = %s (want the canonical snapshot)", got)
	}
	// The accessor returns a copy: changing it changes nothing.
	p := tool.Parameters()
	p[0] = 'X'
	if tool.Parameters()[0] != '{' {
		t.Error("Parameters() exposed the registry's bytes")
	}
	if res := e.reg.Execute(context.Background(), call("snap", `{}`)); text(res) != "original" {
		t.Errorf("dispatch ran %q, want the callback fixed at registration", text(res))
	}
}

func TestR1_ParametersMustBeLossless(t *testing.T) {
	e := newEnv(t)
	for name, params := range map[string]string{
		"duplicate key":  `{"type":"object","type":"array"}`,
		"not json":       `{"type":`,
		"not object":     `["type"]`,
		"big integer":    `{"maximum": 9007199254740993}`,
		"lone surrogate": `{"description":"\ud800"}`,
	} {
		d := echo("p", "x")
		d.Parameters = json.RawMessage(params)
		if _, err := e.reg.Register(e.root, d); !errors.Is(err, tools.ErrInvalidDefinition) {
			t.Errorf("%s: err = %v, want ErrInvalidDefinition", name, err)
		}
	}
	for name, d := range map[string]tools.Definition{
		"empty name":       {Description: "d", Execute: echo("a", "b").Execute},
		"space in name":    {Name: "a b", Description: "d", Execute: echo("a", "b").Execute},
		"no description":   {Name: "a", Execute: echo("a", "b").Execute},
		"no execute":       {Name: "a", Description: "d"},
		"negative timeout": {Name: "a", Description: "d", Execute: echo("a", "b").Execute, Timeout: -1},
	} {
		if _, err := e.reg.Register(e.root, d); !errors.Is(err, tools.ErrInvalidDefinition) {
			t.Errorf("%s: err = %v, want ErrInvalidDefinition", name, err)
		}
	}
	if got := e.reg.KnownNames(""); len(got) != 0 {
		t.Errorf("failed registrations left %v", got)
	}
}

func TestR2_AgentLayerShadowsGlobal(t *testing.T) {
	for _, scopedFirst := range []bool{false, true} {
		e := newEnv(t)
		a1 := e.scope(t, "agent-1")
		e.scope(t, "agent-2")
		var offScoped host.Disposer
		if scopedFirst {
			offScoped = mustRegister(t, e.reg, a1, echo("read", "scoped"))
			mustRegister(t, e.reg, e.root, echo("read", "global"))
		} else {
			mustRegister(t, e.reg, e.root, echo("read", "global"))
			offScoped = mustRegister(t, e.reg, a1, echo("read", "scoped"))
		}
		run := func(agent host.ScopeKey) string {
			c := call("read", `{}`)
			c.Agent = agent
			return text(e.reg.Execute(context.Background(), c))
		}
		if got := run("agent-1"); got != "scoped" {
			t.Errorf("scopedFirst=%v: agent-1 ran %q", scopedFirst, got)
		}
		if got := run("agent-2"); got != "global" {
			t.Errorf("agent-2 ran %q", got)
		}
		if got := run(""); got != "global" {
			t.Errorf("no agent ran %q", got)
		}
		if tl, _ := e.reg.Get("read", "agent-1"); tl.Layer() != "agent-1" {
			t.Errorf("Get layer = %q", tl.Layer())
		}
		_ = offScoped()
		if got := run("agent-1"); got != "global" {
			t.Errorf("after disposing the variant agent-1 ran %q", got)
		}
	}
}

func TestR3_DuplicateInLayerFailsNamingTheLayer(t *testing.T) {
	e := newEnv(t)
	a := e.scope(t, "agent-1")
	mustRegister(t, e.reg, e.root, echo("x", "1"))
	_, err := e.reg.Register(e.root, echo("x", "2"))
	if !errors.Is(err, tools.ErrDuplicate) || !strings.Contains(err.Error(), "global layer") {
		t.Errorf("global duplicate: %v", err)
	}
	mustRegister(t, e.reg, a, echo("x", "3"))
	_, err = e.reg.Register(a, echo("x", "4"))
	if !errors.Is(err, tools.ErrDuplicate) || !strings.Contains(err.Error(), `agent "agent-1"`) {
		t.Errorf("scoped duplicate: %v", err)
	}
	// The failed duplicate did not leave an effect behind.
	n := 0
	for _, ef := range a.Fiber().Effects() {
		if ef.Kind == tools.EffectTool {
			n++
		}
	}
	if n != 1 {
		t.Errorf("agent fiber owns %d tool effects, want 1", n)
	}
}

func visibleNames(r *tools.Registry, s host.ScopeKey) []string {
	var out []string
	for _, t := range r.Visible(s) {
		out = append(out, t.Name())
	}
	return out
}

func TestR4_Restrict(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"a", "b", "c", "d"} {
		mustRegister(t, e.reg, e.root, echo(n, n))
	}
	ag := e.scope(t, "agent")
	mustRegister(t, e.reg, ag, echo("own", "own"))

	t.Run("plain context fails", func(t *testing.T) {
		if _, err := e.reg.Restrict(e.root, tools.Restriction{Deny: []string{"a"}}); !errors.Is(err, tools.ErrNotScoped) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("empty filter fails", func(t *testing.T) {
		if _, err := e.reg.Restrict(ag, tools.Restriction{}); !errors.Is(err, tools.ErrEmptyRestriction) {
			t.Errorf("err = %v", err)
		}
		if _, err := e.reg.Restrict(ag, tools.Restriction{Allow: []string{}, Deny: []string{}}); !errors.Is(err, tools.ErrEmptyRestriction) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("unknown name fails", func(t *testing.T) {
		_, err := e.reg.Restrict(ag, tools.Restriction{Allow: []string{"a", "nope"}})
		if !errors.Is(err, tools.ErrUnknownName) || !strings.Contains(err.Error(), `"nope"`) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("allow, deny, intersect, lift independently, scoped bypass", func(t *testing.T) {
		offAllow, err := e.reg.Restrict(ag, tools.Restriction{Allow: []string{"a", "b", "c"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := visibleNames(e.reg, "agent"); !slices.Equal(got, []string{"a", "b", "c", "own"}) {
			t.Errorf("allow: %v", got)
		}
		// "d" is restricted away but still known: naming it is fine.
		offDeny, err := e.reg.Restrict(ag, tools.Restriction{Deny: []string{"b", "d"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := visibleNames(e.reg, "agent"); !slices.Equal(got, []string{"a", "c", "own"}) {
			t.Errorf("intersection: %v", got)
		}
		c := call("b", `{}`)
		c.Agent = "agent"
		if res := e.reg.Execute(context.Background(), c); code(res) != tools.CodeUnknownTool {
			t.Errorf("restricted tool executed: %+v", res)
		}
		if got := visibleNames(e.reg, "other"); len(got) != 4 {
			t.Errorf("other agent affected: %v", got)
		}
		_ = offAllow()
		if got := visibleNames(e.reg, "agent"); !slices.Equal(got, []string{"a", "c", "own"}) {
			t.Errorf("after lifting allow: %v", got)
		}
		_ = offDeny()
		if got := visibleNames(e.reg, "agent"); !slices.Equal(got, []string{"a", "b", "c", "d", "own"}) {
			t.Errorf("after lifting both: %v", got)
		}
	})
	t.Run("deny admits later globals, allow excludes them", func(t *testing.T) {
		offDeny, err := e.reg.Restrict(ag, tools.Restriction{Deny: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		mustRegister(t, e.reg, e.root, echo("late1", "x"))
		if _, ok := e.reg.Get("late1", "agent"); !ok {
			t.Error("deny mask hid a later global")
		}
		_ = offDeny()
		offAllow, err := e.reg.Restrict(ag, tools.Restriction{Allow: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		defer offAllow()
		mustRegister(t, e.reg, e.root, echo("late2", "x"))
		if _, ok := e.reg.Get("late2", "agent"); ok {
			t.Error("allow mask admitted a later global")
		}
		// A scoped registration bypasses the allow mask.
		mustRegister(t, e.reg, ag, echo("late2", "scoped"))
		if tl, ok := e.reg.Get("late2", "agent"); !ok || tl.Layer() != "agent" {
			t.Error("scoped registration did not bypass the restriction")
		}
	})
}

func TestR5_ViewsAgreeWithExecute(t *testing.T) {
	e := newEnv(t)
	ag := e.scope(t, "agent")
	for _, n := range []string{"a", "b", "c"} {
		d := echo(n, "g-"+n)
		d.Timeout = time.Minute
		mustRegister(t, e.reg, e.root, d)
	}
	mustRegister(t, e.reg, ag, echo("b", "s-b"))
	mustRegister(t, e.reg, ag, echo("z", "s-z"))
	must2(t)(e.reg.Restrict(ag, tools.Restriction{Deny: []string{"a"}}))

	for _, scope := range []host.ScopeKey{"", "agent", "other"} {
		vis := visibleNames(e.reg, scope)
		var sch []string
		for _, s := range e.reg.Schemas(scope) {
			sch = append(sch, s.Name)
		}
		if !slices.Equal(vis, sch) {
			t.Errorf("%q: visible %v, schemas %v", scope, vis, sch)
		}
		known := e.reg.KnownNames(scope)
		for _, n := range known {
			tl, ok := e.reg.Get(n, scope)
			c := call(n, `{}`)
			c.Agent = scope
			res := e.reg.Execute(context.Background(), c)
			if ok != slices.Contains(vis, n) {
				t.Errorf("%q/%s: Get ok=%v, visible %v", scope, n, ok, vis)
			}
			if !ok {
				if code(res) != tools.CodeUnknownTool {
					t.Errorf("%q/%s: hidden tool executed: %+v", scope, n, res)
				}
				continue
			}
			want := "g-" + n
			if tl.Layer() != "" {
				want = "s-" + n
			}
			if text(res) != want {
				t.Errorf("%q/%s: executed %q, Get resolved layer %q", scope, n, text(res), tl.Layer())
			}
		}
	}
	if got := e.reg.KnownNames("agent"); !slices.Equal(got, []string{"a", "b", "c", "z"}) {
		t.Errorf("known names = %v", got)
	}
	b, _ := json.Marshal(e.reg.Schemas(""))
	if strings.Contains(string(b), "imeout") || strings.Contains(string(b), "xecute") {
		t.Errorf("schemas leak: %s", b)
	}
	if string(b) != `[{"name":"a","description":"Replies g-a.","parameters":{"type":"object","properties":{"x":{"type":"number"}}}},{"name":"b","description":"Replies g-b.","parameters":{"type":"object","properties":{"x":{"type":"number"}}}},{"name":"c","description":"Replies g-c.","parameters":{"type":"object","properties":{"x":{"type":"number"}}}}]` {
		t.Errorf("schemas = %s", b)
	}
}

func TestR5_NativePromptMatchesWhatExecuteDispatches(t *testing.T) {
	e := newEnv(t)
	ag := e.scope(t, "agent")
	mustRegister(t, e.reg, e.root, echo("a", "a"))
	mustRegister(t, e.reg, e.root, echo("b", "b"))
	mustRegister(t, e.reg, ag, echo("c", "c"))
	must2(t)(e.reg.Restrict(ag, tools.Restriction{Deny: []string{"b"}}))
	sp, err := systemprompt.ServiceKey.Get(e.root)
	if err != nil {
		t.Fatal(err)
	}
	p, err := sp.Assemble(context.Background(), "agent")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.ToolNames(), visibleNames(e.reg, "agent"); !slices.Equal(got, want) || !slices.Equal(got, []string{"a", "c"}) {
		t.Errorf("prompt tools %v, visible %v", got, want)
	}
}

func TestR6_Guards(t *testing.T) {
	e := newEnv(t)
	ag := e.scope(t, "agent")
	ran := 0
	d := echo("t", "ok")
	d.Execute = func(context.Context, *tools.Execution) (tools.Output, error) {
		ran++
		return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
	}
	mustRegister(t, e.reg, e.root, d)
	var order []string
	// Registered scoped first: global still runs first.
	offScoped := must2(t)(e.reg.Guard(ag, func(x *tools.Execution) error {
		order = append(order, "scoped")
		return nil
	}))
	offGlobal := must2(t)(e.reg.Guard(e.root, func(x *tools.Execution) error {
		order = append(order, "global")
		if x.Arg("block").Bool() {
			return errors.New("blocked by policy")
		}
		return nil
	}))
	// A pre-execute listener that explicitly allows cannot override a guard.
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, _ *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		return tools.Allowed(), nil
	}))
	c := tools.Call{ID: "1", Name: "t", Arguments: json.RawMessage(`{"block":true}`), Agent: "agent"}
	res := e.reg.Execute(context.Background(), c)
	if code(res) != tools.CodeDenied || !strings.Contains(text(res), "blocked by policy") || ran != 0 {
		t.Errorf("guard denial: %+v ran=%d", res, ran)
	}
	if !slices.Equal(order, []string{"global"}) {
		t.Errorf("order = %v (a denial is final)", order)
	}
	order = nil
	c.Arguments = json.RawMessage(`{}`)
	if res := e.reg.Execute(context.Background(), c); res.IsError || ran != 1 {
		t.Errorf("allowed call: %+v", res)
	}
	if !slices.Equal(order, []string{"global", "scoped"}) {
		t.Errorf("order = %v, want global before scoped", order)
	}
	// The agent guard applies to that agent only.
	order = nil
	c.Agent = "other"
	e.reg.Execute(context.Background(), c)
	if !slices.Equal(order, []string{"global"}) {
		t.Errorf("other agent: order = %v", order)
	}
	// Panicking guard fails closed.
	offPanic := must2(t)(e.reg.Guard(e.root, func(*tools.Execution) error { panic("boom") }))
	if res := e.reg.Execute(context.Background(), c); code(res) != tools.CodeGuardFailed || ran != 2 {
		t.Errorf("panicking guard: %+v ran=%d", res, ran)
	}
	// Disposing one guard (twice: idempotent) leaves the others in force.
	_, _ = offPanic(), offPanic()
	order = nil
	c.Agent = "agent"
	if res := e.reg.Execute(context.Background(), c); res.IsError || !slices.Equal(order, []string{"global", "scoped"}) {
		t.Errorf("after disposing one guard: %+v, order = %v", res, order)
	}
	_, _ = offScoped(), offGlobal()
	order = nil
	e.reg.Execute(context.Background(), c)
	if len(order) != 0 {
		t.Errorf("disposed guards ran: %v", order)
	}
}

func must2(t testing.TB) func(host.Disposer, error) host.Disposer {
	return func(d host.Disposer, err error) host.Disposer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

func TestR7_ChangeNotificationsAreUnfiltered(t *testing.T) {
	e := newEnv(t)
	a := e.scope(t, "agent-a")
	b := e.scope(t, "agent-b")
	var mu sync.Mutex
	var got []string
	// Registered through another agent's scope: still sees everything.
	must2(t)(host.On(b, tools.Change, func(_ context.Context, n tools.ChangeNotice) error {
		mu.Lock()
		got = append(got, string(n.Kind)+":"+string(n.Scope)+":"+strings.Join(n.Names, ","))
		mu.Unlock()
		return nil
	}))
	off := mustRegister(t, e.reg, e.root, echo("g", "g"))
	offS := mustRegister(t, e.reg, a, echo("s", "s"))
	offR := must2(t)(e.reg.Restrict(a, tools.Restriction{Deny: []string{"g"}}))
	_, _, _ = offR(), offS(), off()
	_ = off() // idempotent: no second notification
	want := []string{"register::g", "register:agent-a:s", "restrict:agent-a:g", "unrestrict:agent-a:g", "unregister:agent-a:s", "unregister::g"}
	if !slices.Equal(got, want) {
		t.Errorf("notifications:\n got %v\nwant %v", got, want)
	}
}

func TestH2_DisposingThePluginFiberUndoesRegistrations(t *testing.T) {
	e := newEnv(t)
	before := e.h.Stats()
	var p host.Plugin = host.Define("my-tools", nil, func(c *host.Context) error {
		if _, err := e.reg.Register(c, echo("mine", "x")); err != nil {
			return err
		}
		if _, err := e.reg.Guard(c, func(*tools.Execution) error { return errors.New("no") }); err != nil {
			return err
		}
		ag, err := c.Scope("agent")
		if err != nil {
			return err
		}
		if _, err := e.reg.Register(ag, echo("scoped", "x")); err != nil {
			return err
		}
		_, err = e.reg.Restrict(ag, tools.Restriction{Allow: []string{"mine"}})
		return err
	})
	f, err := e.root.Plugin(p, nil)
	if err != nil || f.Err() != nil {
		t.Fatal(err, f.Err())
	}
	kinds := map[host.EffectKind]int{}
	var walk func([]host.EffectInfo)
	walk = func(es []host.EffectInfo) {
		for _, ef := range es {
			kinds[ef.Kind]++
			walk(ef.Children)
		}
	}
	walk(f.Effects())
	if kinds[tools.EffectTool] != 2 || kinds[tools.EffectGuard] != 1 || kinds[tools.EffectRestriction] != 1 {
		t.Errorf("effects = %v", kinds)
	}
	if res := e.reg.Execute(context.Background(), call("mine", `{}`)); code(res) != tools.CodeDenied {
		t.Errorf("guard not active: %+v", res)
	}
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if got := e.reg.KnownNames("agent"); len(got) != 0 {
		t.Errorf("left tools %v", got)
	}
	if res := e.reg.Execute(context.Background(), call("mine", `{}`)); code(res) != tools.CodeUnknownTool {
		t.Errorf("after dispose: %+v", res)
	}
	if after := e.h.Stats(); after.Fibers != before.Fibers || len(after.Services) != len(before.Services) {
		t.Errorf("stats before %+v after %+v", before, after)
	}
	// A disposed fiber's context refuses registrations.
	if _, err := e.reg.Register(f.Context(), echo("late", "x")); !errors.Is(err, host.ErrFiberClosed) {
		t.Errorf("register on disposed fiber: %v", err)
	}
}

func TestConfigModes(t *testing.T) {
	for _, m := range []tools.Mode{"", tools.Native, tools.Code, tools.Both} {
		if err := (tools.Config{Mode: m}).Validate(); err != nil {
			t.Errorf("%q: %v", m, err)
		}
	}
	err := tools.Config{Mode: "weird"}.Validate()
	if err == nil || !strings.Contains(err.Error(), "allowed: native, code, both") {
		t.Errorf("weird: %v", err)
	}
	h := host.New()
	defer h.Close()
	_, _ = h.Root().Plugin(systemprompt.Plugin, nil)
	f, _ := h.Root().Plugin(tools.Plugin, tools.Config{Mode: "weird"})
	if f.State() != host.Failed || !strings.Contains(f.Err().Error(), "allowed: native") {
		t.Errorf("state %v err %v", f.State(), f.Err())
	}
	// Active without a system prompt service, and still after one comes
	// (TestPluginContributesWhileAPromptServiceIsProvided has the rest).
	h2 := host.New()
	defer h2.Close()
	f2, _ := h2.Root().Plugin(tools.Plugin, nil)
	if f2.State() != host.Active {
		t.Errorf("state = %v, want active", f2.State())
	}
	_, _ = h2.Root().Plugin(systemprompt.Plugin, nil)
	if f2.State() != host.Active {
		t.Errorf("state = %v, want active", f2.State())
	}
}
