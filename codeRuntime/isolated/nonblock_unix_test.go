//go:build unix

package isolated

import "golang.org/x/sys/unix"

// workerFdsNonblocking reports whether the worker's pipes (fds 3 and 4) are in non-blocking mode.
func workerFdsNonblocking() bool {
	for _, fd := range []uintptr{3, 4} {
		fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || fl&unix.O_NONBLOCK == 0 {
			return false
		}
	}
	return true
}
