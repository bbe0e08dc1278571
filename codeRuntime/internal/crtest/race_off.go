//go:build !race

package crtest

// RaceDetector: see race_on_test.go.
const RaceDetector = false
