package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The PA series: per-agent presentation (tools.Registry.PresentAs), with Code Mode attached.

// assembled returns the tool names of scope's assembled prompt and whether it has the
// tools:sdk section (with its text).
func assembled(t *testing.T, e *codeEnv, scope host.ScopeKey) ([]string, string, bool) {
	t.Helper()
	p, err := e.sp.Assemble(context.Background(), scope)
	if err != nil {
		t.Fatal(err)
	}
	sdk, ok := sectionText(p, codemode.SDKSection)
	return p.ToolNames(), sdk, ok
}

// TestPA1_AnAgentPresentsAsCodeInANativeRegistry: in a native registry, an agent that declares
// code gets run_code and the tools:sdk section (declaring its end capabilities) in place of the
// native definitions, sees run_code through Visible and Get; the other agents and the global
// scope are unchanged, and the catalog (EndCapabilities) is the same for both.
func TestPA1_AnAgentPresentsAsCodeInANativeRegistry(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	mustRegister(t, e.reg, e.root, echo("read", "r"))
	mustRegister(t, e.reg, e.root, echo("bash", "b"))
	a := e.scope(t, "a")
	must2(t)(e.reg.PresentAs(a, tools.Code))

	if got, sdk, ok := assembled(t, e, "a"); !slices.Equal(got, []string{"run_code"}) || !ok || !strings.Contains(sdk, "read(args:") || !strings.Contains(sdk, "bash(args:") {
		t.Errorf("agent a: tools %v, sdk present %v:\n%s", got, ok, sdk)
	}
	for _, other := range []host.ScopeKey{"b", ""} {
		if got, _, ok := assembled(t, e, other); !slices.Equal(got, []string{"bash", "read"}) || ok {
			t.Errorf("scope %q: tools %v, sdk present %v; want the native tools only", other, got, ok)
		}
	}
	if m := e.reg.ModeOf("a"); m != tools.Code {
		t.Errorf("ModeOf(a) = %q", m)
	}
	if m := e.reg.ModeOf("b"); m != tools.Native || e.reg.Mode() != tools.Native {
		t.Errorf("ModeOf(b) = %q, Mode = %q", m, e.reg.Mode())
	}
	if got := names(e.reg.Visible("a")); !slices.Equal(got, []string{"bash", "read", "run_code"}) {
		t.Errorf("Visible(a) = %v", got)
	}
	if got := names(e.reg.Visible("b")); !slices.Equal(got, []string{"bash", "read"}) {
		t.Errorf("Visible(b) = %v", got)
	}
	if _, ok := e.reg.Get(codemode.RunCodeName, "a"); !ok {
		t.Error("Get(run_code, a) missing")
	}
	if _, ok := e.reg.Get(codemode.RunCodeName, "b"); ok {
		t.Error("Get(run_code, b) resolved for a native agent")
	}
	if ea, eb := names(e.reg.EndCapabilities("a")), names(e.reg.EndCapabilities("b")); !slices.Equal(ea, eb) || !slices.Equal(ea, []string{"bash", "read"}) {
		t.Errorf("EndCapabilities a %v, b %v", ea, eb)
	}
}

