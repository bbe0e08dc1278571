//go:build linux

package isolated

import (
	"syscall"
	"time"
	"unsafe"
)

// rawWaitReadable waits at most d for fd to have data to read (or be hung up), in one raw ppoll
// system call, and reports whether it has. The calling goroutine keeps its thread and P for the
// wait, which the scheduler does not see: d must be short.
//
// It is sound because the pollfd and the timespec are converted to uintptr in the call expression
// of syscall.RawSyscall6 (go:uintptrkeepalive), which keeps them alive and unmoved for the call,
// and the call blocks for d at most. A signal (the scheduler's preemption among others) ends the
// wait early (EINTR), which reports false: the caller then waits on the poller.
func rawWaitReadable(fd uintptr, d time.Duration) bool {
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: pollIn}
	ts := syscall.NsecToTimespec(int64(d))
	n, _, e := syscall.RawSyscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return e == 0 && n == 1
}

// pollIn is POLLIN.
const pollIn = 0x1
