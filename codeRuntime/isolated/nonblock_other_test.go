//go:build !unix

package isolated

import "os"

func workerFdsNonblocking() bool { return false }

func fileNonblocking(*os.File) (bool, error) { return false, nil }
