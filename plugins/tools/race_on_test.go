//go:build race

package tools_test

// raceEnabled: the race detector changes allocation counts (sync.Pool
// drops some of what it is given, at random).
const raceEnabled = true
