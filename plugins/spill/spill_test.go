package spill_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/spill"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

// memLog records the session events appended.
type memLog struct {
	mu     sync.Mutex
	events []tools.SessionEvent
}

func (l *memLog) Append(_ context.Context, e tools.SessionEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, e)
	return nil
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

type env struct {
	root *host.Context
	reg  *tools.Registry
	log  *memLog
}

// newEnv is a registry in mode both (native calls and run_code) with
// programs run in process, a session log, and the spill plugin with cfg
// (nil: not loaded).
func newEnv(t *testing.T, cfg *spill.Config) *env {
	t.Helper()
	h := host.New()
	t.Cleanup(func() { _ = h.Close() })
	root := h.Root()
	load := func(p host.Plugin, c any) {
		t.Helper()
		f, err := root.Plugin(p, c)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Err(); err != nil {
			t.Fatal(err)
		}
	}
	load(systemprompt.Plugin, systemprompt.Config{})
	load(isolated.Plugin, coderuntime.Config{Timeout: time.Minute, CPUBudget: 30 * time.Second, Isolation: coderuntime.IsolationNone})
	load(codemode.Plugin, tools.Config{Mode: tools.Both})
	if cfg != nil {
		load(spill.Plugin, *cfg)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{root: root, reg: reg, log: &memLog{}}
	if _, err := tools.SessionLogService.Provide(root, tools.SessionLog(e.log)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) tool(t *testing.T, d tools.Definition) {
	t.Helper()
	if d.Description == "" {
		d.Description = "Test tool."
	}
	if d.Parameters == nil {
		d.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	if _, err := e.reg.Register(e.root, d); err != nil {
		t.Fatal(err)
	}
}

func textTool(name, text string) tools.Definition {
	return tools.Definition{Name: name, Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
		return tools.Output{Content: []tools.Content{tools.Text(text)}}, nil
	}}
}

func runCode(id, src string) tools.Call {
	args, _ := json.Marshal(map[string]string{"code": src})
	return tools.Call{ID: id, Name: codemode.RunCodeName, Arguments: args, Agent: "agent"}
}

func text(r tools.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func dispatches(t *testing.T, e *env) []tools.CodeDispatch {
	t.Helper()
	var out []tools.CodeDispatch
	for _, ev := range e.log.ofType(codemode.CodeDispatchEvent) {
		var d tools.CodeDispatch
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// TestD1_DispatchLogReplacesOnlyTheDurableCopy: a tools/code-dispatch-log
// listener's payload is what the session log gets; the program and the
// call's result keep the original; a failing or panicking listener is
// skipped (the payload is logged as the others left it).
func TestD1_DispatchLogReplacesOnlyTheDurableCopy(t *testing.T) {
	e := newEnv(t, nil)
	e.tool(t, textTool("secret", "s3cret value"))
	var seen []string
	if _, err := host.OnWaterfall(e.root, codemode.CodeDispatchLog, func(ctx context.Context, in codemode.DispatchLogInput, next codemode.DispatchLogNext) (tools.CodeDispatch, error) {
		seen = append(seen, in.ID+" "+in.Parent+" "+string(in.Agent))
		d, err := next(ctx)
		d.Result.Content[0].Text = "[redacted]"
		return d, err
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := host.OnWaterfall(e.root, codemode.CodeDispatchLog, func(ctx context.Context, in codemode.DispatchLogInput, next codemode.DispatchLogNext) (tools.CodeDispatch, error) {
		panic("listener exploded")
	}); err != nil {
		t.Fatal(err)
	}
	res := e.reg.Execute(context.Background(), runCode("c1", `return await tools.secret({})`))
	if res.IsError || text(res) != "s3cret value" {
		t.Fatalf("result = %+v", res)
	}
	ds := dispatches(t, e)
	if len(ds) != 1 || text(ds[0].Result) != "[redacted]" || ds[0].Name != "secret" || ds[0].Timing == nil {
		t.Fatalf("logged = %+v", ds)
	}
	if len(seen) != 1 || seen[0] != "c1:code:1 c1 agent" {
		t.Fatalf("listener saw %q", seen)
	}
}

// TestD2_SpillsLargeSubCallContentFromTheLog: a sub-call's text over
// maxInlineBytes and its value over it are written whole to the store
// and logged as a preview and a locator; the program received the whole;
// content under the limit is logged inline.
func TestD2_SpillsLargeSubCallContentFromTheLog(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, &spill.Config{Dir: dir, MaxInlineBytes: 100, PreviewBytes: 10})
	big := strings.Repeat("0123456789", 50)
	e.tool(t, textTool("big", big))
	e.tool(t, textTool("small", "tiny"))
	var arr strings.Builder
	arr.WriteString("[")
	for i := range 60 {
		if i > 0 {
			arr.WriteString(",")
		}
		arr.WriteString("12345")
	}
	arr.WriteString("]")
	e.tool(t, tools.Definition{Name: "nums", OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"integer"}}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Value: json.RawMessage(arr.String()), Content: []tools.Content{tools.Text("sixty numbers")}}, nil
		}})
	res := e.reg.Execute(context.Background(), runCode("c1", `const b = await tools.big({}); const s = await tools.small({}); const n = await tools.nums({}); return [b.length, s, n.length]`))
	if res.IsError || text(res) != `[500,"tiny",60]` {
		t.Fatalf("result = %+v", res)
	}
	ds := dispatches(t, e)
	if len(ds) != 3 {
		t.Fatalf("dispatches = %d", len(ds))
	}
	logged := text(ds[0].Result)
	if !strings.HasPrefix(logged, "0123456789\n… [500 bytes in all; the whole content is spilled to spill:") {
		t.Fatalf("logged big = %q", logged)
	}
	loc := logged[strings.Index(logged, "spill:") : len(logged)-1]
	whole, err := spill.DirStore{Dir: dir}.Get(context.Background(), loc)
	if err != nil || string(whole) != big {
		t.Fatalf("Get(%q) = %d bytes, %v", loc, len(whole), err)
	}
	if text(ds[1].Result) != "tiny" {
		t.Errorf("small logged as %q", text(ds[1].Result))
	}
	var ref struct {
		Spill string `json:"$spill"`
		Bytes int    `json:"bytes"`
	}
	if err := json.Unmarshal(ds[2].Result.Value, &ref); err != nil || ref.Bytes != len(arr.String()) {
		t.Fatalf("logged value = %s", ds[2].Result.Value)
	}
	if v, err := (spill.DirStore{Dir: dir}).Get(context.Background(), ref.Spill); err != nil || string(v) != arr.String() {
		t.Fatalf("value spill = %s, %v", v, err)
	}
	if text(ds[2].Result) != "sixty numbers" {
		t.Errorf("nums content = %q", text(ds[2].Result))
	}
}

// gateStore is a Store whose Put waits for release.
type gateStore struct {
	entered chan string
	release chan struct{}
	mu      sync.Mutex
	data    map[string][]byte
}

func (s *gateStore) Put(_ context.Context, key string, data []byte) (string, error) {
	s.entered <- key
	<-s.release
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data[key] = data
	return "mem:" + key, nil
}

func (s *gateStore) Get(_ context.Context, loc string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.data[strings.TrimPrefix(loc, "mem:")]
	if !ok {
		return nil, errors.New("no such spill")
	}
	return d, nil
}

// TestD3_SlowStoreBackPressuresSubCallStarts: while the store writes a
// sub-call's spill, the program's next call does not start (no pending
// writes pile up); once the write returns, it does.
func TestD3_SlowStoreBackPressuresSubCallStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &gateStore{entered: make(chan string, 4), release: make(chan struct{}), data: map[string][]byte{}}
		e := newEnv(t, &spill.Config{Store: st, MaxInlineBytes: 10, PreviewBytes: 4})
		e.tool(t, textTool("big", strings.Repeat("x", 100)))
		done := make(chan tools.Result, 1)
		go func() {
			done <- e.reg.Execute(context.Background(), runCode("c1", `await tools.big({}); await tools.big({}); return "ok"`))
		}()
		if key := <-st.entered; key != "c1:code:1.0.txt" {
			t.Fatalf("first spill key %q", key)
		}
		synctest.Wait()
		if n := len(e.log.ofType(codemode.CodeDispatchStartEvent)); n != 1 {
			t.Fatalf("%d sub-calls started while the first spill was pending, want 1", n)
		}
		st.release <- struct{}{}
		if key := <-st.entered; key != "c1:code:2.0.txt" {
			t.Fatalf("second spill key %q", key)
		}
		if n := len(e.log.ofType(codemode.CodeDispatchStartEvent)); n != 2 {
			t.Fatalf("starts = %d", n)
		}
		st.release <- struct{}{}
		if res := <-done; res.IsError || text(res) != "ok" {
			t.Fatalf("result = %+v", res)
		}
	})
}

