package acp

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/dsh-go/dsh/plugins/tools"
)

func marshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestMapping_CallCardsToToolCall(t *testing.T) {
	m := mapper{cwd: "/ws", maxRaw: 1 << 10}
	old := "a"
	args := []byte(`{"x":1}`)
	for _, tc := range []struct {
		name string
		card tools.CallView
		want string
	}{
		{"generic", tools.GenericCall{Title: "Read a", Kind: "read", RawInput: json.RawMessage(`{"p":"a"}`),
			Content:   []tools.Content{tools.Text("t")},
			Locations: []tools.Location{{Path: "a", Line: 3}, {Path: "/abs/b"}}},
			`{"content":[{"content":{"text":"t","type":"text"},"type":"content"}],"kind":"read","locations":[{"line":3,"path":"/ws/a"},{"path":"/abs/b"}],"rawInput":{"p":"a"},"sessionUpdate":"","status":"pending","title":"Read a","toolCallId":"c"}`},
		{"generic, unknown kind, no raw input", tools.GenericCall{Title: "T", Kind: "frobnicate"},
			`{"kind":"other","rawInput":{"x":1},"sessionUpdate":"","status":"pending","title":"T","toolCallId":"c"}`},
		{"terminal", tools.TerminalCall{Title: "ls -l", Description: "List", Cwd: "/ws"},
			`{"content":[{"content":{"text":"List","type":"text"},"type":"content"}],"kind":"execute","rawInput":{"x":1},"sessionUpdate":"","status":"pending","title":"ls -l","toolCallId":"c"}`},
		{"diff", tools.DiffCall{Title: "Edit a", Diffs: []tools.FileDiff{{Path: "a", OldText: &old, NewText: "b"}, {Path: "n", NewText: "new"}},
			Locations: []tools.Location{{Path: "a"}}},
			`{"content":[{"newText":"b","oldText":"a","path":"/ws/a","type":"diff"},{"newText":"new","path":"/ws/n","type":"diff"}],"kind":"edit","locations":[{"path":"/ws/a"}],"rawInput":{"x":1},"sessionUpdate":"","status":"pending","title":"Edit a","toolCallId":"c"}`},
		{"no card", nil,
			`{"kind":"other","rawInput":{"x":1},"sessionUpdate":"","status":"pending","title":"tool","toolCallId":"c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := marshal(t, m.start("c", "tool", args, tc.card)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestMapping_ResultCardsToToolCallUpdate(t *testing.T) {
	m := mapper{maxRaw: 1 << 10}
	zero, one := 0, 1
	old := "a"
	ok := tools.Result{CallID: "c", Content: []tools.Content{tools.Text("model text")}}
	failed := tools.Result{CallID: "c", IsError: true, Content: []tools.Content{tools.Text("boom")}, Error: &tools.ErrorInfo{Name: "E", Code: "TOOL_ERROR"}}
	for _, tc := range []struct {
		name string
		res  tools.Result
		card tools.ResultView
		want string
	}{
		{"no card", ok, nil,
			`{"content":[{"content":{"text":"model text","type":"text"},"type":"content"}],"rawOutput":{"callId":"c","content":[{"type":"text","text":"model text"}],"isError":false},"sessionUpdate":"","status":"completed","toolCallId":"c"}`},
		{"failure", failed, nil,
			`{"content":[{"content":{"text":"boom","type":"text"},"type":"content"}],"rawOutput":{"callId":"c","content":[{"type":"text","text":"boom"}],"isError":true,"error":{"name":"E","code":"TOOL_ERROR"}},"sessionUpdate":"","status":"failed","toolCallId":"c"}`},
		{"generic with title and content", ok, tools.GenericResult{Title: "Done", Content: []tools.Content{tools.Text("pretty")}},
			`{"content":[{"content":{"text":"pretty","type":"text"},"type":"content"}],"rawOutput":{"callId":"c","content":[{"type":"text","text":"model text"}],"isError":false},"sessionUpdate":"","status":"completed","title":"Done","toolCallId":"c"}`},
		{"generic without content falls back", ok, tools.GenericResult{},
			`{"content":[{"content":{"text":"model text","type":"text"},"type":"content"}],"rawOutput":{"callId":"c","content":[{"type":"text","text":"model text"}],"isError":false},"sessionUpdate":"","status":"completed","toolCallId":"c"}`},
		{"terminal", ok, tools.TerminalResult{Output: "hi\n", ExitCode: &zero},
			"{\"content\":[{\"content\":{\"text\":\"```\\nhi\\n```\\nexit code 0\",\"type\":\"text\"},\"type\":\"content\"}],\"rawOutput\":{\"callId\":\"c\",\"content\":[{\"type\":\"text\",\"text\":\"model text\"}],\"isError\":false},\"sessionUpdate\":\"\",\"status\":\"completed\",\"toolCallId\":\"c\"}"},
		{"terminal killed", ok, tools.TerminalResult{Title: "t", Output: "x", ExitCode: &one, Signal: "SIGKILL"},
			"{\"content\":[{\"content\":{\"text\":\"```\\nx\\n```\\nkilled by signal SIGKILL\",\"type\":\"text\"},\"type\":\"content\"}],\"rawOutput\":{\"callId\":\"c\",\"content\":[{\"type\":\"text\",\"text\":\"model text\"}],\"isError\":false},\"sessionUpdate\":\"\",\"status\":\"completed\",\"title\":\"t\",\"toolCallId\":\"c\"}"},
		{"diff", ok, tools.DiffResult{Title: "Edited a", Diffs: []tools.FileDiff{{Path: "/a", OldText: &old, NewText: "b"}}},
			`{"content":[{"newText":"b","oldText":"a","path":"/a","type":"diff"}],"rawOutput":{"callId":"c","content":[{"type":"text","text":"model text"}],"isError":false},"sessionUpdate":"","status":"completed","title":"Edited a","toolCallId":"c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := marshal(t, m.finish("c", tc.res, tc.card)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestMapping_ContentBlocks(t *testing.T) {
	got := marshal(t, contents([]tools.Content{
		tools.Image("aW1n", "image/png"),
		tools.Audio("YXVk", "audio/wav"),
		tools.EmbeddedText("file:///a", "text/plain", "txt"),
		tools.EmbeddedBlob("file:///b", "", "YmxvYg=="),
		tools.Link("file:///c", "c", "desc", "text/x-go"),
		{Type: "hologram"},
	}))
	want := `[{"content":{"data":"aW1n","mimeType":"image/png","type":"image"},"type":"content"},` +
		`{"content":{"data":"YXVk","mimeType":"audio/wav","type":"audio"},"type":"content"},` +
		`{"content":{"resource":{"mimeType":"text/plain","text":"txt","uri":"file:///a"},"type":"resource"},"type":"content"},` +
		`{"content":{"resource":{"blob":"YmxvYg==","uri":"file:///b"},"type":"resource"},"type":"content"},` +
		`{"content":{"description":"desc","mimeType":"text/x-go","name":"c","type":"resource_link","uri":"file:///c"},"type":"content"}]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestMapping_RawValuesAreBounded(t *testing.T) {
	m := mapper{maxRaw: 16}
	if v := m.raw([]byte(`{"a":"0123456789"}`)); v != nil {
		t.Errorf("oversized raw kept: %s", v)
	}
	if v := m.raw([]byte(`{"a":1}`)); v == nil {
		t.Error("small raw dropped")
	}
	if v := m.raw([]byte(`{`)); v != nil {
		t.Error("invalid JSON kept")
	}
}

func TestMapping_KindsPassOnlyWhenACPKnowsThem(t *testing.T) {
	for in, want := range map[string]acpsdk.ToolKind{"read": "read", "switch_mode": "switch_mode", "": "other", "READ": "other", "exec": "other"} {
		if got := toolKind(in); got != want {
			t.Errorf("toolKind(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestMapping_DocStatesEveryRow keeps the package doc and Mapping in step:
// every card field Mapping lists is named in doc.go's card section.
func TestMapping_DocStatesEveryRow(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(strings.ReplaceAll(string(doc), "//", "")), " ")
	field := regexp.MustCompile(`^(\w+(?:Call|Result))\.(.+)$`)
	for _, row := range Mapping() {
		m := field.FindStringSubmatch(row.Source)
		if m == nil {
			continue
		}
		section := text[strings.Index(text, "- "+m[1]+":"):]
		if i := strings.Index(section[2:], " - "); i >= 0 {
			section = section[:i+2]
		}
		if !strings.Contains(text, "- "+m[1]+":") {
			t.Errorf("doc.go has no entry for %s", m[1])
			continue
		}
		for _, f := range strings.Split(m[2], ", ") {
			if !strings.Contains(section, f) {
				t.Errorf("doc.go's %s entry does not state %s (→ %s)", m[1], f, row.Field)
			}
		}
	}
}

func TestTerminalText_FenceIsLongerThanAnyBacktickRun(t *testing.T) {
	code := 2
	got := terminalText(tools.TerminalResult{Output: "a ``` b ````", ExitCode: &code})
	if want := "`````\na ``` b ````\n`````\nexit code 2"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
	if got := terminalText(tools.TerminalResult{ExitCode: &code}); got != "exit code 2" {
		t.Errorf("empty output: %q", got)
	}
}

func FuzzTerminalText(f *testing.F) {
	f.Add("hi\n", 0, "")
	f.Add("```", 1, "SIGKILL")
	f.Add("", 0, "")
	f.Fuzz(func(t *testing.T, out string, code int, sig string) {
		got := terminalText(tools.TerminalResult{Output: out, ExitCode: &code, Signal: sig})
		if out == "" {
			return
		}
		lines := strings.SplitN(got, "\n", 2)
		fence := lines[0]
		if strings.Trim(fence, "`") != "" || len(fence) < 3 {
			t.Fatalf("opening line %q is no fence", fence)
		}
		if strings.Contains(out, fence) {
			t.Fatalf("fence %q occurs in the output", fence)
		}
		body := strings.TrimPrefix(got, fence+"\n")
		if !strings.HasPrefix(body, out) {
			t.Fatalf("output not verbatim: %q", got)
		}
	})
}

// FuzzPatternCovers: a remembered rule never covers a call of another
// tool, another command, or a path it was not given.
func FuzzPatternCovers(f *testing.F) {
	f.Add("edit", "a.txt", "a.txt", "", "")
	f.Add("bash", "", "", "ls", "ls; rm -rf /")
	f.Add("read", "../x", "x", "", "")
	f.Add("read", "a/../b", "b", "", "")
	f.Fuzz(func(t *testing.T, tool, rulePath, callPath, ruleCmd, callCmd string) {
		m := mapper{cwd: "/ws"}
		var ruleCard, callCard tools.CallView
		if ruleCmd != "" || callCmd != "" {
			ruleCard, callCard = tools.TerminalCall{Title: ruleCmd}, tools.TerminalCall{Title: callCmd}
		} else {
			ruleCard = tools.GenericCall{Locations: []tools.Location{{Path: rulePath}}}
			callCard = tools.DiffCall{Diffs: []tools.FileDiff{{Path: callPath}}}
		}
		r, c := m.patternOf(tool, ruleCard), m.patternOf(tool, callCard)
		if utf8.ValidString(tool+rulePath+ruleCmd) && !utf8.ValidString(r.describe()) {
			t.Fatalf("describe cut a character: %q", r.describe())
		}
		if r.covers(m.patternOf(tool+"x", callCard)) {
			t.Fatal("covers another tool")
		}
		if !r.covers(m.patternOf(tool, ruleCard)) {
			t.Fatal("does not cover the call it was made from")
		}
		if !r.covers(c) {
			return
		}
		if ruleCmd != "" || callCmd != "" {
			if ruleCmd != callCmd {
				t.Fatalf("command rule %q covers %q", ruleCmd, callCmd)
			}
			return
		}
		if filepath.Clean(m.path(rulePath)) != filepath.Clean(m.path(callPath)) {
			t.Fatalf("path rule %q covers %q", rulePath, callPath)
		}
	})
}

// FuzzAnswer: whatever a client sends as request_permission's answer,
// decoding and mapping it never panics, and only an offered option id
// allows.
func FuzzAnswer(f *testing.F) {
	f.Add([]byte(`{"outcome":{"outcome":"selected","optionId":"allow_once"}}`))
	f.Add([]byte(`{"outcome":{"outcome":"cancelled"}}`))
	f.Add([]byte(`{"outcome":{"outcome":"selected","optionId":"allow_twice"}}`))
	f.Add([]byte(`{"outcome":{}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var resp acpsdk.RequestPermissionResponse
		if json.Unmarshal(b, &resp) != nil {
			return
		}
		outcome, remember, err := decide(resp.Outcome)
		if outcome == tools.AllowedOnce {
			id := resp.Outcome.Selected.OptionId
			if id != OptionAllowOnce && id != OptionAllowAlways {
				t.Fatalf("allowed by option %q", id)
			}
			if remember != (id == OptionAllowAlways) {
				t.Fatalf("remember=%v for %q", remember, id)
			}
		}
		if err == nil && outcome == "" {
			t.Fatal("no outcome and no error")
		}
	})
}
