package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

// emptyTyped is a typed tool without arguments (struct{}) whose body
// returns its text.
func emptyTyped() tools.Definition {
	return tools.MustDefine(tools.TypedTool[struct{}, tools.Output]{
		Name: "empty", Description: "Takes no arguments.",
		Execute: func(context.Context, struct{}, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	})
}

// TestPerf24_TypedEmptyArgumentsAllocations: a typed tool whose arguments
// are struct{} allocates per call no more than an untyped one (3, see
// TestPerf24_ExecuteAllocations; before: 4, a holder for the decoded
// value, which has no bytes), and its calls, sharing one holder, run
// concurrently and each get their result (run it with -race).
func TestPerf24_TypedEmptyArgumentsAllocations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, emptyTyped())
	c := tools.Call{ID: "c", Name: "empty", Arguments: json.RawMessage(`{}`)}
	if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, c) }); n > 3 {
		t.Errorf("%v allocations per Execute, want at most 3", n)
	}
	if text(sink) != "ok" || sink.IsError {
		t.Fatalf("result %+v", sink)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if r := e.reg.Execute(ctx, c); text(r) != "ok" || r.IsError {
					t.Errorf("result %+v", r)
					return
				}
			}
		})
	}
	wg.Wait()
	bad := tools.Call{ID: "c", Name: "empty", Arguments: json.RawMessage(`{"x":1}`)}
	if r := e.reg.Execute(ctx, bad); !r.IsError || r.Error == nil || r.Error.Code != tools.CodeInvalidArgs {
		t.Fatalf("an argument struct{} does not declare: %+v", r)
	}
}

