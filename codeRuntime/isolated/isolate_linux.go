//go:build linux

package isolated

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// procSampling reports whether the parent can sample a worker's resident memory and CPU time.
const procSampling = true

// userHZ is the unit of utime and stime in /proc/<pid>/stat (USER_HZ, 100 on every Linux ABI).
const userHZ = 100

// procUsage reads a process's resident memory (from /proc/<pid>/statm) and CPU time, user plus
// system (from /proc/<pid>/stat).
func procUsage(pid int) (rss int64, cpu time.Duration, err error) {
	statm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0, 0, err
	}
	if rss, err = parseStatm(statm); err != nil {
		return 0, 0, err
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	cpu, err = parseStat(stat)
	return rss, cpu, err
}

// parseStatm returns the resident size in bytes: the second field, in pages.
func parseStatm(b []byte) (int64, error) {
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, fmt.Errorf("statm: %d fields", len(f))
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil || pages < 0 || pages > 1<<40 {
		return 0, fmt.Errorf("statm: resident %q", f[1])
	}
	return pages * int64(os.Getpagesize()), nil
}

// parseStat returns utime+stime: fields 14 and 15, counted after the command name, which is in
// parentheses and may itself contain spaces and parentheses (so the last ')' ends it).
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("stat: no command name")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); utime is field 14, stime 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("stat: %d fields after the command name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(string(s), 10, 64)
		if err != nil || n < 0 || n > 1<<50 {
			return 0, fmt.Errorf("stat: cpu time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / userHZ), nil
}

// waitExited blocks until process pid has exited, without reaping it, so that its pid (and
// process group) cannot be reused while the caller still signals it.
func waitExited(pid int) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

// workerSetup makes the worker process the kernel's first choice when the machine runs out of
// memory (the host is then spared).
func workerSetup() {
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
}
