package npmpeer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDirIsTestdataNpmAtTheModuleRoot(t *testing.T) {
	d, err := Dir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(d, "package-lock.json")); err != nil {
		t.Fatalf("Dir() = %s, which has no committed lockfile: %v", d, err)
	}
}

func TestPathOfAMissingProgramSaysHowToInstall(t *testing.T) {
	_, err := Path("no-such-program-dsh")
	if err == nil || !strings.Contains(err.Error(), "npm ci") {
		t.Fatalf("Path of a missing program: err = %v, want one naming npm ci", err)
	}
}

func TestMain(m *testing.M) { Exit(m.Run()) }

// The tests skipped for want of npm peers are named, with the missing
// programs and how to install them, in one line.
func TestSkippedTestsAreNamedInOneLine(t *testing.T) {
	t.Setenv(RequireEnv, "")
	defer func() {
		// These skips are this test's own: TestMain's summary is not
		// about them.
		skipped.mu.Lock()
		skipped.tests, skipped.programs = nil, nil
		skipped.mu.Unlock()
	}()
	if s := Summary(); s != "" {
		t.Fatalf("Summary() = %q before any skip", s)
	}
	t.Run("b", func(t *testing.T) {
		t.Run("sub", func(t *testing.T) { Bin(t, "no-such-program-b") })
		Bin(t, "no-such-program-a")
	})
	t.Run("a", func(t *testing.T) { Bin(t, "no-such-program-a") })
	s := Summary()
	if strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("Summary() = %q, want one line", s)
	}
	for _, want := range []string{
		"npmpeer: SKIPPED 3 tests",
		"(no-such-program-a, no-such-program-b; install: ",
		"npm ci)): TestSkippedTestsAreNamedInOneLine/a, TestSkippedTestsAreNamedInOneLine/b, TestSkippedTestsAreNamedInOneLine/b/sub\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("Summary() = %q, lacks %q", s, want)
		}
	}
}
