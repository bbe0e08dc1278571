package tools_test

import (
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
