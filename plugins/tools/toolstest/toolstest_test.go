package toolstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestBootRegistersAndExecutes(t *testing.T) {
	echo := host.Define("echo", []host.ServiceKey{tools.Service}, func(c *host.Context) error {
		reg, err := tools.Service.Get(c)
		if err != nil {
			return err
		}
		_, err = reg.Register(c, tools.Definition{
			Name: "echo", Description: "Echo.", Parameters: json.RawMessage(`{"type":"object"}`),
			Execute: func(_ context.Context, e *tools.Execution) (tools.Output, error) {
				return tools.Output{Content: []tools.Content{tools.Text(e.ArgsString())}}, nil
			},
		})
		return err
	})
	reg := toolstest.Boot(t, []toolstest.Plugin{{P: echo}})
	r := reg.Execute(context.Background(), tools.Call{ID: "1", Name: "echo", Arguments: json.RawMessage(`{"a": 1}`)})
	if r.IsError || r.Content[0].Text != `{"a":1}` {
		t.Fatalf("result = %+v", r)
	}
}

func TestLoadReportsAFailedPlugin(t *testing.T) {
	h := host.New()
	defer h.Close()
	bad := host.Define("bad", nil, func(*host.Context) error { return context.Canceled })
	err := toolstest.Load(h.Root(), toolstest.Plugin{P: bad})
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "plugin bad failed") {
		t.Fatalf("err = %v", err)
	}
}

func TestLogBufferConcurrentWrites(t *testing.T) {
	var log toolstest.LogBuffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = log.Write([]byte("x"))
			}
		})
	}
	wg.Wait()
	if n := len(log.String()); n != 800 {
		t.Fatalf("wrote %d bytes, want 800", n)
	}
}
