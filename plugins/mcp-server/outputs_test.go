package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	mcpserver "github.com/dsh-go/dsh/plugins/mcp-server"
	"github.com/dsh-go/dsh/plugins/tools"
)

type weatherIn struct {
	City  string   `json:"city" jsonschema:"the city to report on"`
	Units string   `json:"units,omitempty" jsonschema:"metric or imperial"`
	Days  int8     `json:"days,omitempty"`
	Tags  []string `json:"tags,omitempty"`
}

type reading struct {
	At    string  `json:"at"`
	Value float64 `json:"value"`
}

type weatherOut struct {
	City       string             `json:"city"`
	Conditions string             `json:"conditions" jsonschema:"in words"`
	Readings   []reading          `json:"readings"`
	Extra      map[string]int     `json:"extra,omitempty"`
	Note       *string            `json:"note,omitempty"`
	Nested     struct{ Ok bool }  `json:"nested"`
	Scores     map[string]float64 `json:"scores"`
}

func weather(_ context.Context, in weatherIn) weatherOut {
	return weatherOut{City: in.City, Conditions: "sunny", Readings: []reading{{"noon", 21.5}}, Scores: map[string]float64{"uv": 3}}
}

// TestOUT6_ServedToolsPublishOutputSchemaAndStructuredContent: a tool with a
// declared output (object root) is served with its outputSchema, and its
// result carries the value as structuredContent beside the rendered
// content; a go-sdk client, which validates structuredContent against the
// outputSchema, accepts it.
func TestOUT6_ServedToolsPublishOutputSchemaAndStructuredContent(t *testing.T) {
	e := boot(t, tools.Native, mcpserver.Config{})
	register(t, e.root, e.reg, tools.MustDefine(tools.TypedTool[weatherIn, weatherOut]{
		Name: "weather", Description: "Reports the weather.",
		Execute: func(ctx context.Context, in weatherIn, _ *tools.Execution) (weatherOut, error) {
			return weather(ctx, in), nil
		},
	}))
	cs := connect(t, e, nil)
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	tl, _ := e.reg.Get("weather", "")
	var served *mcp.Tool
	for _, x := range lt.Tools {
		if x.Name == "weather" {
			served = x
		}
	}
	if served == nil || served.OutputSchema == nil || !sameJSON(t, served.OutputSchema, tl.OutputSchema()) {
		t.Fatalf("served output schema %v, want %s", served, tl.OutputSchema())
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Oslo"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || res.StructuredContent == nil {
		t.Fatalf("result %+v", res)
	}
	want := `{"city":"Oslo","conditions":"sunny","readings":[{"at":"noon","value":21.5}],"nested":{"Ok":false},"scores":{"uv":3}}`
	if !sameJSON(t, res.StructuredContent, json.RawMessage(want)) {
		t.Fatalf("structuredContent %v", res.StructuredContent)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !sameJSON(t, json.RawMessage(tc.Text), json.RawMessage(want)) {
		t.Fatalf("content %+v", res.Content)
	}
	// A text-only tool publishes no output schema.
	for _, x := range lt.Tools {
		if x.Name == "echo" && x.OutputSchema != nil {
			t.Fatalf("echo output schema %v", x.OutputSchema)
		}
	}
}

// sameJSON reports whether a and b (any JSON-encodable values) encode the
// same JSON value.
func sameJSON(t *testing.T, a, b any) bool {
	t.Helper()
	dec := func(v any) any {
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var out any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	return reflect.DeepEqual(dec(a), dec(b))
}

type sdkIn struct {
	Query   string            `json:"query" jsonschema:"what to look for"`
	Limit   int               `json:"limit,omitempty"`
	Level   int8              `json:"level"`
	Ratio   float64           `json:"ratio,omitzero"`
	Tags    []string          `json:"tags"`
	Opt     *string           `json:"opt,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	When    time.Time         `json:"when,omitzero"`
	Filter  sdkFilter         `json:"filter"`
	Any     any               `json:"any,omitempty"`
	Skipped string            `json:"-"`
	sdkEmbedded
}

type sdkFilter struct {
	Kinds []uint16 `json:"kinds" jsonschema:"kinds to keep"`
	Deep  *bool    `json:"deep"`
}

type sdkEmbedded struct {
	Promoted string `json:"promoted,omitempty"`
}

// TestOUT7_SchemasAreTheGoSDKs: a go-sdk typed tool (mcp.AddTool with In,
// Out) and the same structs registered here as a TypedTool[In, Out] and
// served are listed with the same input and output schemas (issue 22
// item 7: required from the absence of omitempty/omitzero, descriptions
// from the jsonschema tag, jsonschema-go's inference).
func TestOUT7_SchemasAreTheGoSDKs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	// The go-sdk's own server.
	srv := mcp.NewServer(&mcp.Implementation{Name: "sdk"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "weather", Description: "Weather."}, func(context.Context, *mcp.CallToolRequest, weatherIn) (*mcp.CallToolResult, weatherOut, error) {
		return nil, weatherOut{}, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "search", Description: "Search."}, func(context.Context, *mcp.CallToolRequest, sdkIn) (*mcp.CallToolResult, sdkFilter, error) {
		return nil, sdkFilter{}, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	sdkCS, err := mcp.NewClient(&mcp.Implementation{Name: "c"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sdkCS.Close()
	// The same structs here.
	e := boot(t, tools.Native, mcpserver.Config{})
	register(t, e.root, e.reg, tools.MustDefine(tools.TypedTool[weatherIn, weatherOut]{Name: "weather", Description: "Weather.",
		Execute: func(ctx context.Context, in weatherIn, _ *tools.Execution) (weatherOut, error) {
			return weather(ctx, in), nil
		}}))
	register(t, e.root, e.reg, tools.MustDefine(tools.TypedTool[sdkIn, sdkFilter]{Name: "search", Description: "Search.",
		Execute: func(context.Context, sdkIn, *tools.Execution) (sdkFilter, error) { return sdkFilter{}, nil }}))
	ours := connect(t, e, nil)

	list := func(cs *mcp.ClientSession) map[string]*mcp.Tool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]*mcp.Tool{}
		for _, x := range res.Tools {
			m[x.Name] = x
		}
		return m
	}
	a, b := list(sdkCS), list(ours)
	for _, name := range []string{"weather", "search"} {
		if a[name] == nil || b[name] == nil {
			t.Fatalf("%s missing: sdk %v, ours %v", name, a[name], b[name])
		}
		if !sameJSON(t, a[name].InputSchema, b[name].InputSchema) {
			t.Errorf("%s input schema:\n go-sdk %s\n   ours %s", name, mustJSON(t, a[name].InputSchema), mustJSON(t, b[name].InputSchema))
		}
		if !sameJSON(t, a[name].OutputSchema, b[name].OutputSchema) {
			t.Errorf("%s output schema:\n go-sdk %s\n   ours %s", name, mustJSON(t, a[name].OutputSchema), mustJSON(t, b[name].OutputSchema))
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
