package codemode_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/events"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// memLog is a SessionLog that records what it is given.
type memLog struct {
	mu     sync.Mutex
	events []tools.SessionEvent
	fail   error
	panic  any // Append panics with it after recording, when set
}

func (l *memLog) Append(_ context.Context, e tools.SessionEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	if l.panic != nil {
		panic(l.panic)
	}
	return l.fail
}

// snapshot returns the settled tool/code-dispatch events appended so far.
func (l *memLog) snapshot() []tools.SessionEvent { return l.ofType(codemode.CodeDispatchEvent) }

// starts returns the tool/code-dispatch-start events appended so far.
func (l *memLog) starts() []tools.SessionEvent { return l.ofType(codemode.CodeDispatchStartEvent) }

// all returns every event appended so far.
func (l *memLog) all() []tools.SessionEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func (l *memLog) ofType(typ string) []tools.SessionEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []tools.SessionEvent
	for _, e := range l.events {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

type codeOpts struct {
	mode      tools.Mode
	prompt    systemprompt.Config
	runtime   coderuntime.Config
	noRuntime bool
	noLog     bool
	// maxParallel is the tools plugin's MaxParallelSubCalls.
	maxParallel int
}

type codeEnv struct {
	*env
	sp  *systemprompt.Service
	log *memLog
}

// testRuntime is the runtime configuration of programs that must succeed:
// budgets far beyond what any of them needs (a few milliseconds), so that
// a loaded machine cannot fail them. Tests of the budgets themselves set
// their own, with programs that never end. Programs run in process: these
// tests pin the bridge (many under testing/synctest, whose bubble cannot
// host a worker process); isolation has its own tests in coderuntime.
var testRuntime = coderuntime.Config{Timeout: time.Minute, CPUBudget: 30 * time.Second, Isolation: coderuntime.IsolationNone}

func newCodeEnv(t testing.TB, o codeOpts) *codeEnv {
	t.Helper()
	if o.mode == "" {
		o.mode = tools.Code
	}
	if o.runtime == (coderuntime.Config{}) {
		o.runtime = testRuntime
	}
	if !o.noRuntime && inBubble() && o.runtime.Isolation != coderuntime.IsolationNone {
		// A worker process runs on the real clock while the bubble's
		// deadline is fake, and the goroutine reading its pipe never
		// counts as idle: every timing the test means to fix would race
		// (TestC6_SettlementCancelsAndDrainsInFlightSubCalls/timeout did).
		t.Fatalf("newCodeEnv in a synctest bubble needs Isolation %q, not %q", coderuntime.IsolationNone, o.runtime.Isolation)
	}
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	load := func(p host.Plugin, cfg any) {
		t.Helper()
		f, err := root.Plugin(p, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
	}
	load(systemprompt.Plugin, o.prompt)
	if !o.noRuntime {
		load(isolated.Plugin, o.runtime)
	}
	load(codemode.Plugin, tools.Config{Mode: o.mode, MaxParallelSubCalls: o.maxParallel})
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := systemprompt.ServiceKey.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	ce := &codeEnv{env: &env{h: h, root: root, reg: reg}, sp: sp}
	if tt, ok := t.(*testing.T); ok {
		ce.t = tt
	}
	if !o.noLog {
		ce.log = &memLog{}
		must2(t)(tools.SessionLogService.Provide(root, tools.SessionLog(ce.log)))
	}
	return ce
}

// inBubble reports whether the caller runs in a testing/synctest bubble:
// the bubble's fake clock starts at midnight UTC, 2000-01-01, a real clock
// is decades past it.
func inBubble() bool { return time.Now().Before(time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)) }

func runCode(id, src string, agent host.ScopeKey) tools.Call {
	args, _ := json.Marshal(map[string]string{"code": src, "description": "test program"})
	return tools.Call{ID: id, Name: codemode.RunCodeName, Arguments: args, Agent: agent}
}

// toolFunc is a raw tool with a body.
func toolFunc(name string, body tools.ExecuteFunc) tools.Definition {
	return tools.Definition{
		Name: name, Description: "Test tool " + name + ".",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number"}}}`),
		Execute:    body,
	}
}

func sectionText(p *systemprompt.Prompt, name string) (string, bool) {
	for _, s := range p.Sections {
		if s.Name == name {
			return s.Text, true
		}
	}
	return "", false
}

func names(ts []*tools.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}

func TestC1_ModeContributions(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode      tools.Mode
		wantTools []string
		wantSDK   bool
	}{
		{tools.Native, []string{"bash", "read"}, false},
		{tools.Code, []string{"run_code"}, true},
		{tools.Both, []string{"bash", "read", "run_code"}, true},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: tc.mode})
			mustRegister(t, e.reg, e.root, echo("read", "r"))
			mustRegister(t, e.reg, e.root, echo("bash", "b"))
			p, err := e.sp.Assemble(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ToolNames(); !slices.Equal(got, tc.wantTools) {
				t.Errorf("tools = %v, want %v", got, tc.wantTools)
			}
			sdk, ok := sectionText(p, codemode.SDKSection)
			if ok != tc.wantSDK {
				t.Fatalf("tools:sdk present = %v, want %v", ok, tc.wantSDK)
			}
			if tc.wantSDK {
				if !strings.Contains(sdk, "bash(args:") || !strings.Contains(sdk, "read(args:") || strings.Contains(sdk, "run_code(") {
					t.Errorf("sdk does not declare exactly the end capabilities:\n%s", sdk)
				}
				for _, s := range p.Sections {
					if s.Name == codemode.SDKSection && s.Order != 150 {
						t.Errorf("tools:sdk order %d", s.Order)
					}
				}
			}
			// Visible, Schemas and Get include the transport in non-native
			// modes; KnownNames never does.
			wantVisible := []string{"bash", "read"}
			if tc.mode != tools.Native {
				wantVisible = []string{"bash", "read", "run_code"}
			}
			if got := names(e.reg.Visible("")); !slices.Equal(got, wantVisible) {
				t.Errorf("Visible = %v, want %v", got, wantVisible)
			}
			var schemaNames []string
			for _, s := range e.reg.Schemas("agent-x") {
				schemaNames = append(schemaNames, s.Name)
			}
			if !slices.Equal(schemaNames, wantVisible) {
				t.Errorf("Schemas = %v, want %v", schemaNames, wantVisible)
			}
			_, got := e.reg.Get(codemode.RunCodeName, "agent-x")
			if got != (tc.mode != tools.Native) {
				t.Errorf("Get(run_code) = %v", got)
			}
			if kn := e.reg.KnownNames(""); !slices.Equal(kn, []string{"bash", "read"}) {
				t.Errorf("KnownNames = %v", kn)
			}
			if got := names(e.reg.EndCapabilities("")); !slices.Equal(got, []string{"bash", "read"}) {
				t.Errorf("EndCapabilities = %v", got)
			}
			// Reserved in every mode with Code Mode attached (PA6).
			wantReserved := []string{"run_code"}
			if got := e.reg.Reserved(); !slices.Equal(got, wantReserved) {
				t.Errorf("Reserved = %v, want %v", got, wantReserved)
			}
			if e.reg.Mode() != tc.mode {
				t.Errorf("Mode = %v", e.reg.Mode())
			}
		})
	}
}

