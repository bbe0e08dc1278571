package toolbash_test

import (
	"encoding/json"
	"testing"

	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB1_BashIsNeverParallel: a command may change anything, so every
// bash call is a barrier in a batch, whatever its arguments.
func TestB1_BashIsNeverParallel(t *testing.T) {
	reg := boot(t, toolbash.Config{Dir: t.TempDir()})
	for _, args := range []string{`{"command":"ls"}`, `{"command":"cat a","description":"read only"}`} {
		if got := reg.Concurrency(tools.Call{ID: "c", Name: "bash", Arguments: json.RawMessage(args)}); got != tools.Exclusive {
			t.Errorf("%s: %v", args, got)
		}
	}
	tl, _ := reg.Get("bash", "")
	if got := tools.DescribeConcurrency(tl.ConcurrencyRule()); got != "exclusive" {
		t.Errorf("declared %q", got)
	}
}
