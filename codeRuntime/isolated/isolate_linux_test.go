//go:build linux

package isolated

import (
	"os"
	"testing"
	"time"
)

func TestProcUsageOfThisProcess(t *testing.T) {
	rss, cpu, err := procUsage(os.Getpid())
	if err != nil || rss <= 0 || cpu < 0 {
		t.Fatalf("procUsage = %d, %v, %v", rss, cpu, err)
	}
	// A command name with spaces and parentheses does not shift the fields.
	got, err := parseStat([]byte("42 (a) (b c)) S 1 1 1 0 -1 0 0 0 0 0 150 50 0 0 20 0 1 0"))
	if err != nil || got != 2*time.Second {
		t.Errorf("parseStat = %v, %v, want 2s", got, err)
	}
}

// FuzzProcParsers: /proc text never panics the parsers, and what they accept is non-negative.
func FuzzProcParsers(f *testing.F) {
	f.Add([]byte("42 (x) S 1 1 1 0 -1 0 0 0 0 0 150 50 0 0 20 0 1 0"))
	f.Add([]byte("1000 200 30 1 0 50 0\n"))
	f.Add([]byte("((("))
	f.Fuzz(func(t *testing.T, b []byte) {
		if d, err := parseStat(b); err == nil && d < 0 {
			t.Fatalf("negative CPU time %v", d)
		}
		if n, err := parseStatm(b); err == nil && n < 0 {
			t.Fatalf("negative RSS %d", n)
		}
	})
}
