package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dsh-go/dsh/host"
	"github.com/dsh-go/dsh/plugins/tools"
)

type listArgs struct {
	Dir string `json:"dir"`
}

type entry struct {
	Name string `json:"name"`
	Size int    `json:"size"`
}

type listing struct {
	Entries []entry `json:"entries"`
	Total   int     `json:"total" jsonschema:"sum of the sizes"`
}

func listTool(out listing) tools.Definition {
	return tools.MustDefine(tools.TypedTool[listArgs, listing]{
		Name: "list", Description: "Lists a directory.",
		Execute: func(context.Context, listArgs, *tools.Execution) (listing, error) { return out, nil },
	})
}

// TestOUT1_TypedOutputCarriesValueAndRendersJSON: a TypedTool[In, Out]
// declares the schema derived from Out; its result carries the canonical
// value and, without a Render, the value as JSON text; a string Out renders
// as its text.
func TestOUT1_TypedOutputCarriesValueAndRendersJSON(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, listTool(listing{Entries: []entry{{"a", 2}, {"b", 3}}, Total: 5}))
	res := e.reg.Execute(context.Background(), call("list", `{"dir":"."}`))
	if res.IsError {
		t.Fatalf("result: %+v", res)
	}
	want := `{"entries":[{"name":"a","size":2},{"name":"b","size":3}],"total":5}`
	if string(res.Value) != want || text(res) != want {
		t.Fatalf("value %s, content %q; want %s", res.Value, text(res), want)
	}
	if got := string(res.CanonicalValue()); got != want {
		t.Fatalf("CanonicalValue = %s", got)
	}
	tl, _ := e.reg.Get("list", "")
	if s := string(tl.OutputSchema()); !strings.Contains(s, `"total":{"type":"integer","description":"sum of the sizes"}`) || !strings.Contains(s, `"required":["entries","total"]`) {
		t.Fatalf("output schema %s", s)
	}

	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[listArgs, string]{
		Name: "greet", Description: "Greets.",
		Execute: func(_ context.Context, a listArgs, _ *tools.Execution) (string, error) { return "hi " + a.Dir, nil },
	}))
	res = e.reg.Execute(context.Background(), call("greet", `{"dir":"x\"y"}`))
	if res.IsError || string(res.Value) != `"hi x\"y"` || text(res) != `hi x"y` {
		t.Fatalf("string value: %+v", res)
	}
}

// rawOutput is a definition declaring schema whose body returns value.
func rawOutput(name, schema string, out tools.Output) tools.Definition {
	return tools.Definition{
		Name: name, Description: "Raw output tool.", OutputSchema: json.RawMessage(schema),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return out, nil },
	}
}

const countSchema = `{"type":"object","properties":{"n":{"type":"integer","minimum":0},"tags":{"type":["null","array"],"items":{"type":"string"}}},"required":["n"],"additionalProperties":false}`

// TestOUT2_ValueIsValidatedAgainstTheDeclaredSchema: a value that does not
// match the declared schema, a missing value and a value from a text-only
// tool are INVALID_OUTPUT, naming every violation's path; the additional
// context survives; a valid value is stored canonical.
func TestOUT2_ValueIsValidatedAgainstTheDeclaredSchema(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, rawOutput("bad", countSchema, tools.Output{Value: json.RawMessage(`{"n":-1,"tags":[1],"x":true}`), AdditionalContext: []string{"ctx"}}))
	mustRegister(t, e.reg, e.root, rawOutput("none", countSchema, tools.Output{Content: []tools.Content{tools.Text("no value")}}))
	mustRegister(t, e.reg, e.root, rawOutput("good", countSchema, tools.Output{Value: json.RawMessage(`{ "tags" : null, "n" : 1.0 }`)}))
	text := echo("text", "t")
	body := text.Execute
	text.Execute = func(ctx context.Context, exec *tools.Execution) (tools.Output, error) {
		o, err := body(ctx, exec)
		o.Value = json.RawMessage(`1`)
		return o, err
	}
	mustRegister(t, e.reg, e.root, text)

	res := e.reg.Execute(context.Background(), call("bad", `{}`))
	msg := res.Content[0].Text
	if code(res) != tools.CodeInvalidOutput || res.Value != nil || len(res.AdditionalContext) != 1 ||
		!strings.Contains(msg, "/n: must be at least 0, got -1") || !strings.Contains(msg, "/tags/0: expected string, got number") || !strings.Contains(msg, "/x: additional property is not allowed") {
		t.Fatalf("bad: %+v", res)
	}
	if res := e.reg.Execute(context.Background(), call("none", `{}`)); code(res) != tools.CodeInvalidOutput || !strings.Contains(res.Content[0].Text, "returned no value") {
		t.Fatalf("none: %+v", res)
	}
	if res := e.reg.Execute(context.Background(), call("text", `{}`)); code(res) != tools.CodeInvalidOutput || !strings.Contains(res.Content[0].Text, "declares no output schema") {
		t.Fatalf("text: %+v", res)
	}
	res = e.reg.Execute(context.Background(), call("good", `{}`))
	if res.IsError || string(res.Value) != `{"tags":null,"n":1}` || res.Content[0].Text != `{"tags":null,"n":1}` {
		t.Fatalf("good: %+v", res)
	}
}