func TestC1_CodeModeRefusesDirectCalls(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	var ran atomic.Int32
	mustRegister(t, e.reg, e.root, toolFunc("read", func(context.Context, *tools.Execution) (tools.Output, error) {
		ran.Add(1)
		return tools.Output{Content: []tools.Content{tools.Text("contents")}}, nil
	}))
	mustRegister(t, e.reg, e.root, toolFunc("my-tool", func(context.Context, *tools.Execution) (tools.Output, error) {
		ran.Add(1)
		return tools.Output{}, nil
	}))
	res := e.reg.Execute(ctx, tools.Call{ID: "c1", Name: "read", Arguments: json.RawMessage(`{}`), Agent: "a"})
	if code(res) != tools.CodeUnknownTool || !strings.Contains(text(res), "await tools.read({...})") || !strings.Contains(text(res), "run_code") {
		t.Errorf("direct call = %+v", res)
	}
	res = e.reg.Execute(ctx, tools.Call{ID: "c2", Name: "my-tool"})
	if code(res) != tools.CodeUnknownTool || !strings.Contains(text(res), `await tools["my-tool"]({...})`) {
		t.Errorf("direct call = %+v", res)
	}
	// A parent that is not a run_code execution in progress does not help.
	var tok tools.Token
	must2(t)(host.On(e.root, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		tok = n.Execution().Token()
		return nil
	}))
	e.reg.Execute(ctx, runCode("c3", "return 1", ""))
	if res := e.reg.Execute(ctx, tools.Call{ID: "c4", Name: "read", Parent: tok}); code(res) != tools.CodeUnknownTool {
		t.Errorf("call with a finished run_code as parent = %+v", res)
	}
	if ran.Load() != 0 {
		t.Fatalf("a direct call ran the body %d times", ran.Load())
	}
	// From run_code it works.
	res = e.reg.Execute(ctx, runCode("c5", "return await tools.read({})", ""))
	if res.IsError || text(res) != "contents" || ran.Load() != 1 {
		t.Errorf("run_code = %+v (ran %d)", res, ran.Load())
	}
	// Under both, direct calls work.
	b := newCodeEnv(t, codeOpts{mode: tools.Both})
	mustRegister(t, b.reg, b.root, echo("read", "contents"))
	if res := b.reg.Execute(ctx, call("read", `{}`)); res.IsError || text(res) != "contents" {
		t.Errorf("both: direct call = %+v", res)
	}
}

func TestC2_RunCodeIsReserved(t *testing.T) {
	for _, mode := range []tools.Mode{tools.Code, tools.Both} {
		t.Run(string(mode), func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: mode})
			mustRegister(t, e.reg, e.root, echo("read", "r"))
			a := e.scope(t, "agent")
			if _, err := e.reg.Register(e.root, echo(codemode.RunCodeName, "x")); !errors.Is(err, tools.ErrReserved) {
				t.Errorf("global register: %v", err)
			}
			if _, err := e.reg.Register(a, echo(codemode.RunCodeName, "x")); !errors.Is(err, tools.ErrReserved) {
				t.Errorf("shadowing register: %v", err)
			}
			for _, f := range []tools.Restriction{{Allow: []string{codemode.RunCodeName}}, {Deny: []string{codemode.RunCodeName}}, {Allow: []string{"read", codemode.RunCodeName}}} {
				if _, err := e.reg.Restrict(a, f); !errors.Is(err, tools.ErrReserved) {
					t.Errorf("restrict %+v: %v", f, err)
				}
			}
			// A restriction that hides everything leaves the transport.
			must2(t)(e.reg.Restrict(a, tools.Restriction{Deny: []string{"read"}}))
			if got := names(e.reg.Visible("agent")); !slices.Equal(got, []string{codemode.RunCodeName}) {
				t.Errorf("Visible after deny = %v", got)
			}
			p, err := e.sp.Assemble(context.Background(), "agent")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ToolNames(); !slices.Equal(got, []string{codemode.RunCodeName}) {
				t.Errorf("assembled tools = %v", got)
			}
			if sdk, ok := sectionText(p, codemode.SDKSection); !ok || strings.Contains(sdk, "read(") {
				t.Errorf("sdk after deny (present %v):\n%s", ok, sdk)
			}
		})
	}
}

