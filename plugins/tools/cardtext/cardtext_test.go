package cardtext_test

import (
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/cardtext"
)

func ptr[T any](v T) *T { return &v }

func TestCall(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    tools.CallView
		args string
		want []string
	}{
		{"terminal", tools.TerminalCall{Title: "ls -l", Description: "list", Cwd: "/w"}, "", []string{"# list", "(in /w)", "$ ls -l"}},
		{"generic", tools.GenericCall{Title: "Read a.go", Kind: "read", Locations: []tools.Location{{Path: "a.go", Line: 3}}}, "", []string{"Read a.go [read]", "locations: a.go:3"}},
		{"diff", tools.DiffCall{Title: "Edit a", Diffs: []tools.FileDiff{{Path: "a", OldText: ptr("x\n"), NewText: "y\n"}}}, "", []string{"Edit a", "-x", "+y"}},
		{"none", nil, `{"path":"a"}`, []string{"read", `{"path":"a"}`}},
		{"escapes", tools.TerminalCall{Title: "echo \x1b[2Jhi"}, "", []string{`$ echo \x1b[2Jhi`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cardtext.Call("read", []byte(tc.args), tc.v)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			if strings.ContainsRune(got, 0x1b) {
				t.Errorf("raw escape byte reached the output:\n%q", got)
			}
		})
	}
}

func TestResult(t *testing.T) {
	text := []tools.Content{tools.Text("plain text")}
	for _, tc := range []struct {
		name string
		v    tools.ResultView
		r    tools.ResultData
		code string
		want []string
		not  []string
	}{
		{"terminal", tools.TerminalResult{Output: "out\n", ExitCode: ptr(2)}, tools.ResultData{Content: text}, "", []string{"| out", "[exit 2]"}, []string{"plain text"}},
		{"signal", tools.TerminalResult{Output: "x", Signal: "killed"}, tools.ResultData{Content: text}, "", []string{"[killed by killed]"}, nil},
		{"diff new file", tools.DiffResult{Title: "Wrote a", Diffs: []tools.FileDiff{{Path: "a", NewText: "1\n2\n"}}}, tools.ResultData{Content: text}, "", []string{"Wrote a", "new file a (2 lines)", "+1"}, nil},
		{"generic replaces content", tools.GenericResult{Title: "T", Content: []tools.Content{tools.Text("nicer")}}, tools.ResultData{Content: text}, "", []string{"T", "| nicer"}, []string{"plain text"}},
		{"no card", nil, tools.ResultData{Content: text}, "", []string{"| plain text"}, nil},
		{"error wins over card", tools.TerminalResult{Output: "o"}, tools.ResultData{Content: []tools.Content{tools.Text("denied")}, IsError: true}, "DENIED", []string{"error DENIED:", "| denied"}, []string{"| o"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := cardtext.Result(tc.v, tc.r, tc.code)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("missing %q in:\n%s", w, got)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(got, w) {
					t.Errorf("unexpected %q in:\n%s", w, got)
				}
			}
		})
	}
}

func FuzzCall(f *testing.F) {
	f.Add("ls", "desc", "a\nb\n", "a\nc\n")
	f.Add("\x1b]0;x\a", "\u202e", "", "\xff")
	f.Fuzz(func(t *testing.T, title, desc, old, new string) {
		for _, v := range []tools.CallView{
			tools.TerminalCall{Title: title, Description: desc},
			tools.DiffCall{Title: title, Diffs: []tools.FileDiff{{Path: desc, OldText: &old, NewText: new}}},
			tools.GenericCall{Title: title, Kind: desc},
		} {
			out := cardtext.Call("t", []byte(old), v)
			for _, r := range out {
				if r == 0x1b || r == '\u202e' || r == '\a' {
					t.Fatalf("unsanitized %U in %q", r, out)
				}
			}
		}
	})
}
