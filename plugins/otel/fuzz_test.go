package toolotel

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func FuzzClean(f *testing.F) {
	for _, s := range []string{"", "echo", "a\x00b", "\xff\xfe", "é" + strings.Repeat("x", 200), "…[truncated]", "\u0085\u009f"} {
		f.Add(s, 16)
		f.Add(s, 0)
		f.Add(s, 128)
	}
	f.Fuzz(func(t *testing.T, s string, max int) {
		if max < 0 || max > 4096 {
			return
		}
		got := clean(s, max)
		if len(got) > max {
			t.Fatalf("clean(%q, %d) = %q: %d bytes", s, max, got, len(got))
		}
		if !utf8.ValidString(got) {
			t.Fatalf("clean(%q, %d) = %q: not UTF-8", s, max, got)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("clean(%q, %d) = %q: control character %U", s, max, got, r)
			}
		}
		if utf8.ValidString(s) && len(s) <= max && !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) }) && got != s {
			t.Fatalf("clean(%q, %d) = %q: changed a clean string that fits", s, max, got)
		}
		if utf8.ValidString(s) {
			tr := truncate(s, max)
			if len(tr) > max || !utf8.ValidString(tr) {
				t.Fatalf("truncate(%q, %d) = %q", s, max, tr)
			}
			if len(s) > max && max >= len(truncatedMark) && (!strings.HasSuffix(tr, truncatedMark) || !strings.HasPrefix(s, strings.TrimSuffix(tr, truncatedMark))) {
				t.Fatalf("truncate(%q, %d) = %q: not a marked prefix", s, max, tr)
			}
		}
	})
}
