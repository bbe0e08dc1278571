package toolbash

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/safeerr"
)

// run is one finished command.
type run struct {
	Output    string // combined stdout and stderr, capped
	Truncated bool   // output exceeded the cap
	ExitCode  int    // -1 when killed by a signal
	Signal    string // the signal's name when killed by one
}

// capped is an io.Writer keeping the first max bytes and counting the rest.
type capped struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room := c.max - len(c.buf)
	if room >= len(p) {
		c.buf = append(c.buf, p...)
	} else {
		if room > 0 {
			c.buf = append(c.buf, p[:room]...)
		}
		c.truncated = true
	}
	return len(p), nil
}

// execute runs command with the shell in its own process group. When ctx
// is done, the whole group is killed (SIGKILL), so background children
// die too; waitDelay bounds how long we wait for inherited pipes to close
// afterwards. A command that could not start is an error; a non-zero exit
// is not.
func execute(ctx context.Context, shell, dir string, env []string, command string, maxOutput int, waitDelay time.Duration) (run, error) {
	cmd := exec.CommandContext(ctx, shell, "-c", command)
	cmd.Dir = dir
	if env != nil {
		cmd.Env = env
	}
	cmd.Stdin = nil
	out := &capped{max: maxOutput}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		// Negative pid: the whole process group.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && !safeerr.Is(err, syscall.ESRCH) {
			return err
		}
		return nil
	}
	cmd.WaitDelay = waitDelay
	err := cmd.Run()
	r := run{Output: validText(out.buf, out.truncated), Truncated: out.truncated}
	if cmd.ProcessState == nil {
		return r, err
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.ExitCode = -1
		r.Signal = signalName(ws.Signal())
	} else {
		r.ExitCode = cmd.ProcessState.ExitCode()
	}
	// After a kill, make sure nothing of the group survives (a child that
	// escaped the first signal by forking).
	if ctx.Err() != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	var exitErr *exec.ExitError
	if err != nil && !safeerr.AsAny(err, &exitErr) && !safeerr.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
		return r, err
	}
	return r, nil
}

// validText returns the captured output as valid UTF-8 (the text block
// and meta of a result must be): a character the cap cut in half is
// dropped, and other invalid bytes (binary output) become U+FFFD.
func validText(b []byte, truncated bool) string {
	if truncated {
		// Drop a trailing incomplete sequence (at most 3 bytes).
		for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
			if utf8.RuneStart(b[len(b)-i]) {
				if !utf8.FullRune(b[len(b)-i:]) {
					b = b[:len(b)-i]
				}
				break
			}
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

var signalNames = map[syscall.Signal]string{
	syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT",
	syscall.SIGILL: "SIGILL", syscall.SIGTRAP: "SIGTRAP", syscall.SIGABRT: "SIGABRT",
	syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
	syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2",
	syscall.SIGPIPE: "SIGPIPE", syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	syscall.SIGXCPU: "SIGXCPU", syscall.SIGXFSZ: "SIGXFSZ", syscall.SIGSYS: "SIGSYS",
}

// signalName returns the conventional name of sig ("SIGKILL"), as a
// terminal card's signal field expects, or Go's description of it for a
// signal without one here.
func signalName(sig syscall.Signal) string {
	if n, ok := signalNames[sig]; ok {
		return n
	}
	return sig.String()
}
