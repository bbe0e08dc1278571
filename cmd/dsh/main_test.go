package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/dsh-go/dsh/internal/npmpeer"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if built.dir != "" {
			os.RemoveAll(built.dir)
		}
		npmpeer.Exit(code) // the tests skipped for want of npm peers, in one line
	}))
}

// built is the dsh binary, built once for the tests that run it (building
// it is the costly part of each).
var built struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

// dshBinary returns the path of the dsh binary built from this package.
func dshBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "dsh-test-bin-"); built.err != nil {
			return
		}
		built.bin = filepath.Join(built.dir, "dsh")
		built.out, built.err = exec.Command("go", "build", "-o", built.bin, ".").CombinedOutput()
	})
	if built.err != nil {
		t.Fatalf("go build: %v\n%s", built.err, built.out)
	}
	return built.bin
}
