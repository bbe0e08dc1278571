package mcpclient

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
)

// stopGrace is how long a stdio server gets to exit after its stdin is
// closed, and again after SIGTERM, before its process group is killed.
var stopGrace = time.Second

// proc is a stdio server's child process, the leader of its own process
// group. Its wait goroutine reaps it (no zombie) and then kills whatever
// is left of the group; exited is closed after that.
type proc struct {
	cmd    *exec.Cmd
	pid    int
	exited chan struct{}
	files  []*os.File // our pipe ends, closed once the process is gone
	stderr *lineLogger

	mu      sync.Mutex
	reaped  bool
	waitErr error // the exit status, once reaped
}

// exitReport describes how the process ended, with the tail of its
// stderr: "exit status 1; stderr: ...". Call it after exited is closed.
func (p *proc) exitReport() string {
	p.mu.Lock()
	werr := p.waitErr
	p.mu.Unlock()
	status := "exit status 0"
	if werr != nil {
		status = werr.Error()
	}
	if tail := p.stderr.tail(); tail != "" {
		return status + "; stderr: " + tail
	}
	return status + "; no stderr output"
}

// startProcess starts cfg.Command with stdin and stdout on fresh pipes and
// returns the transport over them. Stdout is read through a frame limit of
// cfg.MaxMessageBytes; stderr goes to log, line by line, bounded.
func startProcess(cfg Config, log *zerolog.Logger) (*proc, mcp.Transport, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = cfg.Cwd
	cmd.Env = environ(cfg.Env)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Our own pipes (not StdoutPipe): Wait must not close the read end
	// under the reader, which would lose the last messages of a server
	// that answers and exits.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	stderr := &lineLogger{log: log}
	cmd.Stderr = stderr
	cmd.WaitDelay = stopGrace
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, inW, outR, outW} {
			f.Close()
		}
		return nil, nil, fmt.Errorf("starting %q: %w", cfg.Command, err)
	}
	// The child has its copies; ours would keep the pipes open.
	inR.Close()
	outW.Close()
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, exited: make(chan struct{}), files: []*os.File{outR, inW}, stderr: stderr}
	go p.wait(log)
	return p, &mcp.IOTransport{Reader: outR, Writer: inW, MaxLineLength: cfg.MaxMessageBytes}, nil
}

func (p *proc) wait(log *zerolog.Logger) {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.reaped = true
	p.waitErr = err
	// Whatever the server started dies with it.
	_ = syscall.Kill(-p.pid, syscall.SIGKILL)
	p.mu.Unlock()
	if err != nil {
		log.Debug().Int("pid", p.pid).Str("exit", err.Error()).Msg("MCP server process exited")
	}
	close(p.exited)
}

// signal sends sig to the process group unless the leader was reaped
// (after that the group id may name someone else's processes).
func (p *proc) signal(sig syscall.Signal) {
	p.mu.Lock()
	if !p.reaped {
		if syscall.Kill(-p.pid, sig) != nil {
			_ = p.cmd.Process.Signal(sig) // no group (cannot happen with Setpgid): the process itself
		}
	}
	p.mu.Unlock()
}

// stop ends the process: it waits stopGrace for an exit after stdin was
// closed (the caller closed the transport), then sends SIGTERM to the
// group, then SIGKILL, and returns once the process is reaped.
func (p *proc) stop() {
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-p.exited:
		p.closeFiles()
		return
	case <-t.C:
	}
	p.signal(syscall.SIGTERM)
	t.Reset(stopGrace)
	select {
	case <-p.exited:
		p.closeFiles()
		return
	case <-t.C:
	}
	p.signal(syscall.SIGKILL)
	<-p.exited
	p.closeFiles()
}

// closeFiles closes our pipe ends (the transport may have closed them
// already; a second Close is harmless).
func (p *proc) closeFiles() {
	for _, f := range p.files {
		_ = f.Close()
	}
}

// kill ends the process group at once and waits for the reaping.
func (p *proc) kill() {
	p.signal(syscall.SIGKILL)
	<-p.exited
	p.closeFiles()
}

// environ is this process's environment with extra set (sorted, so the
// child's environment does not depend on map order).
func environ(extra map[string]string) []string {
	env := os.Environ()
	if len(extra) == 0 {
		return env
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := env[:0:0]
	for _, kv := range env {
		keep := true
		for _, k := range keys {
			if len(kv) > len(k) && kv[:len(k)] == k && kv[len(k)] == '=' {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}

// maxStderrLine bounds one logged stderr line of a server; maxStderrTail
// the lines kept for a failure report.
const (
	maxStderrLine = 2048
	maxStderrTail = 8
)

// lineLogger logs a server's stderr line by line at debug level, each line
// cut at maxStderrLine bytes, and keeps the last maxStderrTail lines for
// the report of a server that fails.
type lineLogger struct {
	log     *zerolog.Logger
	buf     []byte
	dropped bool

	mu   sync.Mutex
	last []string
}

// tail returns the last lines written (the unfinished one too), joined by
// " | ", with control characters replaced.
func (w *lineLogger) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	lines := append([]string(nil), w.last...)
	if len(w.buf) > 0 {
		lines = append(lines, string(w.buf))
	}
	for i, l := range lines {
		lines[i] = strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f {
				return ' '
			}
			return r
		}, strings.ToValidUTF8(l, "?"))
	}
	return strings.Join(lines, " | ")
}

func (w *lineLogger) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := indexByte(b, '\n')
		chunk := b
		if i >= 0 {
			chunk = b[:i]
		}
		if room := maxStderrLine - len(w.buf); len(chunk) > room {
			chunk, w.dropped = chunk[:room], true
		}
		w.buf = append(w.buf, chunk...)
		if i < 0 {
			break
		}
		w.flush()
		b = b[i+1:]
	}
	return n, nil
}

func (w *lineLogger) flush() {
	e := w.log.Debug().Str("stderr", string(w.buf))
	if w.dropped {
		e = e.Bool("truncated", true)
	}
	e.Msg("MCP server stderr")
	if len(w.buf) > 0 {
		if len(w.last) == maxStderrTail {
			w.last = append(w.last[:0], w.last[1:]...)
		}
		w.last = append(w.last, string(w.buf))
	}
	w.buf, w.dropped = w.buf[:0], false
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}
