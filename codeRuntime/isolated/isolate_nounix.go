//go:build !unix

package isolated

import "os/exec"

// isolationSupported reports whether process isolation works on this platform: worker processes
// need inherited pipes (exec.Cmd.ExtraFiles), which this platform lacks.
const isolationSupported = false

func setProcessGroup(*exec.Cmd) {}

func killGroup(int) {}

func setNonblock(int) {}