func TestC2_AssemblyListenersCannotRemoveTransport(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	mustRegister(t, e.reg, e.root, echo("read", "r"))
	want, err := e.sp.Assemble(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	wantSDK, _ := sectionText(want, codemode.SDKSection)
	must2(t)(host.OnWaterfall(e.root, systemprompt.AssembleEvent, func(ctx context.Context, _ systemprompt.Draft, next events.Next[systemprompt.Draft]) (systemprompt.Draft, error) {
		d, err := next(ctx)
		d.Tools = nil
		d.Tools = append(d.Tools, systemprompt.ToolSchema{Name: "extra", Description: "added deliberately"},
			systemprompt.ToolSchema{Name: codemode.RunCodeName, Description: "hijacked"})
		d.Sections = slices.DeleteFunc(d.Sections, func(s systemprompt.Rendered) bool { return s.Name == codemode.SDKSection })
		d.Sections = append(d.Sections, systemprompt.Rendered{Name: codemode.SDKSection, Order: 1, Text: "declare const tools: {}"})
		return d, err
	}))
	p, err := e.sp.Assemble(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := p.ToolNames(); !slices.Equal(got, []string{"extra", codemode.RunCodeName}) {
		t.Errorf("tools = %v", got)
	}
	for _, ts := range p.Tools {
		if ts.Name == codemode.RunCodeName && ts.Description == "hijacked" {
			t.Error("listener replaced run_code's schema")
		}
	}
	if sdk, ok := sectionText(p, codemode.SDKSection); !ok || sdk != wantSDK {
		t.Errorf("tools:sdk not restored:\n%s", sdk)
	}
	// A scoped section cannot shadow the protected tools:sdk.
	a := e.scope(t, "agent")
	must2(t)(e.sp.Section(a, systemprompt.StaticSection(codemode.SDKSection, 150, "nothing")))
	if _, err := e.sp.Assemble(ctx, "agent"); !errors.Is(err, systemprompt.ErrProtected) {
		t.Errorf("shadowing tools:sdk: %v", err)
	}
}

func TestC3_CodeRuntimeRequired(t *testing.T) {
	ctx := context.Background()
	for _, mode := range []tools.Mode{tools.Code, tools.Both} {
		t.Run(string(mode), func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: mode, noRuntime: true})
			mustRegister(t, e.reg, e.root, echo("read", "r"))
			_, err := e.sp.Assemble(ctx, "")
			want := fmt.Sprintf(`tools mode %q needs a code runtime: load isolated.Plugin (package codeRuntime/isolated; service "code-runtime") with language typescript; found none`, mode)
			var ce *systemprompt.ContributorError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
				t.Fatalf("assemble without a runtime: %v", err)
			}
			// run_code itself fails cleanly too.
			res := e.reg.Execute(ctx, runCode("c1", "return 1", ""))
			if code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), "(unavailable)") || !strings.Contains(text(res), "found none") {
				t.Errorf("run_code without a runtime = %+v", res)
			}

			// A runtime of another language.
			off := must2(t)(coderuntime.Service.Provide(e.root, coderuntime.Runtime(coderuntime.RuntimeFunc{Lang: "python"})))
			if _, err := e.sp.Assemble(ctx, ""); err == nil || !strings.Contains(err.Error(), `found one with language "python"`) {
				t.Errorf("python runtime: %v", err)
			}
			_ = off()

			// Loading one later fixes every assembly (looked up each time).
			f, err := e.root.Plugin(isolated.Plugin, testRuntime)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := e.sp.Assemble(ctx, ""); err != nil {
				t.Fatalf("after loading the runtime: %v", err)
			}
			if res := e.reg.Execute(ctx, runCode("c2", "return 1", "")); res.IsError || text(res) != "1" {
				t.Errorf("run_code = %+v", res)
			}
			_ = f.Dispose()
			if _, err := e.sp.Assemble(ctx, ""); err == nil {
				t.Error("assembly succeeded after the runtime went away")
			}
		})
	}
	t.Run("native needs none", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Native, noRuntime: true})
		if _, err := e.sp.Assemble(ctx, ""); err != nil {
			t.Fatal(err)
		}
	})
}

func TestC3_ToolOrderNamingToolsTheModeNoLongerContributes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		mode  tools.Mode
		order []string
		ok    bool
		want  []string
	}{
		{tools.Native, []string{"read"}, true, []string{"read", "bash"}},
		{tools.Code, []string{"read"}, false, nil},
		{tools.Code, []string{codemode.RunCodeName}, true, []string{codemode.RunCodeName}},
		{tools.Both, []string{codemode.RunCodeName, "read"}, true, []string{codemode.RunCodeName, "read", "bash"}},
		{tools.Both, []string{"missing"}, false, nil},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s/%v", tc.mode, tc.order), func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: tc.mode, prompt: systemprompt.Config{ToolOrder: tc.order}})
			mustRegister(t, e.reg, e.root, echo("bash", "b"))
			mustRegister(t, e.reg, e.root, echo("read", "r"))
			p, err := e.sp.Assemble(ctx, "")
			if !tc.ok {
				if !errors.Is(err, systemprompt.ErrToolOrder) {
					t.Fatalf("err = %v, want ErrToolOrder", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.ToolNames(); !slices.Equal(got, tc.want) {
				t.Errorf("tools = %v, want %v", got, tc.want)
			}
		})
	}
}

// sdkTools is the tool set of the SDK golden: plain, exotic and
// unsupported schemas, registered out of order.
func sdkTools() []tools.Definition {
	nop := func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil }
	return []tools.Definition{
		{Name: "write", Description: "Write a file.", Execute: nop, Parameters: json.RawMessage(
			`{"type":"object","properties":{"path":{"type":"string","description":"Absolute path"},"content":{"type":"string"},"mode":{"enum":["create","overwrite"]}},"required":["path","content"]}`)},
		{Name: "my-tool", Description: "An exotic name.\nSecond line with */ inside.", Execute: nop},
		{Name: "ns.search", Description: "Search.", Execute: nop, Parameters: json.RawMessage(
			`{"type":"object","properties":{"query":{"type":"string"},"limit":{"type":"integer"},"filters":{"type":"array","items":{"type":"object","properties":{"field":{"type":"string"},"value":{}}}}},"required":["query"]}`)},
		{Name: "odd", Description: "An unsupported schema.", Execute: nop, Parameters: json.RawMessage(
			`{"type":"object","properties":{"either":{"oneOf":[{"type":"string"},{"type":"number"}]},"ref":{"$ref":"#/defs/x"}}}`)},
		{Name: "bash", Description: "Run a shell command.", Execute: nop, Parameters: json.RawMessage(
			`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"number"}},"required":["command"]}`)},
	}
}

