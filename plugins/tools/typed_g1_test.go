package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

// g1Inner is the value type below maps, slices and pointers.
type g1Inner struct {
	Path   string `json:"path,omitempty"`
	Secret string `json:"secret,omitempty"`
	Kind   string `json:"kind,omitempty"`
	N      int    `json:"n,omitempty"`
}

type g1Promoted struct {
	Promoted string `json:"promoted,omitempty"`
}

// g1Args reaches g1Inner through every container encoding/json decodes.
type g1Args struct {
	M   map[string]g1Inner   `json:"m,omitempty"`
	LM  []map[string]g1Inner `json:"lm,omitempty"`
	MP  map[string]*g1Inner  `json:"mp,omitempty"`
	P   *g1Inner             `json:"p,omitempty"`
	A   [2]g1Inner           `json:"a,omitempty"`
	IDs map[int]string       `json:"ids,omitempty"`
	g1Promoted
}

// g1Probe runs one call of a typed tool over A and reports the result,
// whether any policy stage ran, and what the body decoded.
type g1Probe[A any] struct {
	res       tools.Result
	policy    int32
	body      int32
	got       A
	policySaw string
}

func runG1[A any](t *testing.T, args string, policyPath string) *g1Probe[A] {
	t.Helper()
	e := newEnv(t)
	p := &g1Probe[A]{}
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[A, tools.Output]{
		Name: "g1", Description: "Probe.",
		Execute: func(_ context.Context, a A, _ *tools.Execution) (tools.Output, error) {
			atomic.AddInt32(&p.body, 1)
			p.got = a
			return tools.Output{Content: []tools.Content{tools.Text("ran")}}, nil
		},
	}))
	if _, err := host.OnWaterfall(e.root, tools.PreExecute, func(ctx context.Context, x *tools.Execution, next tools.PreNext) (tools.PreDecision, error) {
		atomic.AddInt32(&p.policy, 1)
		p.policySaw = gjson.Get(x.ArgsString(), policyPath).String()
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	e.reg.Guard(e.root, func(*tools.Execution) error { atomic.AddInt32(&p.policy, 1); return nil })
	p.res = e.reg.Execute(context.Background(), tools.Call{ID: "c", Name: "g1", Arguments: json.RawMessage(args)})
	return p
}

// TestG1_KeysEncodingJSONWouldFoldAreRefusedAtEveryDepth: a key that is
// not a field's exact name but that encoding/json would decode into one
// (ASCII case, Unicode simple folding such as 'ſ' for s and the Kelvin
// sign for k, promoted fields, below maps, slices, pointers and arrays)
// is INVALID_ARGS before any policy runs, with its path; so is a map key
// that decodes to the same Go key as another (or is not the Go key's
// canonical form).
func TestG1_KeysEncodingJSONWouldFoldAreRefusedAtEveryDepth(t *testing.T) {
	cases := []struct{ name, args, path string }{
		{"map value, both spellings", `{"m":{"k":{"path":"/safe","PATH":"/etc/passwd"}}}`, "/m/k/PATH"},
		{"slice of maps", `{"lm":[{"k":{"path":"/safe","Path":"/etc/passwd"}}]}`, "/lm/0/k/Path"},
		{"map of pointers, variant alone", `{"mp":{"k":{"pAth":"/etc/passwd"}}}`, "/mp/k/pAth"},
		{"pointer", `{"p":{"PATH":"/x"}}`, "/p/PATH"},
		{"array", `{"a":[{},{"PATH":"/x"}]}`, "/a/1/PATH"},
		{"promoted field", `{"promoted":"a","PROMOTED":"b"}`, "/PROMOTED"},
		{"long s folds to s", `{"m":{"k":{"secret":"a","\u017fecret":"b"}}}`, "/m/k/\u017fecret"},
		{"Kelvin sign folds to k", `{"mp":{"k":{"\u212aind":"b"}}}`, "/mp/k/\u212aind"},
		{"int map keys collide", `{"ids":{"1":"a","01":"b"}}`, "/ids/01"},
		{"int map key not canonical", `{"ids":{"+1":"a"}}`, "/ids/+1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := runG1[g1Args](t, tc.args, "m.k.path")
			if code(p.res) != tools.CodeInvalidArgs || p.policy != 0 || p.body != 0 {
				t.Fatalf("result %+v, policy ran %d, body ran %d", p.res, p.policy, p.body)
			}
			if !strings.Contains(text(p.res), "- "+tc.path+": ") {
				t.Errorf("message does not name %s:\n%s", tc.path, text(p.res))
			}
		})
	}
}

