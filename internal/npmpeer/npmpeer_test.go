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
