package catalog

import (
	"strings"
	"testing"
)

func TestRenderACPGolden(t *testing.T) {
	got := RenderACP([]ACPRow{
		{Update: "tool_call", Source: "GenericCall.Title", Field: "title"},
		{Update: "tool_call", Source: "GenericCall.Kind", Field: "kind", Note: "an ACP kind as is; else `other`"},
		{Update: "tool_call_update", Source: "Result.IsError", Field: "status", Note: "`failed` when true | else `completed`"},
		{Update: "tool_call", Source: "DiffCall.Diffs", Field: "content[].diff", Note: "path,\n oldText, newText"},
	})
	golden(t, "acp.golden.md", got)
}

// TestRenderACPGroupsByUpdateInFirstSeenOrder: one table per update, in
// the order the rows first name them, each row once, no cell broken by a
// pipe or a newline.
func TestRenderACPGroupsByUpdateInFirstSeenOrder(t *testing.T) {
	got := RenderACP([]ACPRow{
		{Update: "b", Source: "s1", Field: "f1"},
		{Update: "a", Source: "s2", Field: "f2", Note: "x | y\nz"},
		{Update: "b", Source: "s3", Field: "f3"},
	})
	if i, j := strings.Index(got, "### `b`"), strings.Index(got, "### `a`"); i < 0 || j < 0 || i > j {
		t.Fatalf("tables out of order:\n%s", got)
	}
	if !strings.Contains(got, "| `s2` | `f2` | x \\| y z |\n") {
		t.Errorf("cell not escaped:\n%s", got)
	}
	if strings.Count(got, "`s1`") != 1 || strings.Count(got, "`s3`") != 1 {
		t.Errorf("rows repeated or lost:\n%s", got)
	}
	if b := got[strings.Index(got, "### `b`"):strings.Index(got, "### `a`")]; !strings.Contains(b, "`s1`") || !strings.Contains(b, "`s3`") {
		t.Errorf("rows of b not in b's table:\n%s", got)
	}
}
