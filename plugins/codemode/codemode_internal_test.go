package codemode

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// TestEncodeDispatchMatchesEncodingJSON pins the fast path of the
// tool/code-dispatch payload to what encoding/json produces.
func TestEncodeDispatchMatchesEncodingJSON(t *testing.T) {
	results := []tools.Result{
		{CallID: "c1:code:1", Content: []tools.Content{tools.Text("plain")}},
		{CallID: "c\"1\\", Content: []tools.Content{tools.Text("quotes \" backslash \\ nl \n cr \r tab \t ctl \x01\x1f <>& é \u2028 😀"), tools.Text("")}},
		{CallID: "c", Content: []tools.Content{}, IsError: true, Error: &tools.ErrorInfo{Name: "ToolDenied", Code: tools.CodeDenied}},
		{CallID: "c", Content: []tools.Content{tools.Text("x"), tools.Image("aGk=", "image/png")}},
		{CallID: "c", Content: []tools.Content{tools.Text("x")}, Meta: json.RawMessage(`{"a":1}`)},
	}
	for _, res := range results {
		fast, err := encodeDispatch("tool-é", json.RawMessage(`{"n":1}`), res)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := json.Marshal(tools.CodeDispatch{Name: "tool-é", Arguments: json.RawMessage(`{"n":1}`), Result: res})
		if err != nil {
			t.Fatal(err)
		}
		var a, b any
		if err := json.Unmarshal(fast, &a); err != nil {
			t.Fatalf("fast path is not JSON: %v\n%s", err, fast)
		}
		_ = json.Unmarshal(slow, &b)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("fast %s\nslow %s", fast, slow)
		}
	}
}
