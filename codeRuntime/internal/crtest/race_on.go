//go:build race

package crtest

// RaceDetector is true when the tests run under the race detector. QuickJS is
// C translated to Go, so every memory access of the engine is instrumented:
// a case that must fill the VM's memory cap runs one to two orders of
// magnitude slower. Those cases skip under -race; .ci/run runs them in a
// second pass without it.
const RaceDetector = true
