//go:build linux

package isolated

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestRawWaitReadable: the raw wait reports data already there and a hung-up pipe at once, and
// gives up (false) when nothing comes within its bound.
func TestRawWaitReadable(t *testing.T) {
	r, w := rawPipe(t)
	if rawWaitReadable(r.fd, time.Microsecond) {
		t.Fatal("an empty pipe is readable")
	}
	if _, err := w.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	if !rawWaitReadable(r.fd, time.Hour) {
		t.Fatal("a pipe holding data is not readable")
	}
	r2, w2 := rawPipe(t)
	w2.f.Close()
	if !rawWaitReadable(r2.fd, time.Hour) {
		t.Fatal("a hung-up pipe is not reported")
	}
}

// TestRawFileReadWaitsInRawCall: a rawFile with a wait reads data that arrives while it waits in
// the raw ppoll, not through its os.File (the poller). The rawFile's os.File is another pipe,
// holding "poller": what a read that fell back to it returns. The writer writes once the reading
// thread is in ppoll (its /proc syscall entry), so the data comes during the wait; without the raw
// wait the read never enters ppoll and returns "poller" in every attempt. A signal (the
// scheduler's preemption) may end a wait early, and the read then falls back, as it should: such
// an attempt is repeated.
func TestRawFileReadWaitsInRawCall(t *testing.T) {
	// The writer runs while the reader holds its P in the raw call; no collection may stop the
	// world meanwhile (it would wait for the reader, which waits for the writer).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0))))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for attempt := 0; attempt < 100; attempt++ {
		r, w := rawPipe(t)
		fr, fw := rawPipe(t)
		if _, err := fw.Write([]byte("poller")); err != nil {
			t.Fatal(err)
		}
		rr := &rawFile{f: fr.f, fd: r.fd, wait: time.Minute}
		tids := make(chan int, 1)
		got := make(chan string, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			tids <- syscall.Gettid()
			b := make([]byte, 16)
			n, err := rr.Read(b)
			if err != nil {
				got <- err.Error()
				return
			}
			got <- string(b[:n])
		}()
		path := "/proc/self/task/" + strconv.Itoa(<-tids) + "/syscall"
		var s string
		for s == "" {
			if inSyscall(path, syscall.SYS_PPOLL) {
				if _, err := w.Write([]byte("late")); err != nil {
					t.Fatal(err)
				}
				s = <-got
				break
			}
			select {
			case s = <-got: // returned before the writer saw it in ppoll: no raw wait, or a short one
			default:
				runtime.Gosched()
			}
		}
		if s == "late" {
			return
		}
		t.Logf("attempt %d: the read returned %q", attempt, s)
	}
	t.Fatal("no read took the data that came during its raw wait (100 attempts)")
}

// inSyscall reports whether the thread whose /proc syscall file is path is in system call nr,
// without allocating (a collection must not start; see TestRawFileReadWaitsInRawCall).
func inSyscall(path string, nr uintptr) bool {
	fd, err := syscall.Open(path, syscall.O_RDONLY, 0)
	if err != nil {
		return false
	}
	defer syscall.Close(fd)
	var b [32]byte
	n, _ := syscall.Read(fd, b[:])
	v, i := uintptr(0), 0
	for ; i < n && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + uintptr(b[i]-'0')
	}
	return i > 0 && i < n && b[i] == ' ' && v == nr
}