func TestC4_SDKGolden(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	for _, d := range sdkTools() {
		mustRegister(t, e.reg, e.root, d)
	}
	sdk := codemode.SDK(e.reg, "")
	golden := filepath.Join("testdata", "sdk.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(sdk), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestC4_SDKGolden -update)", err)
	}
	if sdk != string(want) {
		t.Errorf("SDK differs from %s (run with -update after checking):\n%s", golden, sdk)
	}
	// The assembled section is that text.
	p, err := e.sp.Assemble(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sectionText(p, codemode.SDKSection); got != sdk {
		t.Errorf("assembled section differs from SDK()")
	}
	for _, frag := range []string{`"my-tool"(args:`, `"ns.search"(args:`, "either?: unknown;", "ref?: unknown;", `*\/`} {
		if !strings.Contains(sdk, frag) {
			t.Errorf("SDK lacks %q", frag)
		}
	}
	// Sorted lexicographically.
	var order []int
	for _, n := range []string{"  bash(", `  "my-tool"(`, `  "ns.search"(`, "  odd(", "  write("} {
		order = append(order, strings.Index(sdk, n))
	}
	if !slices.IsSorted(order) || order[0] < 0 {
		t.Errorf("declarations not sorted: %v", order)
	}
}

func TestC4_SDKIsByteStableAndRegenerated(t *testing.T) {
	ctx := context.Background()
	a := newCodeEnv(t, codeOpts{mode: tools.Code})
	b := newCodeEnv(t, codeOpts{mode: tools.Code})
	defs := sdkTools()
	for _, d := range defs {
		mustRegister(t, a.reg, a.root, d)
	}
	for i := len(defs) - 1; i >= 0; i-- {
		mustRegister(t, b.reg, b.root, defs[i])
	}
	first := codemode.SDK(a.reg, "")
	if codemode.SDK(b.reg, "") != first {
		t.Error("registration order changed the SDK text")
	}
	for range 3 {
		p, err := a.sp.Assemble(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := sectionText(p, codemode.SDKSection); got != first {
			t.Fatal("repeated assembly is not byte-identical")
		}
	}
	// Regenerated when the tool set changes: a new tool, a scoped tool, a
	// restriction, a disposal.
	off := mustRegister(t, a.reg, a.root, echo("zeta", "z"))
	if s := codemode.SDK(a.reg, ""); !strings.Contains(s, "  zeta(") {
		t.Error("new tool not declared")
	}
	ag := a.scope(t, "agent")
	mustRegister(t, a.reg, ag, echo("mine", "m"))
	must2(t)(a.reg.Restrict(ag, tools.Restriction{Deny: []string{"bash"}}))
	p, err := a.sp.Assemble(ctx, "agent")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := sectionText(p, codemode.SDKSection)
	if !strings.Contains(s, "  mine(") || strings.Contains(s, "  bash(") {
		t.Errorf("agent SDK does not follow its scope:\n%s", s)
	}
	if s := codemode.SDK(a.reg, ""); strings.Contains(s, "  mine(") || !strings.Contains(s, "  bash(") {
		t.Error("global SDK sees the agent's changes")
	}
	_ = off()
	if codemode.SDK(a.reg, "") != first {
		t.Error("SDK after disposal differs from the original")
	}
	// With no tools at all it is still a valid declaration.
	c := newCodeEnv(t, codeOpts{mode: tools.Code})
	if s := codemode.SDK(c.reg, ""); !strings.Contains(s, "declare const tools: {}") {
		t.Errorf("empty SDK:\n%s", s)
	}
}

func TestC5_JSONNormalizationRejectsThatCallOnly(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	var got []string
	var mu sync.Mutex
	mustRegister(t, e.reg, e.root, toolFunc("rec", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		mu.Lock()
		got = append(got, x.ArgsString())
		mu.Unlock()
		return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
	}))
	src := `const out: string[] = []
async function attempt(label: string, v: unknown) {
  try { await tools.rec(v as any); out.push(label + ":ok") } catch (e: any) { out.push(label + ":" + e.code) }
}
await attempt("first", { n: 1 })
const circ: any = { n: 2 }; circ.self = circ
await attempt("circular", circ)
await attempt("unsafe-int", { n: 2 ** 60 })
await attempt("not-object", 5)
await attempt("last", { n: 3 })
console.log(out.join(" "))`
	res := e.reg.Execute(ctx, runCode("c1", src, "agent"))
	want := "first:ok circular:INVALID_ARGUMENTS unsafe-int:INVALID_ARGS not-object:INVALID_ARGS last:ok"
	if res.IsError || text(res) != want {
		t.Fatalf("result = %+v\nwant %q", res, want)
	}
	if !slices.Equal(got, []string{`{"n":1}`, `{"n":3}`}) {
		t.Errorf("dispatched = %v", got)
	}
	// Calls the lossless-JSON check rejected never entered the pipeline
	// (the pipeline's ids stay contiguous), but each is logged with its
	// INVALID_ARGS result under an id of its own.
	var ids []string
	var rejected []tools.CodeDispatch
	for _, ev := range e.log.snapshot() {
		ids = append(ids, ev.ID)
		if strings.Contains(ev.ID, ":rejected:") {
			var d tools.CodeDispatch
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			rejected = append(rejected, d)
		}
	}
	if !slices.Equal(ids, []string{"c1:code:1", "c1:code:rejected:1", "c1:code:rejected:2", "c1:code:2"}) {
		t.Errorf("logged ids = %v", ids)
	}
	if len(rejected) != 2 || rejected[0].Name != "rec" || string(rejected[0].Arguments) != `{"n":1152921504606847000}` ||
		!rejected[0].Result.IsError || code(rejected[0].Result) != tools.CodeInvalidArgs || string(rejected[1].Arguments) != "5" {
		t.Errorf("rejected calls logged as %+v", rejected)
	}
}

