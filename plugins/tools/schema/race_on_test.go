//go:build race

package schema

// raceEnabled: the race detector drops sync.Pool items at random, so
// allocation counts vary.
const raceEnabled = true
