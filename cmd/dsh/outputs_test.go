package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// TestOUT13_GatewayCarriesOutputSchemaAndStructuredContent: a tool the
// everything server declares with an outputSchema is served by the
// gateway with it (issue 21: served tools lost outputSchema), and a call
// returns the server's structured content, validated on the way, beside
// the content; a go-sdk client (which checks structuredContent against
// the outputSchema) accepts it.
func TestOUT13_GatewayCarriesOutputSchemaAndStructuredContent(t *testing.T) {
	t.Setenv(tokenEnv, testToken)
	cfg := writeConfig(t, map[string]any{
		"mcpServers": map[string]any{"ev": map[string]any{"command": npmpeer.Bin(t, "mcp-server-everything"), "args": []string{"stdio"}}},
	})
	s := startServe(t, cfg, "127.0.0.1:0")
	cs, err := connect(t, s.url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v\n%s", err, s.stderr.String())
	}
	var tool *mcp.Tool
	for _, x := range lt.Tools {
		if x.Name == "mcp__ev__get-structured-content" {
			tool = x
		}
	}
	if tool == nil || tool.OutputSchema == nil {
		t.Fatalf("get-structured-content served without its outputSchema: %+v", tool)
	}
	if b, _ := json.Marshal(tool.OutputSchema); !strings.Contains(string(b), `"conditions"`) {
		t.Fatalf("outputSchema %s", b)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: map[string]any{"location": "Chicago"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var v struct {
		Conditions string `json:"conditions"`
	}
	if json.Unmarshal(b, &v) != nil || v.Conditions == "" || len(res.Content) == 0 {
		t.Fatalf("structuredContent %s, content %v", b, res.Content)
	}
}
