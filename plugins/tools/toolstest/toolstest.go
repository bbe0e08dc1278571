package toolstest

import (
	"bytes"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/systemprompt"
	"github.com/dsh-go/dsh/plugins/tools"
)

// Plugin is a plugin to load with its configuration.
type Plugin struct {
	P      host.Plugin
	Config any
}

// Setup loads the system prompt service and the tool registry (native
// mode) into root, failing unless both reach Active.
func Setup(root *host.Context) error {
	return Load(root, Plugin{systemprompt.Plugin, systemprompt.Config{}}, Plugin{tools.Plugin, tools.Config{Mode: tools.Native}})
}

// Load loads ps into root in order, failing unless each reaches Active.
func Load(root *host.Context, ps ...Plugin) error {
	for _, p := range ps {
		if _, err := root.Plugin(p.P, p.Config); err != nil {
			return err
		}
	}
	return nil
}

// Boot creates a host (closed when the test ends), loads the
// infrastructure and then ps, and returns the registry. opts configure the
// host (a logger, say).
func Boot(t testing.TB, ps []Plugin, opts ...host.Option) *tools.Registry {
	t.Helper()
	h := host.New(opts...)
	t.Cleanup(func() { _ = h.Close() })
	if err := Setup(h.Root()); err != nil {
		t.Fatal(err)
	}
	if err := Load(h.Root(), ps...); err != nil {
		t.Fatal(err)
	}
	reg, err := tools.Service.Get(h.Root())
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// LogBuffer is a log sink that is safe for concurrent use, for a host's
// zerolog logger in tests that assert on what was logged:
//
//	var log toolstest.LogBuffer
//	h := host.New(host.WithLogger(zerolog.New(&log)))
type LogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (l *LogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns everything written so far.
func (l *LogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