func TestC5_SubmissionOrderUnderPromiseAll(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	var (
		mu        sync.Mutex
		order     []string
		active    atomic.Int32
		maxActive atomic.Int32
	)
	mustRegister(t, e.reg, e.root, toolFunc("rec", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		if n := active.Add(1); n > maxActive.Load() {
			maxActive.Store(n)
		}
		defer active.Add(-1)
		time.Sleep(time.Millisecond) // widen any overlap
		mu.Lock()
		order = append(order, x.Arg("n").Raw)
		mu.Unlock()
		return tools.Output{Content: []tools.Content{tools.Text("r" + x.Arg("n").Raw)}}, nil
	}))
	src := `const rs = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map((n) => tools.rec({ n })))
return rs.join(",")`
	res := e.reg.Execute(ctx, runCode("c1", src, "agent"))
	if res.IsError || text(res) != "r0,r1,r2,r3,r4,r5,r6,r7" {
		t.Fatalf("result = %+v", res)
	}
	if !slices.Equal(order, []string{"0", "1", "2", "3", "4", "5", "6", "7"}) || maxActive.Load() != 1 {
		t.Errorf("order %v, max concurrent %d", order, maxActive.Load())
	}
}

func TestC5_FullPipelineParentTokenAndEvents(t *testing.T) {
	ctx := context.Background()
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	a := e.scope(t, "agent")
	mustRegister(t, e.reg, e.root, toolFunc("read", func(_ context.Context, x *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("text of " + x.Arg("path").String())}, AdditionalContext: []string{"from the tool"}}, nil
	}))
	mustRegister(t, e.reg, e.root, echo("secret", "never"))
	mustRegister(t, e.reg, e.root, toolFunc("img", func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("caption"), tools.Image("aGk=", "image/png")}}, nil
	}))
	mustRegister(t, e.reg, e.root, echo("guarded", "never"))
	must2(t)(e.reg.Guard(a, func(x *tools.Execution) error {
		if x.Name() == "guarded" {
			return errors.New("guard says no")
		}
		return nil
	}))

	var (
		mu      sync.Mutex
		outer   tools.Token
		parents = map[string]tools.Token{}
		agents  = map[string]host.ScopeKey{}
	)
	must2(t)(host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		mu.Lock()
		if x.Name() == codemode.RunCodeName {
			outer = x.Token()
		} else {
			parents[x.CallID()] = x.Parent()
			agents[x.CallID()] = x.Agent()
		}
		mu.Unlock()
		if x.Name() == "secret" {
			return tools.Denied("secrets stay secret"), nil
		}
		return next(ctx)
	}))
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, in tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		d, err := next(ctx)
		d.AdditionalContext = "from post-execute of " + in.Execution().Name()
		return d, err
	}))
	var rc recorder
	rc.listen(t, e.root)

	src := `const r = await tools.read({ path: "/a" })
console.log(r)
try { await tools.secret({}) } catch (err: any) {
  console.log(err.code, err.name, err.tool, err.message, err instanceof Error)
}
try { await tools.guarded({}) } catch (err: any) { console.log(err.code) }
const caption = await tools.img({})
console.log(typeof caption, caption)
return "done"`
	res := e.reg.Execute(ctx, runCode("c1", src, "agent"))
	wantText := "text of /a\nDENIED ToolDenied secret tools.secret: Tool call denied: secrets stay secret true\nDENIED\nstring caption\ndone"
	// A text-only tool's call resolves to its text; its image is deferred
	// onto run_code's result, after the program's output (CT4).
	if res.IsError || text(res) != wantText || len(res.Content) != 2 || res.Content[1] != tools.Image("aGk=", "image/png") {
		t.Fatalf("result = %+v\nwant %q", res, wantText)
	}
	// Sub-call additional context is deferred through run_code's result,
	// in submission order (each call's in the order tool, post-execute),
	// before run_code's own post-execute context.
	if want := []string{"from the tool", "from post-execute of read", "from post-execute of secret",
		"from post-execute of guarded", "from post-execute of img", "from post-execute of run_code"}; !slices.Equal(res.AdditionalContext, want) {
		t.Errorf("run_code additional context = %q, want %q", res.AdditionalContext, want)
	}
	// The full pipeline ran for every sub-call, with the outer token as
	// parent and the outer agent.
	wantIDs := []string{"c1:code:1", "c1:code:2", "c1:code:3", "c1:code:4"}
	for _, id := range wantIDs {
		if parents[id] != outer || outer.IsZero() || agents[id] != "agent" {
			t.Errorf("%s: parent %v (outer %v), agent %q", id, parents[id], outer, agents[id])
		}
	}
	if rc.count() != 5 {
		t.Errorf("tools/result notices = %d, want 5 (4 sub-calls + run_code)", rc.count())
	}
	// One tool/code-dispatch per sub-call, in order, with the dispatched
	// arguments and the final result.
	evs := e.log.snapshot()
	if len(evs) != 4 {
		t.Fatalf("events = %+v", evs)
	}
	for i, ev := range evs {
		if ev.Type != codemode.CodeDispatchEvent || ev.ID != wantIDs[i] || ev.Agent != "agent" || ev.Parent != "c1" {
			t.Errorf("event %d = %+v", i, ev)
		}
	}
	var d tools.CodeDispatch
	if err := json.Unmarshal(evs[0].Data, &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "read" || string(d.Arguments) != `{"path":"/a"}` || d.Result.CallID != "c1:code:1" || text(d.Result) != "text of /a" || d.Result.AdditionalContext != nil {
		t.Errorf("event data = %s", evs[0].Data)
	}
	if strings.Contains(string(evs[0].Data), "additionalContext") {
		t.Errorf("additional context logged: %s", evs[0].Data)
	}
	var denied tools.CodeDispatch
	_ = json.Unmarshal(evs[1].Data, &denied)
	if !denied.Result.IsError || code(denied.Result) != tools.CodeDenied {
		t.Errorf("denied event = %s", evs[1].Data)
	}
}

