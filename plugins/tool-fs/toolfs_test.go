package toolfs_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func boot(t *testing.T) (*tools.Registry, string) {
	t.Helper()
	dir := t.TempDir()
	return toolstest.Boot(t, []toolstest.Plugin{{P: toolfs.Plugin, Config: toolfs.Config{Root: dir}}}), dir
}

func call(t *testing.T, reg *tools.Registry, name string, args any) tools.Result {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return reg.Execute(context.Background(), tools.Call{ID: "c-" + name, Name: name, Arguments: raw})
}

func text(r tools.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

func TestWorkspaceConfinement(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, os.Symlink(outside, filepath.Join(dir, "escape")))
	must(t, os.Symlink(filepath.Join(outside, "nope"), filepath.Join(dir, "dangling")))
	must(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	must(t, os.Symlink(filepath.Join(dir, "sub"), filepath.Join(dir, "inner")))
	ws, err := toolfs.NewWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"a.txt", true},
		{"sub/../a.txt", true},
		{"inner/x.txt", true},
		{filepath.Join(dir, "new/deep/file"), true},
		{"", false},
		{"../x", false},
		{"sub/../../x", false},
		{filepath.Join(outside, "secret"), false},
		{"/etc/passwd", false},
		{"escape/secret", false},
		{"escape", false},
		{"dangling", false},
		{"a\x00b", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			got, err := ws.Resolve(tc.path)
			if tc.ok {
				if err != nil {
					t.Fatalf("Resolve(%q): %v", tc.path, err)
				}
				if !strings.HasPrefix(got, ws.Root()) {
					t.Fatalf("Resolve(%q) = %q, outside %q", tc.path, got, ws.Root())
				}
				return
			}
			if !errors.Is(err, toolfs.ErrOutsideWorkspace) {
				t.Fatalf("Resolve(%q) = %q, %v; want ErrOutsideWorkspace", tc.path, got, err)
			}
		})
	}
}

func TestReadWriteEditThroughRegistry(t *testing.T) {
	reg, dir := boot(t)
	r := call(t, reg, "write", toolfs.WriteArgs{Path: "notes/a.txt", Content: "one\ntwo\nthree\n"})
	if r.IsError {
		t.Fatalf("write: %s", text(r))
	}
	// A new file: diff card with oldText absent.
	view := reg.PresentResult("write", "", mustJSON(t, toolfs.WriteArgs{Path: "notes/a.txt", Content: "x"}), tools.ResultData{Content: r.Content, Meta: r.Meta})
	dv, ok := view.(tools.DiffResult)
	if !ok || len(dv.Diffs) != 1 || dv.Diffs[0].OldText != nil || dv.Diffs[0].Path != "notes/a.txt" {
		t.Fatalf("write result card = %#v", view)
	}
	r = call(t, reg, "read", toolfs.ReadArgs{Path: "notes/a.txt", Offset: 2, Limit: 1})
	if r.IsError || text(r) != "two\n" {
		t.Fatalf("read = %q (isError %v)", text(r), r.IsError)
	}
	r = call(t, reg, "edit", toolfs.EditArgs{Path: "notes/a.txt", OldString: "two", NewString: "TWO"})
	if r.IsError {
		t.Fatalf("edit: %s", text(r))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "notes/a.txt"))
	if string(b) != "one\nTWO\nthree\n" {
		t.Fatalf("file = %q", b)
	}
	view = reg.PresentResult("edit", "", mustJSON(t, toolfs.EditArgs{Path: "notes/a.txt", OldString: "two", NewString: "TWO"}), tools.ResultData{Content: r.Content, Meta: r.Meta})
	dv, ok = view.(tools.DiffResult)
	if !ok || len(dv.Diffs) != 1 || dv.Diffs[0].OldText == nil || *dv.Diffs[0].OldText != "one\ntwo\nthree\n" || dv.Diffs[0].NewText != "one\nTWO\nthree\n" {
		t.Fatalf("edit result card = %#v", view)
	}
}

func TestEditRequiresUniqueMatch(t *testing.T) {
	reg, dir := boot(t)
	must(t, os.WriteFile(filepath.Join(dir, "f"), []byte("x x"), 0o644))
	for _, tc := range []struct{ old, want string }{{"x", "occurs 2 times"}, {"y", "not found"}} {
		r := call(t, reg, "edit", toolfs.EditArgs{Path: "f", OldString: tc.old, NewString: "z"})
		if !r.IsError || !strings.Contains(text(r), tc.want) {
			t.Fatalf("edit %q = %q (isError %v), want %q", tc.old, text(r), r.IsError, tc.want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "f"))
	if string(b) != "x x" {
		t.Fatalf("a failed edit changed the file: %q", b)
	}
}

func TestEscapesAreToolErrors(t *testing.T) {
	reg, _ := boot(t)
	r := call(t, reg, "read", toolfs.ReadArgs{Path: "../../etc/passwd"})
	if !r.IsError || !strings.Contains(text(r), "outside the workspace") {
		t.Fatalf("read outside = %q (isError %v)", text(r), r.IsError)
	}
}

func TestHunkHasContext(t *testing.T) {
	reg, dir := boot(t)
	var lines []string
	for i := range 20 {
		lines = append(lines, string(rune('a'+i)))
	}
	must(t, os.WriteFile(filepath.Join(dir, "long"), []byte(strings.Join(lines, "\n")+"\n"), 0o644))
	r := call(t, reg, "edit", toolfs.EditArgs{Path: "long", OldString: "j\n", NewString: "J\n"})
	var m toolfs.Meta
	must(t, json.Unmarshal(r.Meta, &m))
	if got := *m.Diffs[0].OldText; got != "g\nh\ni\nj\nk\nl\nm\n" {
		t.Fatalf("hunk old text = %q, want 3 lines of context each side", got)
	}
	if got := m.Diffs[0].NewText; got != "g\nh\ni\nJ\nk\nl\nm\n" {
		t.Fatalf("hunk new text = %q", got)
	}
}

func TestPresentCallOnMalformedArgs(t *testing.T) {
	reg, _ := boot(t)
	if v := reg.PresentCall("edit", "", json.RawMessage(`{"path":3}`)); v != nil {
		t.Fatalf("malformed args rendered %#v, want nil", v)
	}
	v := reg.PresentCall("read", "", json.RawMessage(`{"path":"a","offset":4}`))
	g, ok := v.(tools.GenericCall)
	if !ok || g.Kind != "read" || len(g.Locations) != 1 || g.Locations[0].Line != 4 {
		t.Fatalf("read card = %#v", v)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestOUT12_ReadDeclaresItsOutput: read's result carries its typed value
// (the text, whether it was cut) under a declared output schema; the model
// reads the text, with the cut note.
func TestOUT12_ReadDeclaresItsOutput(t *testing.T) {
	reg, dir := boot(t)
	must(t, os.WriteFile(filepath.Join(dir, "v.txt"), []byte("one\ntwo\n"), 0o644))
	r := call(t, reg, "read", map[string]any{"path": "v.txt", "limit": 1})
	if r.IsError || string(r.Value) != `{"text":"one\n"}` || text(r) != "one\n" {
		t.Fatalf("%+v value %s", r, r.Value)
	}
	tl, _ := reg.Get("read", "")
	if s := string(tl.OutputSchema()); !strings.Contains(s, `"required":["text"]`) {
		t.Fatalf("output schema %s", s)
	}
}
