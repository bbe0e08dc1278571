//go:build !race

package coderuntime

// raceDetector: see race_on_test.go.
const raceDetector = false
