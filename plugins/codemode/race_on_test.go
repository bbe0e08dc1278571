//go:build race

package codemode_test

// raceEnabled: the race detector changes allocation counts.
const raceEnabled = true