// TestOUT3_PostExecuteReplacesValueOrContent: post-execute may replace the
// value (validated again, the content rendered again unless replaced too)
// or only the content (the value stays); an invalid replacement is
// INVALID_OUTPUT, a value replacement on a failure INVALID_DECISION, and
// tools/result carries both the value and the content.
func TestOUT3_PostExecuteReplacesValueOrContent(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, rawOutput("count", countSchema, tools.Output{Value: json.RawMessage(`{"n":1}`)}))
	mustRegister(t, e.reg, e.root, tools.Definition{Name: "fails", Description: "Fails.", OutputSchema: json.RawMessage(countSchema),
		Execute: func(context.Context, *tools.Execution) (tools.Output, error) { return tools.Output{}, errors.New("no") }})
	var dec atomic.Pointer[tools.PostDecision]
	must2(t)(host.OnWaterfall(e.root, tools.PostExecute, func(ctx context.Context, _ tools.PostInput, next tools.PostNext) (tools.PostDecision, error) {
		if d := dec.Load(); d != nil {
			return *d, nil
		}
		return next(ctx)
	}))
	var rc recorder
	rc.listen(t, e.root)

	dec.Store(&tools.PostDecision{Kind: tools.Accept, Value: json.RawMessage(`{"n":7}`)})
	res := e.reg.Execute(context.Background(), call("count", `{}`))
	if res.IsError || string(res.Value) != `{"n":7}` || text(res) != `{"n":7}` {
		t.Fatalf("value replaced: %+v", res)
	}
	n := rc.notices[len(rc.notices)-1].Result()
	if string(n.Value) != `{"n":7}` || text(n) != `{"n":7}` {
		t.Fatalf("tools/result: %+v", n)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Accept, Value: json.RawMessage(`{"n":8}`), Content: []tools.Content{tools.Text("eight")}})
	if res := e.reg.Execute(context.Background(), call("count", `{}`)); string(res.Value) != `{"n":8}` || text(res) != "eight" {
		t.Fatalf("both replaced: %+v", res)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Accept, Content: []tools.Content{tools.Text("redacted")}})
	if res := e.reg.Execute(context.Background(), call("count", `{}`)); string(res.Value) != `{"n":1}` || text(res) != "redacted" {
		t.Fatalf("content replaced: %+v", res)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Accept, Value: json.RawMessage(`{"n":"x"}`)})
	if res := e.reg.Execute(context.Background(), call("count", `{}`)); code(res) != tools.CodeInvalidOutput || !strings.Contains(text(res), "/n: expected integer, got string") {
		t.Fatalf("invalid replacement: %+v", res)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Accept, Value: json.RawMessage(`{"n":1}`)})
	if res := e.reg.Execute(context.Background(), call("fails", `{}`)); code(res) != tools.CodeInvalidDecision || res.Value != nil {
		t.Fatalf("value on a failure: %+v", res)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Block, Feedback: "no", Value: json.RawMessage(`{"n":1}`)})
	if res := e.reg.Execute(context.Background(), call("count", `{}`)); code(res) != tools.CodeInvalidDecision {
		t.Fatalf("block with value: %+v", res)
	}
	dec.Store(&tools.PostDecision{Kind: tools.Block, Feedback: "no"})
	if res := e.reg.Execute(context.Background(), call("count", `{}`)); code(res) != tools.CodeBlocked || res.Value != nil {
		t.Fatalf("blocked: %+v", res)
	}
}

