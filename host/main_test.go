package host_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Parallel dispatch and the EventBus bridge start goroutines: none may
// outlive a test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