// TestG1_PolicyAndBodySeeOneValue: with exact keys, what a policy reads at
// a path is what the body decoded there, at every depth.
func TestG1_PolicyAndBodySeeOneValue(t *testing.T) {
	p := runG1[g1Args](t, `{"m":{"k":{"path":"/safe"}},"ids":{"1":"a","-2":"b"}}`, "m.k.path")
	if p.res.IsError || p.body != 1 {
		t.Fatalf("%+v", p.res)
	}
	if p.policySaw != "/safe" || p.got.M["k"].Path != "/safe" || p.got.IDs[-2] != "b" {
		t.Fatalf("policy saw %q, body got %+v", p.policySaw, p.got)
	}
}

type g1Strict string

func (s *g1Strict) UnmarshalJSON(b []byte) error {
	if string(b) == `"x"` {
		return errors.New("x is not allowed")
	}
	return json.Unmarshal(b, (*string)(s))
}

type g1Level int

func (l *g1Level) UnmarshalText(b []byte) error {
	if string(b) != "low" && string(b) != "high" {
		return fmt.Errorf("unknown level %q", b)
	}
	*l = g1Level(len(b))
	return nil
}

type g1Quoted struct {
	N int `json:"n,string"`
}

type g1Decode struct {
	N      int                `json:"n,omitempty"`
	I8     int8               `json:"i8,omitempty"`
	U      uint               `json:"u,omitempty"`
	F32    float32            `json:"f32,omitempty"`
	B      []byte             `json:"b,omitempty"`
	T      time.Time          `json:"t,omitempty"`
	Strict g1Strict           `json:"strict,omitempty"`
	Level  g1Level            `json:"level,omitempty"`
	MI8    map[string]int8    `json:"mi8,omitempty"`
	MI     map[string]g1Inner `json:"mi,omitempty"`
	Any    map[string]any     `json:"any,omitempty"`
}

