// Package npmpeer finds the real npm programs (MCP servers and clients) that
// tests talk to. They are pinned in testdata/npm/package-lock.json at the
// module root and installed there with `npm ci` (.ci/run does it).
//
// A test that needs one calls [Bin]. When the programs are not installed the
// test is skipped with the command that installs them, unless the
// environment variable DSH_REQUIRE_NPM is set (CI sets it): then the test
// fails, so a missing install step can never pass as a skip.
package npmpeer

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
		t.Skip(err)
	}
	return p
}
