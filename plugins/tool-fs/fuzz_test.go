package toolfs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
)

// FuzzResolve: whatever path the model sends, Resolve either refuses it or
// returns a path inside the workspace root, even through symlinks.
func FuzzResolve(f *testing.F) {
	dir := f.TempDir()
	outside := f.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		f.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "a/b"), 0o755); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"a/b/c", "../x", "/etc/passwd", "out/x", "a/../../b", "a//b/./c", dir + "/a", "a\x00", "", ".", ".."} {
		f.Add(s)
	}
	ws, err := toolfs.NewWorkspace(dir)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, p string) {
		got, err := ws.Resolve(p)
		if err != nil {
			return
		}
		if got != ws.Root() && !strings.HasPrefix(got, ws.Root()+string(filepath.Separator)) {
			t.Fatalf("Resolve(%q) = %q, outside %q", p, got, ws.Root())
		}
		if real, err := filepath.EvalSymlinks(got); err == nil && real != ws.Root() && !strings.HasPrefix(real, ws.Root()+string(filepath.Separator)) {
			t.Fatalf("Resolve(%q) = %q, which really is %q, outside the root", p, got, real)
		}
	})
}
