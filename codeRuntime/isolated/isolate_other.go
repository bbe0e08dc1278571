//go:build !linux

package isolated

import (
	"errors"
	"time"
)

// procSampling reports whether the parent can sample a worker's resident memory and CPU time:
// only on Linux (/proc). Elsewhere a worker is bounded by its own Go memory limit and engine
// budgets, and by the parent's wall-clock kill.
const procSampling = false

func procUsage(int) (int64, time.Duration, error) {
	return 0, 0, errors.New("coderuntime: process sampling needs Linux")
}

// waitExited returns at once: without waitid(WNOWAIT), exit is learnt from the reaping Wait.
func waitExited(int) {}

func workerSetup() {}