func TestC5_LoggingIsOptional(t *testing.T) {
	ctx := context.Background()
	t.Run("no session log", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code, noLog: true})
		mustRegister(t, e.reg, e.root, echo("read", "r"))
		if res := e.reg.Execute(ctx, runCode("c1", "return await tools.read({})", "agent")); res.IsError || text(res) != "r" {
			t.Errorf("result = %+v", res)
		}
	})
	t.Run("no agent", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code})
		mustRegister(t, e.reg, e.root, echo("read", "r"))
		if res := e.reg.Execute(ctx, runCode("c1", "return await tools.read({})", "")); res.IsError || text(res) != "r" {
			t.Errorf("result = %+v", res)
		}
		if n := len(e.log.snapshot()); n != 0 {
			t.Errorf("%d events logged for a call without an agent", n)
		}
	})
	t.Run("failing log", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code})
		e.log.fail = errors.New("disk full")
		mustRegister(t, e.reg, e.root, echo("read", "r"))
		if res := e.reg.Execute(ctx, runCode("c1", "return await tools.read({})", "agent")); res.IsError || text(res) != "r" {
			t.Errorf("result = %+v", res)
		}
		if n := len(e.log.snapshot()); n != 1 {
			t.Errorf("append attempts = %d", n)
		}
	})
	t.Run("panicking log", func(t *testing.T) {
		// The session log is a service of someone else's: its panic is
		// logged like an Append error and cannot fail the call or the run.
		e := newCodeEnv(t, codeOpts{mode: tools.Code})
		e.log.panic = "log exploded"
		mustRegister(t, e.reg, e.root, echo("read", "r"))
		if res := e.reg.Execute(ctx, runCode("c1", "return await tools.read({}) + await tools.read({})", "agent")); res.IsError || text(res) != "rr" {
			t.Errorf("result = %+v", res)
		}
		if n := len(e.log.snapshot()); n != 2 {
			t.Errorf("append attempts = %d", n)
		}
	})
}

// blocker is a tool that signals when it starts and then blocks until its
// context is done, recording the cause.
type blocker struct {
	started chan struct{}
	cause   atomic.Value
	onStart func()
}

func newBlocker() *blocker { return &blocker{started: make(chan struct{}, 16)} }

func (b *blocker) def(name string) tools.Definition {
	return toolFunc(name, func(ctx context.Context, _ *tools.Execution) (tools.Output, error) {
		b.started <- struct{}{}
		if b.onStart != nil {
			b.onStart()
		}
		<-ctx.Done()
		b.cause.Store(context.Cause(ctx))
		return tools.Output{}, ctx.Err()
	})
}

// resultsFor counts the tools/result notices of one call id.
func resultsFor(rc *recorder, id string) (n int, last tools.Result) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, x := range rc.notices {
		if x.Execution().CallID() == id {
			n++
			last = x.Result()
		}
	}
	return n, last
}

func TestC6_SettlementCancelsAndDrainsInFlightSubCalls(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		// In a bubble the wall-clock budget runs out only once every
		// goroutine is blocked, here on the sub-call, however slow the
		// machine: the program has printed and is awaiting the call. The
		// program runs in process: in a worker process (the default
		// isolation) it ran on the real clock, its 150 ms racing the
		// worker's start, the program and the dispatch (see newCodeEnv).
		synctest.Test(t, func(t *testing.T) {
			e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: coderuntime.Config{Timeout: 150 * time.Millisecond, CPUBudget: testRuntime.CPUBudget, Isolation: coderuntime.IsolationNone}})
			b := newBlocker()
			mustRegister(t, e.reg, e.root, b.def("slow"))
			var rc recorder
			rc.listen(t, e.root)
			res := e.reg.Execute(context.Background(), runCode("c1", "console.log('before')\nawait tools.slow({})\nconsole.log('never')", "agent"))
			if code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), "(timeout)") || !strings.Contains(text(res), "before") || strings.Contains(text(res), "never") {
				t.Fatalf("result = %+v", res)
			}
			// Logged before run_code returned: no waiting here.
			evs := e.log.snapshot()
			if len(evs) != 1 || evs[0].ID != "c1:code:1" {
				t.Fatalf("events = %+v", evs)
			}
			if n, last := resultsFor(&rc, "c1:code:1"); n != 1 || code(last) != tools.CodeAborted {
				t.Errorf("sub-call results = %d, last %+v", n, last)
			}
			if c, _ := b.cause.Load().(error); !errors.Is(c, context.DeadlineExceeded) {
				t.Errorf("sub-call cause = %v", c)
			}
		})
	})
	t.Run("cancelled", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code})
		b := newBlocker()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b.onStart = cancel // the caller gives up while the sub-call runs
		mustRegister(t, e.reg, e.root, b.def("slow"))
		var rc recorder
		rc.listen(t, e.root)
		res := e.reg.Execute(ctx, runCode("c1", "await tools.slow({})", "agent"))
		if code(res) != tools.CodeAborted {
			t.Fatalf("result = %+v", res)
		}
		if evs := e.log.snapshot(); len(evs) != 1 || evs[0].ID != "c1:code:1" {
			t.Fatalf("events = %+v", evs)
		}
		if n, last := resultsFor(&rc, "c1:code:1"); n != 1 || code(last) != tools.CodeAborted {
			t.Errorf("sub-call results = %d, last %+v", n, last)
		}
		if c, _ := b.cause.Load().(error); !errors.Is(c, context.Canceled) {
			t.Errorf("sub-call cause = %v", c)
		}
	})
	t.Run("program returns with a call in flight", func(t *testing.T) {
		e := newCodeEnv(t, codeOpts{mode: tools.Code})
		b := newBlocker()
		mustRegister(t, e.reg, e.root, b.def("slow"))
		mustRegister(t, e.reg, e.root, echo("fast", "f"))
		var rc recorder
		rc.listen(t, e.root)
		// The second call is still queued when the run settles: it is
		// still dispatched, with the settled run's cancelled context, so
		// it is aborted before its body runs (the queue is drained).
		res := e.reg.Execute(context.Background(), runCode("c1", "tools.slow({}).catch(() => {})\ntools.fast({}).catch(() => {})\nreturn 'done'", "agent"))
		if res.IsError || text(res) != "done" {
			t.Fatalf("result = %+v", res)
		}
		// Both calls had been submitted: each produced exactly one result
		// and was logged, in order, before run_code returned.
		evs := e.log.snapshot()
		if len(evs) != 2 || evs[0].ID != "c1:code:1" || evs[1].ID != "c1:code:2" {
			t.Fatalf("events = %+v", evs)
		}
		if n, last := resultsFor(&rc, "c1:code:1"); n != 1 || (code(last) != tools.CodeAborted && code(last) != tools.CodeAbortedBeforeDispatch) {
			t.Errorf("sub-call results = %d, last %+v", n, last)
		}
		if c, _ := b.cause.Load().(error); c != nil && !errors.Is(c, coderuntime.ErrRunSettled) {
			t.Errorf("cause = %v", c)
		}
		if n, last := resultsFor(&rc, "c1:code:2"); n != 1 || code(last) != tools.CodeAbortedBeforeDispatch {
			t.Errorf("queued sub-call results = %d, last %+v", n, last)
		}
	})
}

