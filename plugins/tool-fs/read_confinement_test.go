package toolfs_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	toolfs "github.com/dsh-go/dsh/plugins/tool-fs"
	"github.com/dsh-go/dsh/plugins/tools"
	"github.com/dsh-go/dsh/plugins/tools/toolstest"
)

// TestConfinement_SymlinkSwapAfterResolve: a directory swapped for a
// symlink to the outside between the path check and the file operation
// (for example by a concurrently running shell command) cannot make read
// or write touch anything outside the workspace.
func TestConfinement_SymlinkSwapAfterResolve(t *testing.T) {
	reg, dir := boot(t)
	outside := t.TempDir()
	must(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("TOPSECRET"), 0o644))
	d, spare := filepath.Join(dir, "d"), filepath.Join(dir, "spare")
	must(t, os.Mkdir(spare, 0o755))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for !stop.Load() {
			_ = os.Rename(spare, d) // d is a real directory
			runtime.Gosched()
			_ = os.Rename(d, spare)
			_ = os.Symlink(outside, d) // d leads outside
			runtime.Gosched()
			_ = os.Remove(d)
		}
	})
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; time.Now().Before(deadline) && i < 20000; i++ {
		if r := call(t, reg, "read", toolfs.ReadArgs{Path: "d/secret"}); strings.Contains(text(r), "TOPSECRET") {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("read returned a file outside the workspace (iteration %d)", i)
		}
		call(t, reg, "write", toolfs.WriteArgs{Path: "d/planted", Content: "x"})
		if _, err := os.Lstat(filepath.Join(outside, "planted")); err == nil {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("write created a file outside the workspace (iteration %d)", i)
		}
	}
	stop.Store(true)
	wg.Wait()
}

// TestRead_ResultIsValidUTF8: a file that is not valid UTF-8, or whose
// cut falls inside a multi-byte character, still reads as text (invalid
// bytes as U+FFFD) instead of an INVALID_RESULT.
func TestRead_ResultIsValidUTF8(t *testing.T) {
	dir := t.TempDir()
	reg := bootWith(t, toolfs.Config{Root: dir, MaxReadBytes: 4})
	must(t, os.WriteFile(filepath.Join(dir, "bin"), []byte("a\xffb"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "utf"), []byte("aéééé"), 0o644))
	for name, want := range map[string]string{"bin": "a\ufffdb", "utf": "aé\n[cut:"} {
		r := call(t, reg, "read", toolfs.ReadArgs{Path: name})
		if r.IsError || !utf8.ValidString(text(r)) || !strings.HasPrefix(text(r), want) {
			t.Errorf("read %s = %q (isError %v), want prefix %q", name, text(r), r.IsError, want)
		}
	}
}

// TestRead_NonRegularFileIsRefused: reading a FIFO (or device) in the
// workspace fails promptly instead of blocking the call forever.
func TestRead_NonRegularFileIsRefused(t *testing.T) {
	reg, dir := boot(t)
	must(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	done := make(chan string, 1)
	go func() {
		r := call(t, reg, "read", toolfs.ReadArgs{Path: "fifo"})
		done <- text(r)
	}()
	select {
	case got := <-done:
		if !strings.Contains(got, "not a regular file") {
			t.Fatalf("read fifo = %q", got)
		}
	case <-time.After(3 * time.Second):
		// Unblock the reader so the test can end.
		if f, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY, 0); err == nil {
			f.Close()
		}
		<-done
		t.Fatal("read of a FIFO blocked")
	}
	for _, tc := range []struct {
		tool string
		args map[string]string
	}{{"read", map[string]string{"path": "."}}, {"write", map[string]string{"path": ".", "content": "x"}}, {"edit", map[string]string{"path": ".", "old_string": "a", "new_string": "b"}}} {
		var r = call(t, reg, tc.tool, tc.args)
		if !r.IsError || !strings.Contains(text(r), "is a directory") {
			t.Errorf("%s of a directory = %q (isError %v)", tc.tool, text(r), r.IsError)
		}
	}
}

// TestRead_HugeFileIsNotLoadedWhole: read holds at most about MaxReadBytes
// of a file in memory, whatever the file's size or the offset asked for.
func TestRead_HugeFileIsNotLoadedWhole(t *testing.T) {
	reg, dir := boot(t)
	f, err := os.Create(filepath.Join(dir, "huge"))
	must(t, err)
	must(t, f.Truncate(256<<20)) // sparse: 256 MiB of NUL bytes, no newline
	must(t, f.Close())
	for _, a := range []toolfs.ReadArgs{{Path: "huge"}, {Path: "huge", Offset: 2, Limit: 1}} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		r := call(t, reg, "read", a)
		runtime.ReadMemStats(&after)
		if r.IsError {
			t.Fatalf("read %+v: %s", a, text(r))
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("read %+v allocated %d MiB", a, grew>>20)
		}
	}
}

func bootWith(t *testing.T, cfg toolfs.Config) *tools.Registry {
	t.Helper()
	return toolstest.Boot(t, []toolstest.Plugin{{P: toolfs.Plugin, Config: cfg}})
}
