package main

import (
	"strings"
	"testing"
)

// TestRun pins the tour's whole narrative: load order, pending then active,
// scope filtering, disposal and the final statistics.
func TestRun(t *testing.T) {
	var b strings.Builder
	if err := run(&b); err != nil {
		t.Fatal(err)
	}
	want := `
loading greeter (injects clock) before clock:
  fiber greeter  new -> pending
greeter is pending
loading clock:
  fiber clock    new -> loading
  fiber greeter  pending -> loading
  fiber greeter  loading -> active
  fiber clock    loading -> active
greeter is active
emitting globally:
global listener: [12:00] hello, world
emitting for agent-1:
global listener: [12:00] hello, agent
agent-1 listener: [12:00] hello, agent
disposing the agent scope:
global listener: [12:00] hello, again
disposing greeter:
  fiber greeter  active -> unloading
  fiber greeter  unloading -> disposed
greeter service after dispose: host: service "greeter", read by root: service not provided
final stats: fibers=2 services=[clock]
  listeners hello/said: 1
`
	if got, want := b.String(), strings.TrimPrefix(want, "\n"); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
}
