package catalog

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/systemprompt"
)

func TestRenderToolsGolden(t *testing.T) {
	entries := []ToolEntry{
		{Package: "example.com/fs", Plugin: "fs", Schema: systemprompt.ToolSchema{Name: "write", Description: "Write a file. Creates it.", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}, Config: "root: a temporary workspace", Concurrency: "exclusive"},
		{Package: "example.com/bash", Plugin: "bash", Schema: systemprompt.ToolSchema{Name: "bash", Description: "Run a | command.", Parameters: json.RawMessage(`{"type":"object"}`)}, Services: []string{"tools"}},
		{Package: "example.com/fs", Plugin: "fs", Schema: systemprompt.ToolSchema{Name: "read", Description: "Read a file.", Parameters: json.RawMessage(`{"type":"object"}`)}, Concurrency: "parallel"},
	}
	got, err := RenderTools(entries)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "tools.golden.md", got)
}

func TestRenderToolsRejectsBadSchema(t *testing.T) {
	_, err := RenderTools([]ToolEntry{{Schema: systemprompt.ToolSchema{Name: "x", Parameters: json.RawMessage(`{`)}}})
	if err == nil || !strings.Contains(err.Error(), `tool "x"`) {
		t.Fatalf("want an error naming the tool, got %v", err)
	}
}
