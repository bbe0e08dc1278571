package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/systemprompt"
)

func TestRenderToolsShowsAnnotations(t *testing.T) {
	schema := func(name string) systemprompt.ToolSchema {
		return systemprompt.ToolSchema{Name: name, Description: "d.", Parameters: json.RawMessage(`{"type":"object"}`)}
	}
	got, err := RenderTools([]ToolEntry{
		{Package: "p", Plugin: "p", Schema: schema("hinted"), Annotations: "read-only, closed-world (untrusted hints)"},
		{Package: "p", Plugin: "p", Schema: schema("plain")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "### hinted\n\nd.\n\n- plugin: `p`\n- in a batch: exclusive\n- annotations: read-only, closed-world (untrusted hints)\n") {
		t.Fatalf("annotations line missing:\n%s", got)
	}
	if strings.Count(got, "- annotations:") != 1 {
		t.Fatalf("a tool without annotations got a line:\n%s", got)
	}
}
