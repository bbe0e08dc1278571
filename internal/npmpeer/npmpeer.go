// Package npmpeer finds the real npm programs (MCP servers and clients) that
// tests talk to. They are pinned in testdata/npm/package-lock.json at the
// module root and installed there with `npm ci` (.ci/run does it).
//
// A test that needs one calls [Bin]. When the programs are not installed the
// test is skipped with the command that installs them, unless the
// environment variable DSH_REQUIRE_NPM is set (CI sets it): then the test
// fails, so a missing install step can never pass as a skip.
//
// A package whose tests call Bin ends its TestMain with [Exit] (or prints
// [Summary] last): the skipped tests are then named in one line at the end
// of the package's test output, so that they are not only visible one by
// one under -v.
package npmpeer

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// RequireEnv is the environment variable that turns a missing npm peer from
// a skip into a failure.
const RequireEnv = "DSH_REQUIRE_NPM"

// Dir returns the folder holding package.json and node_modules for the npm
// peers (testdata/npm under the module root), found by walking up from the
// working directory to the go.mod of this module.
func Dir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "testdata", "npm"), nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", errors.New("npmpeer: no go.mod above " + wd)
		}
		d = parent
	}
}

// Path returns the absolute path of the installed npm program name (an
// entry of node_modules/.bin), or an error saying how to install it.
func Path(name string) (string, error) {
	dir, err := Dir()
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return "", fmt.Errorf("npmpeer: node is not on PATH: %w", err)
	}
	p := filepath.Join(dir, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("npmpeer: %s is not installed; run (cd %s && npm ci)", name, dir)
	}
	return p, nil
}

// Bin returns the path of the npm program name for a test. When it is not
// installed, the test is skipped, or fails when [RequireEnv] is set.
func Bin(t testing.TB, name string) string {
	t.Helper()
	p, err := Path(name)
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%v (%s is set, so this fails instead of skipping)", err, RequireEnv)
		}
		skipped.add(t.Name(), name)
		t.Skip(err)
	}
	return p
}

// skipped is what Bin skipped in this process: the tests, and the programs
// they needed.
var skipped skips

type skips struct {
	mu       sync.Mutex
	tests    []string
	programs []string
}

func (s *skips) add(test, program string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slices.Contains(s.tests, test) {
		s.tests = append(s.tests, test)
	}
	if !slices.Contains(s.programs, program) {
		s.programs = append(s.programs, program)
	}
}

// Summary returns one line (with its newline) naming every test [Bin]
// skipped in this process and the npm programs they needed, with the
// command that installs them; "" when no test was skipped.
func Summary() string {
	skipped.mu.Lock()
	tests, programs := slices.Sorted(slices.Values(skipped.tests)), slices.Sorted(slices.Values(skipped.programs))
	skipped.mu.Unlock()
	if len(tests) == 0 {
		return ""
	}
	install := "(cd testdata/npm && npm ci)"
	if dir, err := Dir(); err == nil {
		install = fmt.Sprintf("(cd %s && npm ci)", dir)
	}
	if _, err := exec.LookPath("node"); err != nil {
		install = "Node.js (node on PATH), then " + install
	}
	return fmt.Sprintf("npmpeer: SKIPPED %d tests, npm test peers not installed (%s; install: %s): %s\n",
		len(tests), strings.Join(programs, ", "), install, strings.Join(tests, ", "))
}

// PrintSummary writes [Summary] to w (nothing when no test was skipped).
func PrintSummary(w io.Writer) {
	io.WriteString(w, Summary())
}

// Exit prints [Summary] to standard output, as the last line of the test
// output, and exits with code. It is the end of a TestMain:
//
//	func TestMain(m *testing.M) { npmpeer.Exit(m.Run()) }
//
// or, with goleak, goleak.VerifyTestMain(m, goleak.Cleanup(npmpeer.Exit)).
func Exit(code int) {
	PrintSummary(os.Stdout)
	os.Exit(code)
}
