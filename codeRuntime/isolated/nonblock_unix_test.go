//go:build unix

package isolated

import (
	"os"

	"golang.org/x/sys/unix"
)

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

// fileNonblocking reports whether f's descriptor is in non-blocking mode, without changing it (as
// f.Fd would).
func fileNonblocking(f *os.File) (bool, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return false, err
	}
	var fl int
	var ferr error
	if err := rc.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		return false, err
	}
	return fl&unix.O_NONBLOCK != 0, ferr
}
