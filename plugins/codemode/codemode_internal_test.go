package codemode

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

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
	start := time.Date(2026, 12, 3, 23, 59, 1, 123456789, time.UTC)
	timings := []*tools.DispatchTiming{nil, {StartedAt: start, SettledAt: start.Add(1500 * time.Microsecond), DurationMs: 1.5}}
	for i, res := range append(results, tools.Result{CallID: "v", Content: []tools.Content{tools.Text("[1,2]")}, Value: json.RawMessage(`[1,2]`)}) {
		timing := timings[i%2]
		fast, err := encodeDispatch("tool-é", json.RawMessage(`{"n":1}`), res, timing)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := json.Marshal(tools.CodeDispatch{Name: "tool-é", Arguments: json.RawMessage(`{"n":1}`), Result: res, Timing: timing})
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
