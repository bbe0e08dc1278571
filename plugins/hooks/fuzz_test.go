package hooks_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/dsh-go/dsh/plugins/hooks"
)

// FuzzParsePayload: every input is either a payload whose fields hold what
// the contract says, or a *PayloadError; nothing panics.
func FuzzParsePayload(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"hook_event_name":"PostToolUse","tool_name":"x","tool_input":{},"tool_response":null}`))
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"\u0000","tool_input":{"a":[1,{"b":"\ud800"}]}}`))
	f.Add([]byte(`{"hook_event_name":"PreToolUse","tool_name":"a.b*","tool_input":{},"tool_use_id":""}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := hooks.ParsePayload(data)
		if err != nil {
			var pe *hooks.PayloadError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T %v is not a *PayloadError", err, err)
			}
			if pe.Event != "" && pe.Event != hooks.PreToolUse && pe.Event != hooks.PostToolUse {
				t.Fatalf("error with event %q", pe.Event)
			}
			return
		}
		if p.Event != hooks.PreToolUse && p.Event != hooks.PostToolUse {
			t.Fatalf("event %q", p.Event)
		}
		if p.ToolName == "" {
			t.Fatal("empty tool name accepted")
		}
		var in map[string]any
		if err := json.Unmarshal(p.ToolInput, &in); err != nil || in == nil {
			t.Fatalf("tool_input %q is not an object: %v", p.ToolInput, err)
		}
		if (p.Event == hooks.PostToolUse) != (p.ToolResponse != nil) || p.ToolResponse != nil && !json.Valid(p.ToolResponse) {
			t.Fatalf("tool_response %q for %s", p.ToolResponse, p.Event)
		}
		// Reading the same bytes through ReadPayload agrees.
		q, err := hooks.ReadPayload(bytes.NewReader(data))
		if err != nil || q.ToolName != p.ToolName || !bytes.Equal(q.ToolInput, p.ToolInput) {
			t.Fatalf("ReadPayload disagrees: %+v %v", q, err)
		}
	})
}
