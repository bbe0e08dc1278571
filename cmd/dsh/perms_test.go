package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

// `dsh tools list` does not offer a tool denied without condition; a tool
// with only a conditional deny rule is still offered.
func TestToolsList_DeniedToolsAreNotOffered(t *testing.T) {
	fsBin := npmpeer.Bin(t, "mcp-server-filesystem")
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{"fs": map[string]any{"command": fsBin, "args": []string{dir}}},
		"permissions": map[string]any{
			"deny": []string{"mcp__fs__write_file", "mcp__fs__move_file(source:" + dir + "/**)"},
		},
	}
	b, _ := json.Marshal(cfg)
	p := filepath.Join(t.TempDir(), "dsh.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runDsh(t, nil, "tools", "list", "--config", p)
	if code != 0 || strings.Contains(out, "mcp__fs__write_file\t") || !strings.Contains(out, "mcp__fs__move_file\t") {
		t.Fatalf("exit %d, want write_file hidden and move_file listed:\n%s\n%s", code, out, stderr)
	}
}

// Server names whose tool names could collide with another server's are
// refused at load: a_ (mcp__a___x is also the tool _x of a).
func TestConfig_CollidingServerNamesAreRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "dsh.json")
	if err := os.WriteFile(p, []byte(`{"mcpServers":{"a":{"command":"x"},"a_":{"command":"y"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runDsh(t, nil, "tools", "list", "--config", p)
	if code != exitUsage || !strings.Contains(stderr, `mcpServers.a_: a server name must not end in "_"`) {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
}
