package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// testIDs matches a test function carrying behaviour IDs:
	// TestG5_…, TestB1_B2_B3_….
	testIDs = regexp.MustCompile(`(?m)^func Test((?:[A-Z]+[0-9]+_)+)`)
	// documentedID matches an entry of docs/behaviors.md: "- **G5** …".
	documentedID = regexp.MustCompile(`(?m)^- \*\*([A-Z]+[0-9]+)\*\* \S`)
)

// TestBehaviorIDsAreDocumented fails when a test name in the repository
// carries a behaviour ID that docs/behaviors.md does not explain.
func TestBehaviorIDsAreDocumented(t *testing.T) {
	root := "../.."
	doc, err := os.ReadFile(filepath.Join(root, "docs", "behaviors.md"))
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, m := range documentedID.FindAllStringSubmatch(string(doc), -1) {
		documented[m[1]] = true
	}
	used := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == "testdata" || n == "node_modules" || strings.HasPrefix(n, ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testIDs.FindAllStringSubmatch(string(src), -1) {
			for _, id := range strings.Split(strings.TrimSuffix(m[1], "_"), "_") {
				used[id] = append(used[id], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 50 {
		t.Fatalf("found only %d IDs: the scan is broken", len(used))
	}
	var missing []string
	for id, files := range used {
		if !documented[id] {
			missing = append(missing, id+" (in "+files[0]+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("docs/behaviors.md does not explain %s", m)
	}
}
