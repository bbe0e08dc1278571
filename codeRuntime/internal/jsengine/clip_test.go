package jsengine

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipIsBoundedAndCharacterSafe: a clipped text is at most max bytes with its mark (or the
// mark alone), valid UTF-8 whenever the input is, and the input itself when it fits.
func TestClipIsBoundedAndCharacterSafe(t *testing.T) {
	s := "aé日😀" + strings.Repeat("é", 20)
	for _, mark := range []string{"…", " (cut)", ""} {
		for n := 0; n <= len(s)+1; n++ {
			got := Clip(s, n, mark)
			if n >= len(s) {
				if got != s {
					t.Fatalf("Clip(%d, %q) = %q, want the input", n, mark, got)
				}
				continue
			}
			if !utf8.ValidString(got) || len(got) > max(n, len(mark)) || !strings.HasSuffix(got, mark) || !strings.HasPrefix(s, strings.TrimSuffix(got, mark)) {
				t.Fatalf("Clip(%d, %q) = %q", n, mark, got)
			}
		}
	}
}
