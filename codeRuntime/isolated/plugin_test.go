package isolated_test

import (
	"context"
	"errors"
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/goja"
	"github.com/dsh-go/dsh/codeRuntime/isolated"
	"github.com/dsh-go/dsh/host"
)

func TestPluginProvidesRuntime(t *testing.T) {
	h := host.New()
	defer h.Close()
	root := h.Root()
	f, err := root.Plugin(isolated.Plugin, coderuntime.Config{Timeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Err(); err != nil {
		t.Fatal(err)
	}
	if got := f.Name(); got != "code-runtime" {
		t.Errorf("fiber name %q, want code-runtime", got)
	}
	rt, ok := coderuntime.Service.Lookup(root)
	if !ok {
		t.Fatal("no coderuntime.Runtime under code-runtime")
	}
	if rt.Language() != "typescript" {
		t.Errorf("language %q", rt.Language())
	}
	g, ok := rt.(*isolated.Runtime)
	if !ok {
		t.Fatalf("runtime is a %T, want *isolated.Runtime (the default isolation)", rt)
	}
	if g.Config().Timeout != time.Hour {
		t.Errorf("config not applied: timeout %v", g.Config().Timeout)
	}
	res, err := rt.Run(context.Background(), coderuntime.Program{Source: "return 1 + 1"})
	if err != nil || string(res.Value) != "2" {
		t.Fatalf("Run = %+v, %v", res, err)
	}

	// Disposing the fiber withdraws the service and closes the runtime: its workers are gone.
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	if _, ok := coderuntime.Service.Lookup(root); ok {
		t.Error("runtime still provided after the fiber was disposed")
	}
	_, err = rt.Run(context.Background(), coderuntime.Program{Source: "return 1"})
	var fail *coderuntime.Failure
	if !errors.As(err, &fail) || fail.Kind != coderuntime.KindAbort || !errors.Is(err, isolated.ErrClosed) {
		t.Errorf("Run after dispose = %v, want an abort failure caused by ErrClosed", err)
	}
}

func TestPluginIsolationNoneProvidesGoja(t *testing.T) {
	h := host.New()
	defer h.Close()
	if _, err := h.Root().Plugin(isolated.Plugin, coderuntime.Config{Isolation: coderuntime.IsolationNone}); err != nil {
		t.Fatal(err)
	}
	rt, _ := coderuntime.Service.Lookup(h.Root())
	if _, ok := rt.(*goja.Runtime); !ok {
		t.Fatalf("runtime is a %T, want *goja.Runtime", rt)
	}
}

func TestPluginConfigForms(t *testing.T) {
	cases := []struct {
		name    string
		cfg     any
		wantErr bool
	}{
		{"nil", nil, false},
		{"value", coderuntime.Config{}, false},
		{"pointer", &coderuntime.Config{MaxLogBytes: 10}, false},
		{"nil pointer", (*coderuntime.Config)(nil), false},
		{"negative", coderuntime.Config{Timeout: -1}, true},
		{"wrong type", "fast", true},
		{"unknown engine", coderuntime.Config{Engine: "v8"}, true},
		{"unknown isolation", coderuntime.Config{Isolation: "vm"}, true},
		{"tiny memory cap", coderuntime.Config{MaxMemoryBytes: 1 << 20}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := host.New()
			defer h.Close()
			_, err := h.Root().Plugin(isolated.Plugin, tc.cfg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Plugin: %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !errors.Is(err, coderuntime.ErrInvalidConfig) {
				t.Errorf("error %v does not wrap ErrInvalidConfig", err)
			}
			_, ok := coderuntime.Service.Lookup(h.Root())
			if ok == tc.wantErr {
				t.Errorf("service provided = %v with config error = %v", ok, tc.wantErr)
			}
		})
	}
}

func TestPluginUpdateReplacesRuntime(t *testing.T) {
	h := host.New()
	defer h.Close()
	f, err := h.Root().Plugin(isolated.Plugin, nil)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := coderuntime.Service.Lookup(h.Root())
	if err := f.Update(coderuntime.Config{MaxLogBytes: 128}); err != nil {
		t.Fatal(err)
	}
	second, ok := coderuntime.Service.Lookup(h.Root())
	if !ok || second == first {
		t.Fatalf("runtime not replaced on update (ok=%v)", ok)
	}
	if got := second.(interface{ Config() coderuntime.Config }).Config().MaxLogBytes; got != 128 {
		t.Errorf("MaxLogBytes = %d", got)
	}
}