// TestG1_ArgumentsThatCannotDecodeAreRefusedBeforePolicy: a value the
// tool's Go type cannot take is INVALID_ARGS before any policy runs, and the
// message names the argument and why.
func TestG1_ArgumentsThatCannotDecodeAreRefusedBeforePolicy(t *testing.T) {
	cases := []struct{ name, args, path, why string }{
		{"int beyond 2^53", `{"n":1e21}`, "/n", "into int"},
		{"int8 overflow", `{"i8":300}`, "/i8", "at most 127"},
		{"negative uint", `{"u":-1}`, "/u", "at least 0"},
		{"float32 overflow", `{"f32":1e300}`, "/f32", "into float32"},
		{"bytes not base64", `{"b":"!!"}`, "/b", "base64"},
		{"time not RFC 3339", `{"t":"yesterday"}`, "/t", "time.Time"},
		{"json.Unmarshaler refuses", `{"strict":"x"}`, "/strict", "x is not allowed"},
		{"TextUnmarshaler refuses", `{"level":"medium"}`, "/level", `unknown level "medium"`},
		{"int8 below a map", `{"mi8":{"k":300}}`, "/mi8/k", "at most 127"},
		{"int below a map", `{"mi":{"k":{"n":1e21}}}`, "/mi/k/n", "int"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := runG1[g1Decode](t, tc.args, "n")
			if code(p.res) != tools.CodeInvalidArgs || p.policy != 0 || p.body != 0 {
				t.Fatalf("result %+v, policy ran %d, body ran %d", p.res, p.policy, p.body)
			}
			msg := text(p.res)
			line := ""
			for l := range strings.SplitSeq(msg, "\n") {
				if strings.HasPrefix(l, "- "+tc.path+": ") {
					line = l
				}
			}
			if line == "" || !strings.Contains(line, tc.why) {
				t.Errorf("message does not say %s: %s:\n%s", tc.path, tc.why, msg)
			}
		})
	}
	// A ",string" option, below a map too, is refused when the tool is
	// defined (jsonschema-go would describe the field as its Go type).
	type quotedArgs struct {
		MQ map[string]g1Quoted `json:"mq,omitempty"`
	}
	if _, err := tools.Define(tools.TypedTool[quotedArgs, tools.Output]{Name: "q", Description: "d",
		Execute: func(context.Context, quotedArgs, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil }}); !errors.Is(err, tools.ErrInvalidDefinition) || !strings.Contains(err.Error(), ",string") {
		t.Errorf("string option below a map: %v", err)
	}
	// What does decode still runs.
	p := runG1[g1Decode](t, `{"n":-5,"i8":-128,"u":7,"f32":1.5,"b":"aGk=","t":"2024-01-02T03:04:05Z","strict":"y","level":"low","mi8":{"k":127},"any":{"x":[1]}}`, "n")
	if p.res.IsError || p.policy != 2 || p.body != 1 || p.got.I8 != -128 || string(p.got.B) != "hi" || p.got.Level != 3 {
		t.Fatalf("%+v %+v", p.res, p.got)
	}
}

// TestG1_EachBodyRunDecodesItsOwnValue: the value decoded during
// validation goes to one body run only; a wrapper that runs the body
// again hands it a fresh value, so a body mutating its arguments cannot
// change what a second run sees.
func TestG1_EachBodyRunDecodesItsOwnValue(t *testing.T) {
	e := newEnv(t)
	var seen []string
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[g1Args, tools.Output]{
		Name: "g1", Description: "Probe.",
		Execute: func(_ context.Context, a g1Args, _ *tools.Execution) (tools.Output, error) {
			seen = append(seen, a.M["k"].Path)
			a.M["k"] = g1Inner{Path: "mutated"}
			return tools.Output{}, nil
		},
	}))
	if _, err := host.OnWaterfall(e.root, tools.ExecuteEvent, func(ctx context.Context, _ *tools.Execution, next tools.ExecuteNext) (tools.Result, error) {
		if _, err := next(ctx); err != nil {
			return tools.Result{}, err
		}
		return next(ctx)
	}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if res := e.reg.Execute(context.Background(), call("g1", `{"m":{"k":{"path":"/a"}}}`)); res.IsError {
			t.Fatalf("%+v", res)
		}
	}
	if strings.Join(seen, ",") != "/a,/a,/a,/a" {
		t.Fatalf("body runs saw %v", seen)
	}
}

// TestG1_PresentersSeeOnlyArgumentsThatWouldRun: a presenter is given only
// arguments that pass the same checks as a call (keys, decoding), so a
// card never shows a value the body would not get.
func TestG1_PresentersSeeOnlyArgumentsThatWouldRun(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[g1Args, tools.Output]{
		Name: "g1", Description: "Probe.",
		Execute: func(context.Context, g1Args, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
		PresentCall: func(a g1Args) tools.CallView {
			return tools.GenericCall{Title: a.M["k"].Path}
		},
	}))
	if v := e.reg.PresentCall("g1", "", []byte(`{"m":{"k":{"path":"/safe"}}}`)); v == nil {
		t.Fatal("valid arguments not presented")
	}
	for _, args := range []string{`{"m":{"k":{"path":"/safe","PATH":"/etc/passwd"}}}`, `{"m":{"k":{"n":1e21}}}`, `{"ids":{"01":"x"}}`} {
		if v := e.reg.PresentCall("g1", "", []byte(args)); v != nil {
			t.Errorf("%s presented as %#v", args, v)
		}
	}
}
