//go:build unix

package isolated

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// rawFile reads and writes a non-blocking descriptor with raw system calls first, falling back to
// the os.File (the runtime's poller) when the call would block or fails.
//
// A raw system call does not enter the scheduler's system-call state: on a pipe whose peer
// answers within microseconds (the worker protocol's round trip) that saves the runtime's
// bookkeeping and, with one P, the P's retake by sysmon, which otherwise wakes every 20 µs while
// the call lasts (a write to a pipe hands the CPU to the woken reader, so it lasts the reader's
// turn). It is sound because the descriptor is non-blocking: a raw read or write returns at once
// (EAGAIN when it would wait), and the raw wait below is bounded; the buffer's address is
// converted in the call expression of syscall.RawSyscall (go:uintptrkeepalive), which keeps it
// alive and unmoved for the call; and the descriptor is not closed while a rawFile uses it (the
// worker's pipes live as long as its process), so its number cannot have been reused for another
// file.
//
// A read of an empty pipe first waits up to wait for data in a raw system call (rawWaitReadable,
// on Linux), keeping its thread and P: the goroutine awaiting a call's answer has nothing else to
// run, and the parent mostly answers within tens of microseconds, where parking the goroutine on
// the poller costs the scheduler's round (findRunnable, epoll_pwait twice, a second read) on every
// call. Only the goroutine awaiting its own answer sets wait (see workerSession.await): a
// background reader must not hold the worker's only P while the program could run.
type rawFile struct {
	f    *os.File
	fd   uintptr
	wait time.Duration // set only by the goroutine holding the reading role
}

// Read reads what is there without waiting, else waits up to wait in a raw system call, else
// waits on the poller.
func (r *rawFile) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, r.fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if e == 0 && n > 0 {
		return int(n), nil
	}
	if e == syscall.EAGAIN && r.wait > 0 && rawWaitReadable(r.fd, r.wait) {
		n, _, e = syscall.RawSyscall(syscall.SYS_READ, r.fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
		if e == 0 && n > 0 {
			return int(n), nil
		}
	}
	// Would block, end of file or an error: the os.File waits, or reports it.
	return r.f.Read(b)
}

// Write writes b, what the pipe takes at once with raw calls, the rest through the os.File.
func (r *rawFile) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, r.fd, uintptr(unsafe.Pointer(&b[done])), uintptr(len(b)-done))
		if e != 0 || n == 0 {
			m, err := r.f.Write(b[done:])
			return done + m, err
		}
		done += int(n)
	}
	return done, nil
}
