package tools_test

import (
	"cmp"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestStagesMatchThePipelineCode keeps the stage table (which the
// generated pipeline diagram is drawn from) in step with the code: every
// stage is marked "Stage N, <event or name>" in pipeline.go, in the
// table's order, and every failure edge leads to a later stage.
func TestStagesMatchThePipelineCode(t *testing.T) {
	src, err := os.ReadFile("pipeline.go")
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]int{}
	for i, s := range tools.Stages {
		index[s.Name] = i
		mark := fmt.Sprintf("Stage %d, %s", i+1, cmp.Or(s.Event, s.Name))
		if !strings.Contains(string(src), mark) {
			t.Errorf("pipeline.go has no %q comment: the stage table and the code disagree", mark)
		}
	}
	if strings.Contains(string(src), fmt.Sprintf("Stage %d, ", len(tools.Stages)+1)) {
		t.Errorf("pipeline.go marks a stage %d that the table lacks", len(tools.Stages)+1)
	}
	for i, s := range tools.Stages {
		if (s.FailTo == "") != (s.OnFailure == "") {
			t.Errorf("stage %s: OnFailure and FailTo go together", s.Name)
		}
		if s.FailTo == "" {
			continue
		}
		j, ok := index[s.FailTo]
		if !ok || j <= i {
			t.Errorf("stage %s fails to %q, which is not a later stage", s.Name, s.FailTo)
		}
	}
}
