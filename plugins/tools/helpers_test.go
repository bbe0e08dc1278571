package tools_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

func TestMain(m *testing.M) {
	isolated.ServeIfWorker()
	goleak.VerifyTestMain(m)
}

type env struct {
	t    *testing.T
	h    *host.Host
	root *host.Context
	reg  *tools.Registry
}

func newEnv(t testing.TB) *env {
	t.Helper()
	h := host.New()
	root := h.Root()
	if _, err := root.Plugin(systemprompt.Plugin, nil); err != nil {
		t.Fatal(err)
	}
	f, err := root.Plugin(tools.Plugin, tools.Config{Mode: tools.Native})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	tt, _ := t.(*testing.T)
	return &env{t: tt, h: h, root: root, reg: reg}
}

func (e *env) scope(t testing.TB, key host.ScopeKey) *host.Context {
	t.Helper()
	c, err := e.root.Scope(key)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// echo returns a definition whose body replies with text.
func echo(name, text string) tools.Definition {
	return tools.Definition{
		Name:        name,
		Description: "Replies " + text + ".",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(text)}}, nil
		},
	}
}

func mustRegister(t testing.TB, r *tools.Registry, c *host.Context, d tools.Definition) host.Disposer {
	t.Helper()
	off, err := r.Register(c, d)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

func text(r tools.Result) string {
	s := ""
	for _, c := range r.Content {
		s += c.Text
	}
	return s
}

func code(r tools.Result) tools.ErrorCode {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// recorder collects tools/result notices.
type recorder struct {
	mu      sync.Mutex
	notices []tools.ResultNotice
}

func (rc *recorder) listen(t testing.TB, c *host.Context) {
	t.Helper()
	must2(t)(host.On(c, tools.ResultEvent, func(_ context.Context, n tools.ResultNotice) error {
		rc.mu.Lock()
		rc.notices = append(rc.notices, n)
		rc.mu.Unlock()
		return nil
	}))
}

func (rc *recorder) count() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return len(rc.notices)
}

func call(name string, args string) tools.Call {
	return tools.Call{ID: "c-" + name, Name: name, Arguments: json.RawMessage(args)}
}
