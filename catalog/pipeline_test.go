package catalog

import (
	"strings"
	"testing"
)

var testStages = []Stage{
	{ID: "snapshot", Title: "snapshot input", Kind: "internal", Doc: "Assign the token.", OnFailure: "INVALID_ARGS", FailTo: "post"},
	{ID: "pre", Title: "tools/pre-execute", Kind: "waterfall", Doc: "Allow | deny | ask.", OnFailure: "deny", FailTo: "post"},
	{ID: "guards", Title: "guards", Kind: "guard", Doc: "Monotonic."},
	{ID: "exec", Title: "tools/execute", Kind: "waterfall", Doc: "Around dispatch."},
	{ID: "post", Title: "tools/post-execute", Kind: "waterfall", Doc: "Accept or block."},
	{ID: "result", Title: "tools/result", Kind: "observe", Doc: "Observe only."},
}

func TestRenderPipelineGolden(t *testing.T) {
	got, err := RenderPipeline(testStages)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "pipeline.golden.md", got)
}

func TestRenderPipelineRejectsDrift(t *testing.T) {
	bad := append([]Stage(nil), testStages...)
	bad[0].FailTo = "nowhere"
	if _, err := RenderPipeline(bad); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Fatalf("want an error naming the unknown stage, got %v", err)
	}
	dup := append([]Stage(nil), testStages...)
	dup[1].ID = "snapshot"
	if _, err := RenderPipeline(dup); err == nil {
		t.Fatal("duplicate ids accepted")
	}
}
