package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/schema"
)

type readArgs struct {
	Path   string `json:"path" desc:"Absolute file path" dsh:"required"`
	Offset *int   `json:"offset,omitempty"`
	Mode   string `json:"mode,omitempty" dsh:"enum=text|binary"`
}

func TestT1_DefineFromStructAndDSLAgree(t *testing.T) {
	// An int argument carries at most ±(2^53-1), like every JSON integer
	// the pipeline accepts.
	minSafe, maxSafe := float64(-(1<<53 - 1)), float64(1<<53-1)
	fromStruct, err := tools.Define(tools.TypedTool[readArgs, tools.Output]{
		Name: "read_file", Description: "Read a file.",
		Execute: func(context.Context, readArgs, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
	})
	if err != nil {
		t.Fatal(err)
	}
	fromDSL, err := tools.Define(tools.TypedTool[map[string]any, tools.Output]{
		Name: "read_file", Description: "Read a file.",
		Parameters: schema.Spec{
			"path":   {Type: schema.TypeString, Required: true, Description: "Absolute file path"},
			"offset": {Type: schema.TypeInteger, Minimum: &minSafe, Maximum: &maxSafe},
			"mode":   {Type: schema.TypeString, Enum: []any{"text", "binary"}},
		},
		Execute: func(context.Context, map[string]any, *tools.Execution) (tools.Output, error) {
			return tools.Output{}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The struct follows the go-sdk's conventions (jsonschema-go), the
	// desc and dsh tags as aliases; the DSL says exactly what it says.
	wantStruct := `{"type":"object","properties":{"path":{"type":"string","description":"Absolute file path"},"offset":{"type":["null","integer"]},"mode":{"type":"string","enum":["text","binary"]}},"required":["path"],"additionalProperties":false}`
	wantDSL := `{"type":"object","properties":{"mode":{"type":"string","enum":["text","binary"]},"offset":{"type":"integer","minimum":-9007199254740991,"maximum":9007199254740991},"path":{"type":"string","description":"Absolute file path"}},"required":["path"]}`
	if string(fromStruct.Parameters) != wantStruct || string(fromDSL.Parameters) != wantDSL {
		t.Errorf("struct %s\n   dsl %s", fromStruct.Parameters, fromDSL.Parameters)
	}
	if !strings.Contains(string(fromDSL.Parameters), `"required":["path"]`) {
		t.Errorf("no required list: %s", fromDSL.Parameters)
	}
	if _, err := tools.Define(tools.TypedTool[map[string]any, tools.Output]{Name: "x", Description: "d",
		Parameters: schema.Spec{"a": {Type: "strnig"}}, Execute: func(context.Context, map[string]any, *tools.Execution) (tools.Output, error) {
			return tools.Output{}, nil
		}}); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("bad spec: %v", err)
	}
}

func TestT2_ArgsValidatedBeforeExecute(t *testing.T) {
	e := newEnv(t)
	var got readArgs
	ran, policy := 0, 0
	def := tools.MustDefine(tools.TypedTool[readArgs, tools.Output]{
		Name: "read_file", Description: "Read a file.",
		Execute: func(_ context.Context, a readArgs, _ *tools.Execution) (tools.Output, error) {
			ran++
			got = a
			return tools.Output{Content: []tools.Content{tools.Text(a.Path)}}, nil
		},
	})
	mustRegister(t, e.reg, e.root, def)
	e.reg.Guard(e.root, func(*tools.Execution) error { policy++; return nil })
	res := e.reg.Execute(context.Background(), call("read_file", `{"offset":"ten","mode":"hex"}`))
	if code(res) != tools.CodeInvalidArgs || res.Error.Name != "ToolArgsError" || ran != 0 || policy != 0 {
		t.Fatalf("%+v", res)
	}
	for _, want := range []string{"/path", "/offset", "/mode"} {
		if !strings.Contains(text(res), want) {
			t.Errorf("violation %s not listed in %q", want, text(res))
		}
	}
	// Decoded into A; a struct allows no extra keys (additionalProperties
	// false, as jsonschema-go infers it).
	res = e.reg.Execute(context.Background(), call("read_file", `{"path":"/etc/hosts","offset":3}`))
	if res.IsError || got.Path != "/etc/hosts" || got.Offset == nil || *got.Offset != 3 {
		t.Errorf("%+v %+v", res, got)
	}
	res = e.reg.Execute(context.Background(), call("read_file", `{"path":"/etc/hosts","extra":true}`))
	if code(res) != tools.CodeInvalidArgs || !strings.Contains(text(res), "- /extra: additional property is not allowed") {
		t.Errorf("extra key: %+v", res)
	}
	// A raw tool is not validated by the harness.
	raw := echo("raw", "ran")
	raw.Parameters = json.RawMessage(`{"type":"object","required":["path"]}`)
	mustRegister(t, e.reg, e.root, raw)
	if res := e.reg.Execute(context.Background(), call("raw", `{"nope":1}`)); res.IsError {
		t.Errorf("raw tool validated: %+v", res)
	}
}

func TestT3_TimeoutValidatedAndNeverSentToTheModel(t *testing.T) {
	body := func(context.Context, map[string]any, *tools.Execution) (tools.Output, error) {
		return tools.Output{}, nil
	}
	if _, err := tools.Define(tools.TypedTool[map[string]any, tools.Output]{Name: "x", Description: "d", Execute: body, Timeout: -time.Second}); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("negative timeout: %v", err)
	}
	d, err := tools.Define(tools.TypedTool[map[string]any, tools.Output]{Name: "x", Description: "d", Execute: body, Timeout: 5 * time.Second})
	if err != nil || d.Timeout != 5*time.Second {
		t.Fatal(err)
	}
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, d)
	tl, _ := e.reg.Get("x", "")
	if tl.Timeout() != 5*time.Second {
		t.Errorf("timeout %v", tl.Timeout())
	}
	b, _ := json.Marshal(e.reg.Schemas(""))
	if strings.Contains(string(b), "5") || strings.Contains(strings.ToLower(string(b)), "timeout") {
		t.Errorf("schema leaks the timeout: %s", b)
	}
}

func TestT4_PresentersAreSoftValidated(t *testing.T) {
	e := newEnv(t)
	def := tools.MustDefine(tools.TypedTool[readArgs, tools.Output]{
		Name: "read_file", Description: "Read a file.",
		Execute: func(context.Context, readArgs, *tools.Execution) (tools.Output, error) { return tools.Output{}, nil },
		PresentCall: func(a readArgs) tools.CallView {
			if a.Path == "/panic" {
				panic("presenter bug")
			}
			return tools.GenericCall{Title: "Read " + a.Path, Kind: "read", Locations: []tools.Location{{Path: a.Path}}}
		},
		PresentResult: func(a readArgs, r tools.ResultData) tools.ResultView {
			return tools.GenericResult{Title: "Read " + a.Path, Content: r.Content}
		},
	})
	mustRegister(t, e.reg, e.root, def)
	v := e.reg.PresentCall("read_file", "", []byte(`{"path":"/a"}`))
	b, _ := json.Marshal(v)
	if string(b) != `{"card":"generic","title":"Read /a","kind":"read","locations":[{"path":"/a"}]}` {
		t.Errorf("view %s", b)
	}
	for _, args := range []string{`{"file":"/a"}`, `{"path":7}`, `not json`, `{"path":"/panic"}`} {
		if v := e.reg.PresentCall("read_file", "", []byte(args)); v != nil {
			t.Errorf("%s: %#v", args, v)
		}
		if v := e.reg.PresentResult("read_file", "", []byte(args), tools.ResultData{}); v != nil && args != `{"path":"/panic"}` {
			t.Errorf("result %s: %#v", args, v)
		}
	}
	if v := e.reg.PresentCall("unknown", "", []byte(`{}`)); v != nil {
		t.Errorf("unknown tool: %#v", v)
	}
}

func TestContentAndCardsJSON(t *testing.T) {
	old := "a"
	code := 1
	cases := map[string]any{
		`{"type":"text","text":""}`:                                                                tools.Text(""),
		`{"type":"image","data":"AAA=","mimeType":"image/png"}`:                                    tools.Image("AAA=", "image/png"),
		`{"type":"resource","resource":{"uri":"file:///x","mimeType":"text/plain","text":"hi"}}`:   tools.EmbeddedText("file:///x", "text/plain", "hi"),
		`{"type":"resource","resource":{"uri":"file:///b","blob":"AA=="}}`:                         tools.EmbeddedBlob("file:///b", "", "AA=="),
		`{"type":"resource_link","mimeType":"t/p","uri":"file:///x","name":"x","description":"d"}`: tools.Link("file:///x", "x", "d", "t/p"),
		`{"card":"terminal","title":"ls","cwd":"/"}`:                                               tools.TerminalCall{Title: "ls", Cwd: "/"},
		`{"card":"diff","title":"edit","diffs":[{"path":"f","oldText":null,"newText":"n"}]}`:       tools.DiffCall{Title: "edit", Diffs: []tools.FileDiff{{Path: "f", NewText: "n"}}},
		`{"card":"diff","diffs":[{"path":"f","oldText":"a","newText":"b"}]}`:                       tools.DiffResult{Diffs: []tools.FileDiff{{Path: "f", OldText: &old, NewText: "b"}}},
		`{"card":"terminal","output":"x","exitCode":1}`:                                            tools.TerminalResult{Output: "x", ExitCode: &code},
		`{"card":"generic"}`: tools.GenericResult{},
	}
	for want, v := range cases {
		b, err := json.Marshal(v)
		if err != nil || string(b) != want {
			t.Errorf("got %s (%v), want %s", b, err, want)
		}
		if c, ok := v.(tools.Content); ok {
			var back tools.Content
			if err := json.Unmarshal(b, &back); err != nil || back != c {
				t.Errorf("round trip %s: %+v", b, back)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("%s: %v", want, err)
			}
		}
	}
	if _, err := json.Marshal(tools.Content{Type: "video"}); err == nil {
		t.Error("unknown type marshalled")
	}
}

func TestContentResourceWithTextAndBlobIsRejected(t *testing.T) {
	var c tools.Content
	err := json.Unmarshal([]byte(`{"type":"resource","resource":{"uri":"u","text":"a","blob":"AA=="}}`), &c)
	if err == nil || !strings.Contains(err.Error(), "both text and blob") {
		t.Fatalf("err = %v", err)
	}
	if err := (tools.Content{Type: tools.ContentResource, URI: "u", Text: "a", Data: "AA=="}).Validate(); err == nil {
		t.Fatal("a resource block with both text and blob validated")
	}
}
