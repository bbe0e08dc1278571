package tools

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools/canonjson"
)

type admitEdit struct {
	Old string `json:"old"`
	New string `json:"new"`
}

type admitArgs struct {
	Path  string               `json:"path,omitempty"`
	Limit *int                 `json:"limit,omitempty"`
	Edits []admitEdit          `json:"edits,omitempty"`
	Env   map[string]admitEdit `json:"env,omitempty"`
}

// TestPerf24_TypedArgumentsAdmittedInOnePass: a typed tool's arguments
// that are canonical and valid as sent are checked and decoded by one pass
// in stage 1 (admitArgs), which its ValidateArgs then accepts without a
// pass of its own (exec.admitted); other arguments are canonicalized and
// validated as before, with the same results: the canonical arguments,
// the value the body receives, INVALID_ARGS for duplicate keys and
// invalid arguments. The mark lasts only until stage 2, and a
// ValidateArgs that is not the tool's own still runs and decides.
func TestPerf24_TypedArgumentsAdmittedInOnePass(t *testing.T) {
	var got admitArgs
	d := MustDefine(TypedTool[admitArgs, Output]{
		Name: "t", Description: "Keeps its arguments.",
		Execute: func(_ context.Context, a admitArgs, _ *Execution) (Output, error) {
			got = a
			return Output{}, nil
		},
	})
	own := d.ValidateArgs
	var admitted bool
	d.ValidateArgs = func(exec *Execution) error {
		admitted = exec.admitted != nil
		return own(exec)
	}
	for _, c := range []struct {
		args, canon string
		admitted    bool
	}{
		{`{"path":"/a","limit":2,"edits":[{"old":"a","new":"b"}],"env":{"K":{"old":"x","new":"y"}}}`, "", true},
		{`{"path":"/a"}`, "", true},
		{`{}`, "", true},
		{`{"path": "/a"}`, `{"path":"/a"}`, false},
		{`{"path":"\u0061","limit":2.0}`, `{"path":"a","limit":2}`, false},
		{"{\"path\":\"a\\tb\"}", "", true}, // a canonical escape
		{`  {"path":"/a"}`, `{"path":"/a"}`, false},
		{`null`, `{}`, false},
	} {
		if c.canon == "" {
			c.canon = c.args
		}
		admitted = false
		exec, err := NewExecution(Call{ID: "c", Arguments: json.RawMessage(c.args)}, d)
		if err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		if exec.ArgsString() != c.canon || admitted != c.admitted || exec.admitted != nil {
			t.Errorf("%s: arguments %s (want %s), admitted %v (want %v), mark left %v", c.args, exec.ArgsString(), c.canon, admitted, c.admitted, exec.admitted)
		}
		if _, err := d.Execute(context.Background(), exec); err != nil {
			t.Fatalf("%s: %v", c.args, err)
		}
		var want admitArgs
		if err := json.Unmarshal([]byte(c.canon), &want); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the body got %#v, want %#v (%v)", c.args, got, want, err)
		}
	}
	for _, bad := range []string{`{"path":"/a","path":"/b"}`, `{"path":"/a","env":{"K":{},"K":{}}}`, `{"path":1}`, `{"PATH":"/a"}`, `{"path":"/a","limit":1.5}`} {
		admitted = false
		if _, err := NewExecution(Call{ID: "c", Arguments: json.RawMessage(bad)}, d); !IsArgsError(err) || admitted {
			t.Errorf("%s: %v (admitted %v), want INVALID_ARGS", bad, err, admitted)
		}
	}
	// A ValidateArgs of its own replacing the tool's: it runs on
	// arguments the one pass admitted, and refuses them.
	refused := d
	refused.ValidateArgs = func(*Execution) error { return errors.New("refused") }
	if _, err := NewExecution(Call{ID: "c", Arguments: json.RawMessage(`{"path":"/a"}`)}, refused); !IsArgsError(err) {
		t.Errorf("a replaced ValidateArgs: %v, want INVALID_ARGS", err)
	}
}

// TestPerf24_TypedArgumentsNotCanonicalCostNoMore: arguments the one pass
// declines cost what they cost before it (their canonicalization): the
// holder it took is the spare again for the validation that follows
// (before: a second holder), and pretty-printed arguments (whitespace
// after the first key's colon) are canonicalized without a copy first.
func TestPerf24_TypedArgumentsNotCanonicalCostNoMore(t *testing.T) {
	if raceOn {
		t.Skip("allocation counts vary under the race detector")
	}
	ctx := context.Background()
	d := MustDefine(TypedTool[admitArgs, Output]{
		Name: "t", Description: "Reads its arguments.",
		Execute: func(_ context.Context, a admitArgs, _ *Execution) (Output, error) {
			return Output{}, nil
		},
	})
	allocs := func(args string) float64 {
		return testing.AllocsPerRun(100, func() {
			exec, err := NewExecution(Call{ID: "c", Arguments: json.RawMessage(args)}, d)
			if err != nil {
				panic(err)
			}
			if _, err := d.Execute(ctx, exec); err != nil {
				panic(err)
			}
		})
	}
	canonicalization := func(args string) float64 {
		b := []byte(args)
		return testing.AllocsPerRun(100, func() {
			if _, err := canonjson.CanonicalizeObject(b, canonjson.Options{}); err != nil {
				panic(err)
			}
		})
	}
	// Short (in the execution's own buffer, without a copy of their
	// own): declined (at their first value, before the pass allocated
	// anything), they cost their canonicalization more.
	short := `{"path":"\u0061","limit":2}`
	if canon, declined := allocs(`{"path":"a","limit":2}`), allocs(short); declined != canon+canonicalization(short) {
		t.Errorf("declined arguments: %v allocations, canonical ones %v, canonicalization %v", declined, canon, canonicalization(short))
	}
	// Long: the canonical ones' copy is the canonicalization's output.
	long := strings.Repeat("a", 64)
	pretty := `{"path": "` + long + `"}`
	if canon, p := allocs(`{"path":"`+long+`"}`), allocs(pretty); p != canon-1+canonicalization(pretty) {
		t.Errorf("pretty-printed arguments: %v allocations, canonical ones %v, canonicalization %v", p, canon, canonicalization(pretty))
	}
}