// TestPA2_UnderAnAgentsCodeADirectCallIsUnknown: an agent presented in code has its direct calls
// of end capabilities refused (UNKNOWN_TOOL with the run_code hint, the body never runs) and
// reaches them from its run_code programs, where policy still applies per tool; an agent
// presented natively calls them directly and cannot call run_code.
func TestPA2_UnderAnAgentsCodeADirectCallIsUnknown(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	ran := 0
	mustRegister(t, e.reg, e.root, toolFunc("read", func(context.Context, *tools.Execution) (tools.Output, error) {
		ran++
		return tools.Output{Content: []tools.Content{tools.Text("contents")}}, nil
	}))
	mustRegister(t, e.reg, e.root, echo("secret", "s"))
	a := e.scope(t, "a")
	must2(t)(e.reg.PresentAs(a, tools.Code))
	must2(t)(e.reg.Guard(a, func(x *tools.Execution) error {
		if x.Name() == "secret" {
			return tools.NewError(tools.CodeDenied, "NoSecret", "not for agent a")
		}
		return nil
	}))

	res := e.reg.Execute(ctx, tools.Call{ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`), Agent: "a"})
	if code(res) != tools.CodeUnknownTool || !strings.Contains(text(res), "await tools.read({...})") || ran != 0 {
		t.Errorf("a's direct call = %+v (ran %d)", res, ran)
	}
	res = e.reg.Execute(ctx, runCode("c2", `const s = await tools.read({}); try { await tools.secret({}) } catch (e) { return s + " " + e.code } return "allowed"`, "a"))
	if res.IsError || text(res) != "contents DENIED" || ran != 1 {
		t.Errorf("a's run_code = %+v (ran %d)", res, ran)
	}
	res = e.reg.Execute(ctx, tools.Call{ID: "c3", Name: "read", Arguments: json.RawMessage(`{}`), Agent: "b"})
	if res.IsError || text(res) != "contents" || ran != 2 {
		t.Errorf("b's direct call = %+v", res)
	}
	if res := e.reg.Execute(ctx, runCode("c4", "return 1", "b")); code(res) != tools.CodeUnknownTool {
		t.Errorf("b's run_code = %+v; want UNKNOWN_TOOL (b is native)", res)
	}
}

// TestPA3_AnAgentPresentsAsNativeOrBothInACodeRegistry: in a code registry, an agent that
// declares native gets the native definitions, no run_code and no tools:sdk, and calls the tools
// directly; one that declares both gets all three and calls directly; the others stay code.
func TestPA3_AnAgentPresentsAsNativeOrBothInACodeRegistry(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	mustRegister(t, e.reg, e.root, echo("read", "contents"))
	must2(t)(e.reg.PresentAs(e.scope(t, "n"), tools.Native))
	must2(t)(e.reg.PresentAs(e.scope(t, "b"), tools.Both))

	if got, _, ok := assembled(t, e, "n"); !slices.Equal(got, []string{"read"}) || ok {
		t.Errorf("native agent: tools %v, sdk %v", got, ok)
	}
	if got, sdk, ok := assembled(t, e, "b"); !slices.Equal(got, []string{"read", "run_code"}) || !ok || !strings.Contains(sdk, "read(args:") {
		t.Errorf("both agent: tools %v, sdk %v", got, ok)
	}
	if got, _, ok := assembled(t, e, "other"); !slices.Equal(got, []string{"run_code"}) || !ok {
		t.Errorf("code agent: tools %v, sdk %v", got, ok)
	}
	for _, agent := range []host.ScopeKey{"n", "b"} {
		if res := e.reg.Execute(ctx, tools.Call{ID: "d", Name: "read", Arguments: json.RawMessage(`{}`), Agent: agent}); res.IsError || text(res) != "contents" {
			t.Errorf("%s: direct call = %+v", agent, res)
		}
	}
	if res := e.reg.Execute(ctx, tools.Call{ID: "d", Name: "read", Arguments: json.RawMessage(`{}`), Agent: "other"}); code(res) != tools.CodeUnknownTool {
		t.Errorf("code agent's direct call = %+v", res)
	}
	if res := e.reg.Execute(ctx, runCode("r", "return await tools.read({})", "n")); code(res) != tools.CodeUnknownTool {
		t.Errorf("native agent's run_code = %+v", res)
	}
	if res := e.reg.Execute(ctx, runCode("r", "return await tools.read({})", "b")); res.IsError || text(res) != "contents" {
		t.Errorf("both agent's run_code = %+v", res)
	}
}

// TestPA4_OneDeclarationPerAgentScope: a second declaration in the same scope fails (through
// another context of the same scope too) and leaves the first in force; a plain context cannot
// declare one; a mode that is not one fails; the declaration ends with its disposer or its
// fiber, and the agent follows the registry's mode again.
func TestPA4_OneDeclarationPerAgentScope(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	a := e.scope(t, "a")
	off := must2(t)(e.reg.PresentAs(a, tools.Code))
	if _, err := e.reg.PresentAs(a, tools.Both); !errors.Is(err, tools.ErrPresentedTwice) {
		t.Errorf("second declaration: %v", err)
	}
	// A plugin of the agent's scope declares through a context of its own.
	var inner error
	if _, err := a.Plugin(host.Define("presenter", nil, func(c *host.Context) error {
		_, inner = e.reg.PresentAs(c, tools.Code)
		return nil
	}), nil); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(inner, tools.ErrPresentedTwice) {
		t.Errorf("second declaration through another context of the scope: %v", inner)
	}
	if m := e.reg.ModeOf("a"); m != tools.Code {
		t.Errorf("after the refused ones ModeOf(a) = %q", m)
	}
	if _, err := e.reg.PresentAs(e.root, tools.Code); !errors.Is(err, tools.ErrNotScoped) {
		t.Errorf("plain context: %v", err)
	}
	for _, m := range []tools.Mode{"", "codes", "CODE"} {
		if _, err := e.reg.PresentAs(e.scope(t, "z"), m); err == nil || !strings.Contains(err.Error(), "allowed: native, code, both") {
			t.Errorf("mode %q: %v", m, err)
		}
	}
	if m := e.reg.ModeOf("z"); m != tools.Native {
		t.Errorf("a refused mode was kept: %q", m)
	}
	if err := off(); err != nil {
		t.Fatal(err)
	}
	if m := e.reg.ModeOf("a"); m != tools.Native {
		t.Errorf("after its disposer ModeOf(a) = %q", m)
	}
	if got, _, ok := assembled(t, e, "a"); slices.Contains(got, "run_code") || ok {
		t.Errorf("after its disposer a still gets %v (sdk %v)", got, ok)
	}
	// Declared again, then its fiber goes.
	must2(t)(e.reg.PresentAs(a, tools.Both))
	if m := e.reg.ModeOf("a"); m != tools.Both {
		t.Errorf("declared again: %q", m)
	}
	if err := a.Fiber().Dispose(); err != nil {
		t.Fatal(err)
	}
	if m := e.reg.ModeOf("a"); m != tools.Native {
		t.Errorf("after its fiber ModeOf(a) = %q", m)
	}
}

// TestPA5_DeclarationsAreChanges: each declaration and its end emit tools/change (present,
// unpresent) for the agent's scope, so that views of the tool list (the MCP gateway's sessions)
// refresh.
func TestPA5_DeclarationsAreChanges(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	var got []tools.ChangeNotice
	must2(t)(host.On(e.root, tools.Change, func(_ context.Context, n tools.ChangeNotice) error {
		got = append(got, n)
		return nil
	}))
	off := must2(t)(e.reg.PresentAs(e.scope(t, "a"), tools.Code))
	_ = off()
	want := []tools.ChangeNotice{{Kind: tools.ChangePresent, Scope: "a"}, {Kind: tools.ChangeUnpresent, Scope: "a"}}
	if len(got) != 2 || got[0].Kind != want[0].Kind || got[0].Scope != "a" || got[1].Kind != want[1].Kind || got[1].Scope != "a" {
		t.Errorf("changes = %+v, want %+v", got, want)
	}
}

// TestPA6_CodeModeReservesRunCodeInEveryMode: with Code Mode attached, run_code is reserved in a
// native registry too (any agent may present as code): it cannot be registered, shadowed or
// named in a restriction, and Reserved lists it.
func TestPA6_CodeModeReservesRunCodeInEveryMode(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	mustRegister(t, e.reg, e.root, echo("read", "r"))
	a := e.scope(t, "a")
	if _, err := e.reg.Register(e.root, echo(codemode.RunCodeName, "mine")); !errors.Is(err, tools.ErrReserved) {
		t.Errorf("global register: %v", err)
	}
	if _, err := e.reg.Register(a, echo(codemode.RunCodeName, "mine")); !errors.Is(err, tools.ErrReserved) {
		t.Errorf("agent register: %v", err)
	}
	if _, err := e.reg.Restrict(a, tools.Restriction{Deny: []string{codemode.RunCodeName}}); !errors.Is(err, tools.ErrReserved) {
		t.Errorf("restrict: %v", err)
	}
	if got := e.reg.Reserved(); !slices.Equal(got, []string{codemode.RunCodeName}) {
		t.Errorf("Reserved = %v", got)
	}
}

// TestPA9_ConcurrentDeclarationsOneWins: declarations racing in one agent scope (from many
// goroutines) leave exactly one in force, the others refused with
// ErrPresentedTwice, and the agent presented in the winner's mode.
func TestPA9_ConcurrentDeclarationsOneWins(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Native})
	a := e.scope(t, "a")
	const n = 16
	modes := []tools.Mode{tools.Native, tools.Code, tools.Both}
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = e.reg.PresentAs(a, modes[i%len(modes)])
		}()
	}
	close(start)
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("declarations %d and %d both succeeded", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, tools.ErrPresentedTwice):
			t.Errorf("declaration %d: %v", i, err)
		}
	}
	if won < 0 {
		t.Fatal("no declaration succeeded")
	}
	if m := e.reg.ModeOf("a"); m != modes[won%len(modes)] {
		t.Errorf("ModeOf(a) = %q, the winner declared %q", m, modes[won%len(modes)])
	}
}

// TestPA13_NoRuntimeErrorNamesTheAgentsDeclaration: in a native registry without a code runtime,
// an agent that presents as code fails prompt assembly and run_code with the missing-runtime
// error; its way out is the agent's own declaration ("present agent "a" as native"), not the
// registry's tools mode, which does not decide that agent's presentation. A registry presented in
// code keeps suggesting the tools mode.
func TestPA13_NoRuntimeErrorNamesTheAgentsDeclaration(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Native, noRuntime: true})
	mustRegister(t, e.reg, e.root, echo("read", "r"))
	a := e.scope(t, "a")
	must2(t)(e.reg.PresentAs(a, tools.Code))
	const want = `found none (or present agent "a" as native)`
	if _, err := e.sp.Assemble(ctx, "a"); err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "tools mode to native") {
		t.Errorf("assembling agent a: %v", err)
	}
	if res := e.reg.Execute(ctx, runCode("c1", "return 1", "a")); code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), want) || strings.Contains(text(res), "tools mode to native") {
		t.Errorf("run_code of agent a = %+v", res)
	}
	if _, err := e.sp.Assemble(ctx, "b"); err != nil {
		t.Errorf("native agent b: %v", err)
	}

	c := newCodeEnv(t, codeOpts{mode: tools.Code, noRuntime: true})
	if res := c.reg.Execute(ctx, runCode("c1", "return 1", "")); !strings.Contains(text(res), "found none (or set tools mode to native)") {
		t.Errorf("run_code in a code registry = %+v", res)
	}
}
