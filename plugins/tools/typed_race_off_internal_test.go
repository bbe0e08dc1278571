//go:build !race

package tools

// raceOn: the race detector changes allocation counts (sync.Pool drops
// some of what it is given, at random).
const raceOn = false
