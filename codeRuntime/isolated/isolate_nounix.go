//go:build !unix

package isolated

import (
	"os"
	"os/exec"
	"time"
)

// isolationSupported reports whether process isolation works on this platform: worker processes
// need inherited pipes (exec.Cmd.ExtraFiles), which this platform lacks.
const isolationSupported = false

func setProcessGroup(*exec.Cmd) {}

func killGroup(int) {}

func setNonblock(int) {}

// rawFile is the os.File itself here (see the unix rawFile).
type rawFile struct {
	f    *os.File
	fd   uintptr
	wait time.Duration
}

func (r *rawFile) Read(b []byte) (int, error)  { return r.f.Read(b) }
func (r *rawFile) Write(b []byte) (int, error) { return r.f.Write(b) }
