//go:build unix

package isolated

import (
	"os/exec"
	"syscall"
)

// isolationSupported reports whether process isolation works on this platform.
const isolationSupported = true

// setProcessGroup makes the worker lead a process group of its own, so that a kill reaches
// anything it started and a terminal's signals to the host's group do not reach it.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by pid. The caller guarantees the process was not reaped.
func killGroup(pid int) {
	_ = syscall.Kill(-pid, syscall.SIGKILL)
}

// setNonblock puts an inherited file descriptor in non-blocking mode (errors leave it blocking,
// which works, only slower).
func setNonblock(fd int) {
	_ = syscall.SetNonblock(fd, true)
}
