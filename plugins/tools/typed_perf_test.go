package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
