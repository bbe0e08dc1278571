//go:build race

package mcpclient_test

// raceEnabled reports whether the race detector is on (it allocates).
const raceEnabled = true
