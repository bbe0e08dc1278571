//go:build !unix

package isolated

func workerFdsNonblocking() bool { return false }
