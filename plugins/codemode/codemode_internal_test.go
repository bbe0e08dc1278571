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
	timings := []*tools.DispatchTiming{nil, {StartedAt: start, SettledAt: start.Add(1500 * time.Microsecond), DurationMs: 1.5},
		nil, {StartedAt: start.In(time.FixedZone("x", 3600)), SettledAt: start, DurationMs: 0.000001},
		nil, {StartedAt: time.Time{}, SettledAt: start, DurationMs: 0}, nil, {StartedAt: start, SettledAt: start, DurationMs: 1e-9}}
	for i, res := range append(results, tools.Result{CallID: "v", Content: []tools.Content{tools.Text("[1,2]")}, Value: json.RawMessage(`[1,2]`)}) {
		timing := timings[i%len(timings)]
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

// TestEncodeDispatchStartMatchesEncodingJSON pins the start event's
// payload to what encoding/json produces.
func TestEncodeDispatchStartMatchesEncodingJSON(t *testing.T) {
	for _, at := range []time.Time{
		time.Date(2026, 12, 3, 23, 59, 1, 123456789, time.UTC),
		time.Date(2000, 1, 1, 0, 0, 0, 0, time.FixedZone("x", -7200)),
		{},
		time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC),
	} {
		fast, err := encodeDispatchStart("tool-é\"", json.RawMessage(`{"n":1}`), at)
		slow, serr := json.Marshal(tools.CodeDispatchStart{Name: "tool-é\"", Arguments: json.RawMessage(`{"n":1}`), StartedAt: at})
		if (err != nil) != (serr != nil) || string(fast) != string(slow) {
			t.Errorf("%v: fast %s (%v)\nslow %s (%v)", at, fast, err, slow, serr)
		}
	}
}

// TestEncodeDispatchKeepsNoTiming: encodeDispatch keeps no pointer to the timing it is given, so
// appendSettled's timing stays on its stack when no tools/code-dispatch-log listener is registered
// and a logged sub-call allocates only the payload here (before, the timing escaped through the
// slow path's json.Marshal: one more object per sub-call).
func TestEncodeDispatchKeepsNoTiming(t *testing.T) {
	if raceInternal {
		t.Skip("the race detector changes allocation counts")
	}
	res := tools.Result{CallID: "c1:code:1", Content: []tools.Content{tools.Text("ok")}}
	start := time.Date(2026, 12, 3, 23, 59, 1, 123456789, time.UTC)
	args := json.RawMessage(`{"x":1}`)
	allocs := testing.AllocsPerRun(100, func() {
		timing := tools.DispatchTiming{StartedAt: start, SettledAt: start.Add(time.Millisecond), DurationMs: 1}
		if _, err := encodeDispatch("trivial", args, res, &timing); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Fatalf("encodeDispatch with a timing allocates %.0f objects, want 1 (its payload)", allocs)
	}
}