func TestC6_FailedRunIsCodeRunFailed(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	var rc recorder
	rc.listen(t, e.root)
	res := e.reg.Execute(context.Background(), runCode("c1", "console.log('step 1')\nconsole.warn('careful')\nthrow new Error('boom')", "agent"))
	want := "code run failed (exception): Error: boom (line 3, column 7)\nconsole output before the failure:\nstep 1\n[warn] careful"
	if code(res) != tools.CodeCodeRunFailed || res.Error.Name != "CodeRunFailedError" || text(res) != want {
		t.Fatalf("result = %+v\nwant %q", res, want)
	}
	res = e.reg.Execute(context.Background(), runCode("c2", "const x: number = \nreturn", "agent"))
	if code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), "(syntax)") {
		t.Errorf("syntax error = %+v", res)
	}
	var f *codemode.CodeRunFailedError
	err := error(&codemode.CodeRunFailedError{Kind: coderuntime.KindTimeout, Err: &coderuntime.Failure{Kind: coderuntime.KindTimeout, Cause: context.DeadlineExceeded}})
	if !errors.As(err, &f) || !errors.Is(err, context.DeadlineExceeded) {
		t.Error("CodeRunFailedError does not unwrap to the runtime failure")
	}
	// run_code's own arguments are validated.
	res = e.reg.Execute(context.Background(), tools.Call{ID: "c3", Name: codemode.RunCodeName, Arguments: json.RawMessage(`{"code":5}`)})
	if code(res) != tools.CodeInvalidArgs {
		t.Errorf("bad args = %+v", res)
	}
	if rc.count() != 3 {
		t.Errorf("results = %d", rc.count())
	}
}

func TestC7_OnlyPrintedAndReturnedOutputReturns(t *testing.T) {
	e := newCodeEnv(t, codeOpts{mode: tools.Code})
	mustRegister(t, e.reg, e.root, toolFunc("secret", func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text("SECRET-CONTENT")}, Meta: json.RawMessage(`{"m":1}`), AdditionalContext: []string{"DEFERRED-CONTEXT"}}, nil
	}))
	cases := []struct{ src, want string }{
		{"await tools.secret({})\nreturn 42", "42"},
		{"const s = await tools.secret({})\nconsole.log(s.length)", "14"},
		{"console.log('a', 1, {b: 2})\nconsole.warn('w')\nconsole.error('e')\nconsole.info('i')\nconsole.debug('d')\nreturn 'str'", "a 1 {\"b\":2}\n[warn] w\n[error] e\ni\nd\nstr"},
		{"return { x: [1, 'two'] }", `{"x":[1,"two"]}`},
		{"await tools.secret({})", ""},
		{"return null", "null"},
	}
	for i, tc := range cases {
		res := e.reg.Execute(context.Background(), runCode(fmt.Sprint("c", i), tc.src, "agent"))
		// A sub-call's additional context is not output: it is deferred
		// to after the step, through run_code's result.
		var wantContext []string
		if strings.Contains(tc.src, "tools.secret") {
			wantContext = []string{"DEFERRED-CONTEXT"}
		}
		if res.IsError || len(res.Content) != 1 || text(res) != tc.want || res.Meta != nil || !slices.Equal(res.AdditionalContext, wantContext) {
			t.Errorf("%q: %+v, want text %q and context %q", tc.src, res, tc.want, wantContext)
		}
		if strings.Contains(text(res), "SECRET") {
			t.Errorf("%q: unprinted tool output leaked", tc.src)
		}
	}
}

