package mcpserver

import (
	"encoding/json"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// FuzzResultMapping: any result maps to MCP without panicking, one block
// per block, isError kept, structuredContent only from a success's Meta
// and always valid JSON; objectSchema only ever serves object schemas.
func FuzzResultMapping(f *testing.F) {
	f.Add(`{"structuredContent":{"a":1}}`, "text", "x", "aGk=", false)
	f.Add(`{"structuredContent":null}`, "image", "", "!!", true)
	f.Add(`[]`, "resource", "t", "aGk=", false)
	f.Add(`{"type":"string"}`, "resource_link", "", "", false)
	f.Fuzz(func(t *testing.T, meta, typ, text, data string, isErr bool) {
		r := tools.Result{
			Content: []tools.Content{{Type: typ, Text: text, Data: data}, tools.Text(text)},
			IsError: isErr,
			Meta:    json.RawMessage(meta),
		}
		if isErr {
			r.Error = &tools.ErrorInfo{Code: "X", Name: "Y"}
		}
		out := toMCP(r)
		if len(out.Content) != 2 || out.IsError != isErr {
			t.Fatalf("mapped %d blocks, isError %v", len(out.Content), out.IsError)
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("the mapped result does not marshal: %v", err)
		}
		if out.StructuredContent != nil {
			if isErr {
				t.Fatal("structuredContent on an error")
			}
			if !json.Valid(out.StructuredContent.(json.RawMessage)) {
				t.Fatal("invalid structuredContent")
			}
		}
		if s, ok := objectSchema(json.RawMessage(meta)); ok {
			var m map[string]any
			if json.Unmarshal(s, &m) != nil || m["type"] != "object" {
				t.Fatalf("objectSchema served %s", s)
			}
		}
	})
}
