//go:build !race

package codemode

// raceInternal: the race detector changes allocation counts (raceEnabled for the internal tests).
const raceInternal = false
