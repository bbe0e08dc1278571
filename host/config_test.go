package host_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
)

type cfgT struct{ N int }

func TestDecodeConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  any
		want int
		err  string
	}{
		{"value", cfgT{N: 1}, 1, ""},
		{"pointer", &cfgT{N: 2}, 2, ""},
		{"nil pointer", (*cfgT)(nil), 0, ""},
		{"nil", nil, 0, ""},
		{"wrong type", map[string]any{}, 0, "host: wrong configuration type: got map[string]interface {}, want host_test.cfgT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := host.New()
			defer h.Close()
			var got cfgT
			var gotErr error
			f, err := h.Root().Plugin(host.Define("cfg", nil, func(c *host.Context) error {
				got, gotErr = host.DecodeConfig[cfgT](c)
				return gotErr
			}), tc.cfg)
			if tc.err != "" {
				if !errors.Is(gotErr, host.ErrConfigType) || !strings.Contains(gotErr.Error(), tc.err) || f.State() != host.Failed {
					t.Fatalf("err = %v (state %v), want %q", gotErr, f.State(), tc.err)
				}
				if !errors.Is(err, gotErr) {
					t.Fatalf("Plugin returned %v, want the failure %v wrapped", err, gotErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if gotErr != nil || got.N != tc.want {
				t.Fatalf("got %+v, %v; want N=%d", got, gotErr, tc.want)
			}
		})
	}
}

type validated struct{ N int }

func (v validated) Validate() error {
	if v.N < 0 {
		return errors.New("N must not be negative")
	}
	return nil
}

// TestDecodeConfigValidates: a configuration type with a Validate method
// is checked before the plugin sees it, and the plugin fails naming why.
func TestDecodeConfigValidates(t *testing.T) {
	h := host.New()
	defer h.Close()
	p := host.Define("v", nil, func(c *host.Context) error {
		_, err := host.DecodeConfig[validated](c)
		return err
	})
	f, err := h.Root().Plugin(p, validated{N: -1})
	if f.State() != host.Failed || err == nil || !strings.Contains(err.Error(), "plugin v failed: host: invalid configuration: N must not be negative") {
		t.Fatalf("state %v, err %v", f.State(), err)
	}
	if err := f.Update(&validated{N: 2}); err != nil || f.State() != host.Active {
		t.Fatalf("after a valid update: %v %v", f.State(), err)
	}
}
