package tools

import "testing"

// TestStageIndexesMatchStages keeps the stage constants (Execution.stage,
// which names the stage of a runtime.Goexit) in step with the Stages
// table.
func TestStageIndexesMatchStages(t *testing.T) {
	for i, name := range map[int]string{
		stageSnapshot: "snapshot", stageValidateArgs: "validate-args", stagePreExecute: "pre-execute",
		stageApproval: "approval", stageGuards: "guards", stageExecute: "execute", stageDispatch: "dispatch",
		stagePostExecute: "post-execute", stageFinalize: "finalize", stageResult: "result",
	} {
		if Stages[i].Name != name {
			t.Errorf("stage constant %d is %q in Stages, want %q", i, Stages[i].Name, name)
		}
	}
	if len(Stages) != stageResult+1 {
		t.Errorf("Stages has %d entries, the constants %d", len(Stages), stageResult+1)
	}
}
