package codemode_test

// The registry test helpers Code Mode's tests share with package tools' (a copy: tests of two
// packages cannot share test files).

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
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

func must2(t testing.TB) func(host.Disposer, error) host.Disposer {
	return func(d host.Disposer, err error) host.Disposer {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
}

var sink tools.Result

func trivial() tools.Definition {
	return tools.Definition{
		Name: "trivial", Description: "Does nothing.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number"}}}`),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	}
}
