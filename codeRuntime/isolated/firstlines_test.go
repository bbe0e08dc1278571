package isolated

import (
	"testing"
	"unicode/utf8"
)

// TestFirstLinesCutsOnACharacterBoundary: the worker's stderr quoted in a crash message is cut at
// a character boundary (it was cut at a byte count, splitting a multi-byte character).
func TestFirstLinesCutsOnACharacterBoundary(t *testing.T) {
	for max := 1; max < 12; max++ {
		if got := firstLines("ééééé\nsecond line", 3, max); !utf8.ValidString(got) || len(got) > max+len("…") {
			t.Fatalf("firstLines(max %d) = %q", max, got)
		}
	}
}
