//go:build race

package main

// raceEnabled: the race detector multiplies memory (shadow memory), so
// RSS bounds scale with it.
const raceEnabled = true