// optionalArgs has only optional fields: {} is its zero value.
type optionalArgs struct {
	Path  string            `json:"path,omitempty"`
	Limit *int              `json:"limit,omitempty"`
	Tags  []string          `json:"tags,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
}

// defaulted sets a default of its own when it is decoded, even from {}.
type defaulted struct {
	Mode string `json:"mode,omitempty"`
}

func (d *defaulted) UnmarshalJSON(b []byte) error {
	type plain defaulted
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	if p.Mode == "" {
		p.Mode = "default"
	}
	*d = defaulted(p)
	return nil
}

// TestPerf24_TypedEmptyObjectAllocations: arguments {} that decode into the
// zero value of a struct without code of its own are handed to the body
// without a holder of their own (3 allocations per call, as an untyped
// call; before: 4), also to concurrent calls whose typed value is encoded
// (run it with -race); and whatever encoding/json gives for {} otherwise:
// a struct's own UnmarshalJSON runs, a map is empty and not nil, a pointer
// is not nil, and a required field is still missing.
func TestPerf24_TypedEmptyObjectAllocations(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	type result struct {
		Path string `json:"path"`
		N    int    `json:"n"`
	}
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[optionalArgs, tools.Output]{
		Name: "optional", Description: "Takes optional arguments.",
		Execute: func(_ context.Context, a optionalArgs, _ *tools.Execution) (tools.Output, error) {
			if a.Path != "" || a.Limit != nil || a.Tags != nil || a.Env != nil {
				return tools.Output{}, errors.New("not the zero value")
			}
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[optionalArgs, result]{
		Name: "valued", Description: "Returns a value.",
		Execute: func(_ context.Context, a optionalArgs, _ *tools.Execution) (result, error) {
			return result{Path: a.Path + "-", N: len(a.Tags)}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[defaulted, tools.Output]{
		Name: "defaulted", Description: "Decodes itself.",
		Execute: func(_ context.Context, a defaulted, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(a.Mode)}}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[map[string]any, tools.Output]{
		Name: "map", Description: "Takes a map.", Parameters: schema.Spec{},
		Execute: func(_ context.Context, a map[string]any, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(fmt.Sprint(a == nil, len(a)))}}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[*optionalArgs, tools.Output]{
		Name: "pointer", Description: "Takes a pointer.",
		Execute: func(_ context.Context, a *optionalArgs, _ *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text(fmt.Sprint(a == nil))}}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[benchEdit, tools.Output]{
		Name: "required", Description: "Requires its fields.",
		Execute: func(context.Context, benchEdit, *tools.Execution) (tools.Output, error) {
			return tools.Output{Content: []tools.Content{tools.Text("ran")}}, nil
		},
	}))
	call := func(name string) tools.Call {
		return tools.Call{ID: "c", Name: name, Arguments: json.RawMessage(`{}`)}
	}
	c := call("optional")
	if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, c) }); n > 3 {
		t.Errorf("%v allocations per Execute, want at most 3", n)
	}
	if text(sink) != "ok" || sink.IsError {
		t.Fatalf("result %+v", sink)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				if r := e.reg.Execute(ctx, call("valued")); r.IsError || string(r.Value) != `{"path":"-","n":0}` {
					t.Errorf("result %+v (value %s)", r, r.Value)
					return
				}
			}
		})
	}
	wg.Wait()
	for name, want := range map[string]string{"defaulted": "default", "map": "false 0", "pointer": "false"} {
		if r := e.reg.Execute(ctx, call(name)); r.IsError || text(r) != want {
			t.Errorf("%s: result %+v, want text %q", name, r, want)
		}
	}
	if r := e.reg.Execute(ctx, call("required")); !r.IsError || r.Error == nil || r.Error.Code != tools.CodeInvalidArgs {
		t.Errorf("required fields missing: %+v", r)
	}
}

// holderArgs is decoded by the fused pass: a string, a pointer, a slice.
type holderArgs struct {
	Note  string   `json:"note,omitempty"`
	Path  string   `json:"path,omitempty"`
	Limit *int     `json:"limit,omitempty"`
	Small int8     `json:"small,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

// holderOut is a typed output the pipeline encodes from the holder's slot.
type holderOut struct {
	Path  string   `json:"path"`
	Limit int      `json:"limit"`
	Tags  []string `json:"tags"`
}

// TestPerf24_TypedHolderReused: a typed tool's calls, one after another,
// decode their arguments into the holder an earlier call handed back
// (3 allocations per call, as an untyped one; before: 4, a new holder per
// call), for Out = Output and for a typed output; values that bodies keep
// stay theirs; a holder whose decoding failed, or whose body panicked, is
// not used again (the next call's value has nothing of it); and
// concurrent calls each get their own value (run it with -race).
func TestPerf24_TypedHolderReused(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	var kept []holderArgs
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[holderArgs, tools.Output]{
		Name: "keeps", Description: "Keeps its arguments.",
		Execute: func(_ context.Context, a holderArgs, _ *tools.Execution) (tools.Output, error) {
			if a.Path == "panic" {
				panic("asked to")
			}
			kept = append(kept, a)
			return tools.Output{Content: []tools.Content{tools.Text("ok")}}, nil
		},
	}))
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[holderArgs, holderOut]{
		Name: "valued", Description: "Returns its arguments.",
		Execute: func(_ context.Context, a holderArgs, _ *tools.Execution) (holderOut, error) {
			o := holderOut{Path: a.Path, Tags: a.Tags}
			if a.Limit != nil {
				o.Limit = *a.Limit
			}
			if o.Tags == nil {
				o.Tags = []string{}
			}
			return o, nil
		},
	}))
	mustRegister(t, e.reg, e.root, trivial())
	call := func(name, args string) tools.Call {
		return tools.Call{ID: "c", Name: name, Arguments: json.RawMessage(args)}
	}
	if !raceEnabled {
		short := call("keeps", `{"path":"/a"}`) // canonical and short: no copy of its own
		plain := call("trivial", `{"x":1}`)
		untyped := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, plain) })
		if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, short) }); n > untyped || n > 3 {
			t.Errorf("%v allocations per typed call, want at most %v (an untyped call's) and 3", n, untyped)
		}
		valued := call("valued", `{"path":"/a"}`)
		if n := testing.AllocsPerRun(200, func() { sink = e.reg.Execute(ctx, valued) }); n > 5 {
			t.Errorf("typed output: %v allocations per call, want at most 5 (before: 6)", n)
		}
		kept = nil
	}
	for i, args := range []string{
		`{"path":"/a","limit":1,"tags":["x","y"],"note":"n"}`,
		`{"note":"partial","small":300}`, // note decoded, then small fails: INVALID_ARGS
		`{"path":"panic","limit":7,"note":"p"}`,
		`{"path":"/b"}`,
		`{"limit":2,"tags":[]}`,
	} {
		r := e.reg.Execute(ctx, call("keeps", args))
		if wantErr := i == 1 || i == 2; r.IsError != wantErr {
			t.Fatalf("%s: result %+v", args, r)
		}
	}
	one, two := 1, 2
	want := []holderArgs{
		{Path: "/a", Limit: &one, Tags: []string{"x", "y"}, Note: "n"},
		{Path: "/b"},
		{Limit: &two, Tags: []string{}},
	}
	if !reflect.DeepEqual(kept, want) {
		t.Fatalf("kept %#v\nwant %#v", kept, want)
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				path := fmt.Sprintf("/%d/%d", g, i)
				r := e.reg.Execute(ctx, call("valued", fmt.Sprintf(`{"path":%q,"limit":%d,"tags":[%q]}`, path, i, path)))
				if w := fmt.Sprintf(`{"path":%q,"limit":%d,"tags":[%q]}`, path, i, path); r.IsError || string(r.Value) != w {
					t.Errorf("result %+v (value %s), want %s", r, r.Value, w)
					return
				}
			}
		})
	}
	wg.Wait()
}