// TestD4_SpillsLargeNativeResults: a native call's final text over the
// limit reaches the model as a preview and a locator, the whole in the
// store; a declared output keeps its value; a small result and a
// sub-call's result (what a program receives) are untouched.
func TestD4_SpillsLargeNativeResults(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, &spill.Config{Dir: dir, MaxInlineBytes: 64, PreviewBytes: 8})
	big := strings.Repeat("é", 100) // 200 bytes: the preview cuts at a character boundary
	e.tool(t, textTool("big", big))
	e.tool(t, textTool("small", "tiny"))
	e.tool(t, tools.Definition{Name: "typed", OutputSchema: json.RawMessage(`{"type":"string"}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Value: json.RawMessage(`"` + strings.Repeat("v", 100) + `"`)}, nil
		}})
	ctx := context.Background()
	res := e.reg.Execute(ctx, tools.Call{ID: "n1", Name: "big", Arguments: json.RawMessage(`{}`), Agent: "agent"})
	got := text(res)
	if res.IsError || !strings.HasPrefix(got, "éééé\n… [200 bytes in all; the whole content is spilled to spill:n1.0.txt.") {
		t.Fatalf("native result = %q", got)
	}
	loc := got[strings.Index(got, "spill:") : len(got)-1]
	if whole, err := (spill.DirStore{Dir: dir}).Get(ctx, loc); err != nil || string(whole) != big {
		t.Fatalf("Get = %q, %v", whole, err)
	}
	if res := e.reg.Execute(ctx, tools.Call{ID: "n2", Name: "small", Arguments: json.RawMessage(`{}`)}); text(res) != "tiny" {
		t.Errorf("small = %+v", res)
	}
	res = e.reg.Execute(ctx, tools.Call{ID: "n3", Name: "typed", Arguments: json.RawMessage(`{}`)})
	if res.IsError || string(res.Value) != `"`+strings.Repeat("v", 100)+`"` || !strings.Contains(text(res), "spill:") {
		t.Fatalf("typed = %+v", res)
	}
	res = e.reg.Execute(ctx, runCode("c1", `return (await tools.big({})).length`))
	if res.IsError || text(res) != "100" {
		t.Fatalf("program = %+v", res)
	}
}

// TestD5_DirStoreRefusesForeignLocators: Get resolves only names Put
// makes, inside the directory.
func TestD5_DirStoreRefusesForeignLocators(t *testing.T) {
	dir := t.TempDir()
	st := spill.DirStore{Dir: filepath.Join(dir, "s")}
	ctx := context.Background()
	loc, err := st.Put(ctx, "../../etc/passwd", []byte("x"))
	if err != nil || strings.Contains(loc, "/") {
		t.Fatalf("Put = %q, %v", loc, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outside"), []byte("no"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "spill:", "spill:../outside", "spill:/etc/passwd", "file:" + loc[len("spill:"):], "spill:..", "spill:.tmp-1", "spill:a/b"} {
		if b, err := st.Get(ctx, bad); err == nil {
			t.Errorf("Get(%q) = %q", bad, b)
		}
	}
	if b, err := st.Get(ctx, loc); err != nil || string(b) != "x" {
		t.Fatalf("Get(%q) = %q, %v", loc, b, err)
	}
}

func FuzzDirStoreGet(f *testing.F) {
	for _, s := range []string{"spill:a", "spill:../x", "spill:..", "spill:.x", "spill:a\x00b", "spill:" + strings.Repeat("a", 300)} {
		f.Add(s)
	}
	dir := f.TempDir()
	st := spill.DirStore{Dir: filepath.Join(dir, "s")}
	if err := os.MkdirAll(st.Dir, 0o700); err != nil {
		f.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "outside"), []byte("secret"), 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, loc string) {
		if b, err := st.Get(context.Background(), loc); err == nil && string(b) == "secret" {
			t.Fatalf("Get(%q) read outside the store", loc)
		}
	})
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []spill.Config{{MaxInlineBytes: -1}, {PreviewBytes: -1}, {MaxInlineBytes: 10, PreviewBytes: 11}} {
		if c.Validate() == nil {
			t.Errorf("%+v accepted", c)
		}
	}
	if (spill.Config{}).Validate() != nil {
		t.Error("zero config refused")
	}
}
