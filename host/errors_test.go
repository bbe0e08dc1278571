package host_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
)

// Every error the host returns starts with "host: ", once, whichever call
// made it.
func TestErrorsCarryThePackagePrefix(t *testing.T) {
	h, _ := newHost(t)
	var kept *host.Context
	f := must[*host.Fiber](t)(h.Root().Plugin(host.Define("kept", nil, func(c *host.Context) error { kept = c; return nil }), nil))
	if err := f.Dispose(); err != nil {
		t.Fatal(err)
	}
	must[host.Disposer](t)(host.On(h.Root(), evPropagate, func(context.Context, string) error { return errors.New("no") }))
	must[host.Disposer](t)(host.On(h.Root(), evParallel, func(context.Context, string) error { panic("boom") }))
	decode := func(cfg any) error {
		_, err := h.Root().Plugin(host.Define("cfg", nil, func(c *host.Context) error {
			_, err := host.DecodeConfig[validated](c)
			return err
		}), cfg)
		return err
	}
	for name, call := range map[string]func() error{
		"ValidateScopeKey":    func() error { return host.ValidateScopeKey("a b") },
		"ValidateServiceName": func() error { return host.ValidateServiceName("A") },
		"Scope":               func() error { _, err := h.Root().Scope(""); return err },
		"On a closed fiber":   func() error { _, err := host.On(kept, evPing, noopPing); return err },
		"Track a closed fiber": func() error {
			_, err := kept.Track(host.EffectCustom, "x", func() error { return nil })
			return err
		},
		"Effect a closed fiber": func() error {
			_, err := kept.Effect("x", func() (func() error, error) { return nil, nil })
			return err
		},
		"Plugin a closed fiber": func() error {
			_, err := kept.Plugin(host.Define("x", nil, func(*host.Context) error { return nil }), nil)
			return err
		},
		"Provide nil":           func() error { _, err := host.NewService[error]("svc").Provide(h.Root(), nil); return err },
		"ProvideAny wrong type": func() error { _, err := svcSvc.ProvideAny(h.Root(), "text"); return err },
		"zero Service":          func() error { _, err := host.Service[int]{}.Get(h.Root()); return err },
		"Get missing":           func() error { _, err := svcAbsent.Get(h.Root()); return err },
		"Get another type": func() error {
			off, err := svcSvc.Provide(h.Root(), 1)
			if err != nil {
				return nil
			}
			defer off()
			_, err = host.NewService[string]("svc").Get(h.Root())
			return err
		},
		"Wait disposed":        func() error { return f.Wait(context.Background()) },
		"Update disposed":      func() error { return f.Update(1) },
		"Update root":          func() error { return h.Root().Fiber().Update(1) },
		"DecodeConfig type":    func() error { return decode("wrong") },
		"DecodeConfig invalid": func() error { return decode(validated{N: -1}) },
		"Apply panics": func() error {
			_, err := h.Root().Plugin(host.Define("panics", nil, func(*host.Context) error { panic("x") }), nil)
			return err
		},
		"listener fails":  func() error { return host.Emit(context.Background(), h.Root().Emitter(), evPropagate, "") },
		"listener panics": func() error { return host.Emit(context.Background(), h.Root().Emitter(), evParallel, "") },
	} {
		t.Run(name, func(t *testing.T) {
			err := call()
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "host: ") || strings.Count(msg, "host: ") > 2 {
				t.Errorf("%q does not start with the package prefix (once per host layer)", msg)
			}
		})
	}
}
