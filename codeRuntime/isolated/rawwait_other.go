//go:build unix && !linux

package isolated

import "time"

// rawWaitReadable does not wait here: rawFile reads wait on the poller (see the Linux one).
func rawWaitReadable(uintptr, time.Duration) bool { return false }
