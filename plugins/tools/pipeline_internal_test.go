package tools

import (
	"testing"
	"unsafe"
)

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

// TestSchedFinishKeepsLaterReleases: entries finish in order, but an entry
// may finish after later entries were released (a parallel call's
// tools/result comes after the next calls were dispatched). Finishing
// entry 0 then must not move the released counter back: the next call to
// enter (entry 2) would wait for entry 1 to finish, not to be released,
// and a dispatch slot would go unused meanwhile
// (TestB2_CapBoundsTheDispatchesAtOnce/cap_3 failed so, 3% of its runs).
func TestSchedFinishKeepsLaterReleases(t *testing.T) {
	s := newSched(nil, 2)
	e0, e1 := &entry{index: 0, class: Parallel}, &entry{index: 1, class: Parallel}
	s.release(e0, false)
	s.release(e1, false)     // entry 1 dispatched: entry 2 may enter
	s.finishEntry(e0, false) // entry 0's tools/result only now
	if s.released != 2 || s.finished != 1 {
		t.Errorf("released, finished = %d, %d; want 2, 1", s.released, s.finished)
	}
	s.finishEntry(e1, false)
	if s.released != 2 || s.finished != 2 {
		t.Errorf("released, finished = %d, %d; want 2, 2", s.released, s.finished)
	}
}

// TestPerf24_ExecutionFitsASmallObject: an Execution, allocated once per
// call, stays at most 512 bytes, the largest size the runtime allocates
// without a per-object type header (above it, every call pays for the
// header and the next size class, 576 bytes). Fields only listeners need
// belong elsewhere once it would not fit.
func TestPerf24_ExecutionFitsASmallObject(t *testing.T) {
	if n := unsafe.Sizeof(Execution{}); n > 512 {
		t.Errorf("Execution is %d bytes, want at most 512", n)
	}
}
