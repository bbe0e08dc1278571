package npmpeer

import (
	"os"
	"os/exec"
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

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		// A child of TestSkippedTestsAreNamedInOneLastLine: only its
		// skipping tests run.
		os.Setenv(RequireEnv, "")
	}
	Exit(m.Run())
}

// childEnv makes the test binary a child of
// TestSkippedTestsAreNamedInOneLastLine.
const childEnv = "DSH_NPMPEER_CHILD"

// TestSkipsForTheSummary and its subtest skip for a missing program, but
// only in a child process of TestSkippedTestsAreNamedInOneLastLine.
func TestSkipsForTheSummary(t *testing.T) {
	if os.Getenv(childEnv) == "" {
		t.Skip("run by TestSkippedTestsAreNamedInOneLastLine")
	}
	t.Run("sub", func(t *testing.T) { Bin(t, "no-such-program-b") })
	Bin(t, "no-such-program-a")
}

// The tests skipped for want of npm peers are named, with the missing
// programs and how to install them, in one line: the last of the output.
func TestSkippedTestsAreNamedInOneLastLine(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSkipsForTheSummary$", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	last := lines[len(lines)-1]
	for _, want := range []string{
		"npmpeer: SKIPPED 2 tests",
		"(no-such-program-a, no-such-program-b; install: ",
		"npm ci)): TestSkipsForTheSummary, TestSkipsForTheSummary/sub",
	} {
		if !strings.Contains(last, want) {
			t.Errorf("last line %q lacks %q; output:\n%s", last, want, out)
		}
	}
	if n := strings.Count(string(out), "npmpeer: SKIPPED"); n != 1 {
		t.Errorf("%d summary lines, want 1:\n%s", n, out)
	}
}

// Without a skip, there is no summary.
func TestNoSkipNoSummary(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		t.Skip("in the child")
	}
	if s := Summary(); s != "" {
		t.Errorf("Summary() = %q with no test skipped", s)
	}
}