// TestOUT4_RenderTurnsTheValueIntoContent: a typed Render renders the value
// (also a post-execute replacement, decoded into Out); a render error or
// panic is INVALID_OUTPUT; a definition whose schema is outside the subset
// or that renders without a schema is refused at registration.
func TestOUT4_RenderTurnsTheValueIntoContent(t *testing.T) {
	e := newEnv(t)
	render := func(l listing) ([]tools.Content, error) {
		if l.Total < 0 {
			panic("negative")
		}
		if l.Total == 0 {
			return nil, errors.New("empty listing")
		}
		return []tools.Content{tools.Text(strings.Repeat("#", l.Total))}, nil
	}
	total := atomic.Int64{}
	mustRegister(t, e.reg, e.root, tools.MustDefine(tools.TypedTool[listArgs, listing]{
		Name: "list", Description: "Lists.", Render: render,
		Execute: func(context.Context, listArgs, *tools.Execution) (listing, error) {
			return listing{Total: int(total.Load())}, nil
		},
	}))
	for n, want := range map[int64]string{3: "###", 0: "could not render its value: empty listing", -1: "RenderOutput panicked: negative"} {
		total.Store(n)
		res := e.reg.Execute(context.Background(), call("list", `{"dir":""}`))
		if !strings.Contains(text(res), want) || (n > 0) == res.IsError {
			t.Errorf("total %d: %+v", n, res)
		}
		if n <= 0 && code(res) != tools.CodeInvalidOutput {
			t.Errorf("total %d: code %s", n, code(res))
		}
	}
	for _, d := range []tools.Definition{
		{Name: "x", Description: "d", Execute: echo("x", "").Execute, OutputSchema: json.RawMessage(`{"type":"string","pattern":"a"}`)},
		{Name: "x", Description: "d", Execute: echo("x", "").Execute, RenderOutput: func(json.RawMessage) ([]tools.Content, error) { return nil, nil }},
	} {
		if err := d.Validate(); !errors.Is(err, tools.ErrInvalidDefinition) {
			t.Errorf("Validate = %v", err)
		}
	}
	if _, err := tools.Define(tools.TypedTool[listArgs, tools.Output]{Name: "x", Description: "d",
		Render: func(tools.Output) ([]tools.Content, error) { return nil, nil }}); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("Render with Out = Output: %v", err)
	}
	if _, err := tools.Define(tools.TypedTool[listArgs, chan int]{Name: "x", Description: "d"}); !errors.Is(err, tools.ErrInvalidDefinition) {
		t.Errorf("underivable Out: %v", err)
	}
}

// TestOUT5_TextOnlyValueIsTheText: a tool without a declared output keeps
// today's text-only result (no Value); its canonical value is its text.
func TestOUT5_TextOnlyValueIsTheText(t *testing.T) {
	e := newEnv(t)
	mustRegister(t, e.reg, e.root, echo("echo", `say "hi"`))
	res := e.reg.Execute(context.Background(), call("echo", `{}`))
	if res.Value != nil || string(res.CanonicalValue()) != `"say \"hi\""` {
		t.Fatalf("%+v / %s", res, res.CanonicalValue())
	}
	tl, _ := e.reg.Get("echo", "")
	if tl.OutputSchema() != nil {
		t.Fatal("text-only tool has an output schema")
	}
}

// TestOUT14_PointerOutAndDefinitionRoundTrip: a pointer Out is described by
// its element, and a nil pointer is the element's zero value (as the
// go-sdk does); a registered tool's Definition keeps its declared output,
// render and FinalizeContent.
func TestOUT14_PointerOutAndDefinitionRoundTrip(t *testing.T) {
	e := newEnv(t)
	d := tools.MustDefine(tools.TypedTool[listArgs, *listing]{
		Name: "maybe", Description: "Maybe lists.",
		Execute: func(context.Context, listArgs, *tools.Execution) (*listing, error) { return nil, nil },
		FinalizeContent: func(*tools.Execution, tools.Result) []tools.Content {
			return []tools.Content{tools.Text("final")}
		},
	})
	mustRegister(t, e.reg, e.root, d)
	res := e.reg.Execute(context.Background(), call("maybe", `{"dir":""}`))
	if res.IsError || string(res.Value) != `{"entries":null,"total":0}` || text(res) != "final" {
		t.Fatalf("%+v value %s", res, res.Value)
	}
	tl, _ := e.reg.Get("maybe", "")
	back := tl.Definition()
	if string(back.OutputSchema) != string(tl.OutputSchema()) || back.FinalizeContent == nil || len(back.OutputSchema) == 0 {
		t.Fatalf("round trip lost the output: %s", back.OutputSchema)
	}
	back.Name = "again"
	mustRegister(t, e.reg, e.root, back)
	if res := e.reg.Execute(context.Background(), call("again", `{"dir":""}`)); string(res.Value) != `{"entries":null,"total":0}` || text(res) != "final" {
		t.Fatalf("re-registered: %+v", res)
	}
}

