package toolotel

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools"
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

func FuzzContentJSON(f *testing.F) {
	f.Add("hello", "world", 40)
	f.Add(strings.Repeat("ü", 50), "", 16)
	f.Add("\"\\\n", strings.Repeat("x", 300), 64)
	f.Fuzz(func(t *testing.T, a, b string, max int) {
		if max < 0 || max > 2048 || !utf8.ValidString(a) || !utf8.ValidString(b) {
			return
		}
		content := []tools.Content{tools.Text(a), {Type: tools.ContentImage, Data: b, MIMEType: "image/png"}, tools.Text(b)}
		got, ok := contentJSON(content, max)
		full, err := json.Marshal(content)
		if !ok || err != nil {
			t.Fatalf("contentJSON ok %v, Marshal %v", ok, err)
		}
		if want := truncate(string(full), max); got != want {
			t.Fatalf("contentJSON(max %d) = %q, want %q", max, got, want)
		}
	})
}
