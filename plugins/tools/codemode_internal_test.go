package tools

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestEncodeDispatchMatchesEncodingJSON pins the fast path of the
// tool/code-dispatch payload to what encoding/json produces.
func TestEncodeDispatchMatchesEncodingJSON(t *testing.T) {
	results := []Result{
		{CallID: "c1:code:1", Content: []Content{Text("plain")}},
		{CallID: "c\"1\\", Content: []Content{Text("quotes \" backslash \\ nl \n cr \r tab \t ctl \x01\x1f <>& é \u2028 😀"), Text("")}},
		{CallID: "c", Content: []Content{}, IsError: true, Error: &ErrorInfo{Name: "ToolDenied", Code: CodeDenied}},
		{CallID: "c", Content: []Content{Text("x"), Image("aGk=", "image/png")}},
		{CallID: "c", Content: []Content{Text("x")}, Meta: json.RawMessage(`{"a":1}`)},
	}
	for _, res := range results {
		fast, err := encodeDispatch("tool-é", json.RawMessage(`{"n":1}`), res)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := json.Marshal(CodeDispatch{Name: "tool-é", Arguments: json.RawMessage(`{"n":1}`), Result: res})
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