func TestCodeModeHostilePrograms(t *testing.T) {
	// Programs that must hit the busy-CPU budget are infinite, so a short
	// budget is hit however slow the machine; every other limit is hit
	// under a budget far beyond what reaching it needs, so a loaded machine
	// cannot turn it into a timeout.
	limits := coderuntime.Config{MaxLogBytes: 4 << 10, MaxResultBytes: 4 << 10, MaxCallStackSize: 256}
	short, roomy := limits, limits
	short.Timeout, short.CPUBudget = 2*time.Second, 200*time.Millisecond
	roomy.Timeout, roomy.CPUBudget = testRuntime.Timeout, testRuntime.CPUBudget
	var calls atomic.Int32
	count := toolFunc("count", func(context.Context, *tools.Execution) (tools.Output, error) {
		calls.Add(1)
		return tools.Output{Content: []tools.Content{tools.Text("n")}}, nil
	})
	timed := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: short})
	mustRegister(t, timed.reg, timed.root, count)
	e := newCodeEnv(t, codeOpts{mode: tools.Code, runtime: roomy})
	mustRegister(t, e.reg, e.root, count)
	cases := []struct {
		name, src, kind string
	}{
		{"infinite loop", "while (true) {}", "timeout"},
		{"busy loop between calls", "while (true) { await tools.count({}) ; for (let i = 0; i < 1e6; i++) {} }", "timeout"},
		{"deep recursion", "function f(n: number): number { return f(n + 1) + 1 }\nreturn f(0)", "limit"},
		{"huge output", "while (true) console.log('x'.repeat(100))", "output-limit"},
		{"huge result", "return 'x'.repeat(1 << 20)", "output-limit"},
		{"huge string", "return 'x'.repeat(2 ** 30).length", "exception"},
		{"never settles", "await new Promise(() => {})", "exception"},
		{"host reach", "return require('fs')", "exception"},
		{"process", "return process.env", "exception"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			env := e
			if tc.kind == "timeout" {
				env = timed
			}
			var rc recorder
			rc.listen(t, env.root)
			res := env.reg.Execute(context.Background(), runCode("c1", tc.src, "agent"))
			if code(res) != tools.CodeCodeRunFailed || !strings.Contains(text(res), "("+tc.kind+")") {
				t.Errorf("result = %.300s (code %s), want kind %s", text(res), code(res), tc.kind)
			}
			if len(text(res)) > 16<<10 {
				t.Errorf("failure text is %d bytes", len(text(res)))
			}
			if n, _ := resultsFor(&rc, "c1"); n != 1 {
				t.Errorf("run_code results = %d", n)
			}
		})
	}
	t.Run("binding called after settlement", func(t *testing.T) {
		before := calls.Load()
		n0 := len(e.log.snapshot())
		src := "const f = tools.count\nawait f({})\nPromise.resolve().then(() => Promise.resolve()).then(() => { f({}).catch(() => {}) })\nreturn 'settled'"
		res := e.reg.Execute(context.Background(), runCode("c9", src, "agent"))
		if res.IsError || text(res) != "settled" || calls.Load() != before+1 || len(e.log.snapshot()) != n0+1 {
			t.Errorf("result = %+v, calls %d", res, calls.Load()-before)
		}
	})
	t.Run("no state carries over", func(t *testing.T) {
		e.reg.Execute(context.Background(), runCode("c10", "(globalThis as any).leak = 1; Object.prototype.hacked = 1; return 1", "agent"))
		res := e.reg.Execute(context.Background(), runCode("c11", "return [typeof (globalThis as any).leak, typeof ({} as any).hacked]", "agent"))
		if text(res) != `["undefined","undefined"]` {
			t.Errorf("result = %+v", res)
		}
	})
}

// FuzzRunCodeArgs: whatever the program text, run_code yields exactly one
// result and one tools/result, and every sub-call exactly one event.
func FuzzRunCodeArgs(f *testing.F) {
	for _, s := range []string{
		"return 1", "", "throw 1", "await tools.echo({})", "while(true){}", "return tools",
		"await Promise.all([tools.echo({n:1}), tools.echo(5)])", "}{", "return 10n", "console.log(`${",
		"tools.echo({}); return 1", "await tools['echo']({n: 2**60})",
	} {
		f.Add(s)
	}
	e := newCodeEnv(f, codeOpts{mode: tools.Code, runtime: coderuntime.Config{Timeout: time.Second, CPUBudget: 50 * time.Millisecond}})
	mustRegister(f, e.reg, e.root, echo("echo", "e"))
	var rc recorder
	rc.listen(f, e.root)
	var seq atomic.Int64
	f.Fuzz(func(t *testing.T, src string) {
		id := fmt.Sprint("f", seq.Add(1))
		res := e.reg.Execute(context.Background(), runCode(id, src, "agent"))
		if res.CallID != id {
			t.Fatalf("result for %q has call id %q", id, res.CallID)
		}
		if n, _ := resultsFor(&rc, id); n != 1 {
			t.Fatalf("%q: %d tools/result notices", src, n)
		}
		if res.IsError && code(res) != tools.CodeCodeRunFailed && code(res) != tools.CodeInvalidArgs {
			t.Fatalf("%q: unexpected code %s", src, code(res))
		}
		seen := map[string]bool{}
		for _, ev := range e.log.snapshot() {
			if ev.Parent != id {
				continue
			}
			if seen[ev.ID] {
				t.Fatalf("%q: sub-call %s logged twice", src, ev.ID)
			}
			seen[ev.ID] = true
			// A call the lossless-JSON check rejected is logged but never
			// entered the pipeline: no tools/result of its own.
			want := 1
			if strings.Contains(ev.ID, ":code:rejected:") {
				want = 0
			}
			if n, _ := resultsFor(&rc, ev.ID); n != want {
				t.Fatalf("%q: sub-call %s has %d results, want %d", src, ev.ID, n, want)
			}
		}
	})
}

// TestRunCodeCallCard: the pending run_code card shows the description as
// its title and the program as readable text; malformed args present
// nothing.
func TestRunCodeCallCard(t *testing.T) {
	e := newCodeEnv(t, codeOpts{})
	call := runCode("c1", "const x = a => a && 1;", "")
	v, ok := e.reg.PresentCall(codemode.RunCodeName, "", call.Arguments).(tools.GenericCall)
	if !ok || v.Title != "test program" || v.Kind != "execute" || len(v.Content) != 1 || v.Content[0].Text != "const x = a => a && 1;" {
		t.Fatalf("card = %#v", v)
	}
	if v := e.reg.PresentCall(codemode.RunCodeName, "", json.RawMessage(`{"code":3}`)); v != nil {
		t.Fatalf("malformed args rendered %#v", v)
	}
}
