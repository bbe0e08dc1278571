package isolated

import (
	"testing"
	"time"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
	"github.com/dsh-go/dsh/codeRuntime/internal/crtest"
)

const (
	ample     = crtest.Ample
	runaway   = crtest.Runaway
	hangLimit = crtest.HangLimit
)

var hangingBinding = crtest.HangingBinding

func runBounded(t *testing.T, rt coderuntime.Runtime, p coderuntime.Program, limit time.Duration) (*coderuntime.Result, error) {
	t.Helper()
	return crtest.RunBounded(t, rt, p, limit)
}