// TestOUT15_TypedFastPathTrustsOnlyItsOwnBytes: a typed body's value is
// encoded and recognized valid by its Out type without the generic
// validator, but only while it is exactly those bytes for exactly that
// schema: a wrapper that changes the value in place, or a definition
// whose output schema was replaced after Define, gets the value validated
// in full (INVALID_OUTPUT with the violations' paths).
func TestOUT15_TypedFastPathTrustsOnlyItsOwnBytes(t *testing.T) {
	e := newEnv(t)
	want := `{"entries":[{"name":"a","size":2}],"total":5}`
	mustRegister(t, e.reg, e.root, listTool(listing{Entries: []entry{{"a", 2}}, Total: 5}))
	if res := e.reg.Execute(context.Background(), call("list", `{"dir":"."}`)); res.IsError || string(res.Value) != want || text(res) != want {
		t.Fatalf("list: %+v", res)
	}

	mutated := listTool(listing{Entries: []entry{{"a", 2}}, Total: 5})
	mutated.Name = "mutated"
	body := mutated.Execute
	mutated.Execute = func(ctx context.Context, exec *tools.Execution) (tools.Output, error) {
		o, err := body(ctx, exec)
		if i := strings.Index(string(o.Value), `"total"`); i >= 0 {
			copy(o.Value[i:], `"totaL"`) // same length, in place
		}
		return o, err
	}
	mustRegister(t, e.reg, e.root, mutated)
	res := e.reg.Execute(context.Background(), call("mutated", `{"dir":"."}`))
	if msg := text(res); code(res) != tools.CodeInvalidOutput || !strings.Contains(msg, "/totaL: additional property is not allowed") || !strings.Contains(msg, "/total: required property is missing") {
		t.Fatalf("mutated in place: %+v", res)
	}

	tighter := listTool(listing{Entries: []entry{{"a", 2}}, Total: 5})
	tighter.Name = "tighter"
	tighter.OutputSchema = json.RawMessage(`{"type":"object","properties":{"total":{"type":"integer","maximum":3}}}`)
	mustRegister(t, e.reg, e.root, tighter)
	res = e.reg.Execute(context.Background(), call("tighter", `{"dir":"."}`))
	if code(res) != tools.CodeInvalidOutput || !strings.Contains(text(res), "/total: must be at most 3, got 5") {
		t.Fatalf("schema replaced after Define: %+v", res)
	}
}

// TestCanonicalValueOfOneTextAllocatesOnce: the canonical value of a result of one text block is
// its quoted text, made in one allocation (a sub-call of Code Mode makes one per call); several
// blocks join with newlines as before.
func TestCanonicalValueOfOneTextAllocatesOnce(t *testing.T) {
	one := tools.Result{Content: []tools.Content{tools.Text("a \"quoted\"\nline é")}}
	if got, want := string(one.CanonicalValue()), `"a \"quoted\"\nline é"`; got != want {
		t.Fatalf("CanonicalValue = %s, want %s", got, want)
	}
	two := tools.Result{Content: []tools.Content{tools.Text("a"), tools.Text("b")}}
	if got, want := string(two.CanonicalValue()), `"a\nb"`; got != want {
		t.Fatalf("CanonicalValue of two blocks = %s, want %s", got, want)
	}
	if raceEnabled {
		t.Skip("the race detector changes allocation counts")
	}
	plain := tools.Result{Content: []tools.Content{tools.Text("ok")}}
	if n := testing.AllocsPerRun(100, func() { _ = plain.CanonicalValue() }); n > 1 {
		t.Fatalf("CanonicalValue of one text block allocates %.0f objects, want 1", n)
	}
}
