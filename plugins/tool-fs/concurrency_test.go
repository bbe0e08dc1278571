package toolfs_test

import (
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestB1_ReadRunsInParallelWritesAreBarriers: read declares every call
// parallel-safe; write and edit change the workspace, so each is a
// barrier in a batch.
func TestB1_ReadRunsInParallelWritesAreBarriers(t *testing.T) {
	reg, _ := boot(t)
	args := map[string]string{"read": `{"path":"a.txt"}`, "write": `{"path":"a.txt","content":"x"}`, "edit": `{"path":"a.txt","old_string":"x","new_string":"y"}`}
	for name, want := range map[string]tools.Concurrency{"read": tools.Parallel, "write": tools.Exclusive, "edit": tools.Exclusive} {
		args := json.RawMessage(args[name])
		if got := reg.Concurrency(tools.Call{ID: "c", Name: name, Arguments: args}); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
