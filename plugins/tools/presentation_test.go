package tools_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestCodeModesNeedCodeModePlugin: the plain registry plugin presents natively only; loading it
// under mode code or both fails, naming the plugin that presents them (package plugins/codemode).
func TestCodeModesNeedCodeModePlugin(t *testing.T) {
	for _, m := range []tools.Mode{tools.Code, tools.Both} {
		h := host.New()
		f, _ := h.Root().Plugin(tools.Plugin, tools.Config{Mode: m})
		if f.State() != host.Failed || !strings.Contains(f.Err().Error(), "load codemode.Plugin") {
			t.Errorf("%s: state %v err %v; want a failure naming codemode.Plugin", m, f.State(), f.Err())
		}
		_ = h.Close()
	}
}

// TestPA7_CodeOrBothNeedsCodeMode: on the plain registry plugin (no Code Mode attached) an agent
// can present as native, but choosing code or both fails with ErrNoCodeMode, naming
// codemode.Plugin, and leaves the agent native.
func TestPA7_CodeOrBothNeedsCodeMode(t *testing.T) {
	e := newEnv(t)
	for _, m := range []tools.Mode{tools.Code, tools.Both} {
		_, err := e.reg.PresentAs(e.scope(t, host.ScopeKey("agent-"+string(m))), m)
		if !errors.Is(err, tools.ErrNoCodeMode) || !strings.Contains(err.Error(), "load codemode.Plugin") {
			t.Errorf("%s: %v; want ErrNoCodeMode naming codemode.Plugin", m, err)
		}
		if got := e.reg.ModeOf(host.ScopeKey("agent-" + string(m))); got != tools.Native {
			t.Errorf("%s: ModeOf = %q after the refusal", m, got)
		}
	}
	a := e.scope(t, "a")
	off, err := e.reg.PresentAs(a, tools.Native)
	if err != nil {
		t.Fatalf("native: %v", err)
	}
	if _, err := e.reg.PresentAs(a, tools.Native); !errors.Is(err, tools.ErrPresentedTwice) {
		t.Errorf("second native declaration: %v", err)
	}
	if err := off(); err != nil {
		t.Fatal(err)
	}
	if got := e.reg.Reserved(); got != nil {
		t.Errorf("Reserved without Code Mode = %v", got)
	}
}
