package textcut_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/textcut"
)

func TestCuts(t *testing.T) {
	for _, tc := range []struct {
		got, want string
	}{
		{textcut.Prefix("héllo", 2), "h"}, // never half of é
		{textcut.Prefix("héllo", 3), "hé"},
		{textcut.Prefix("abc", 0), ""},
		{textcut.Prefix("abc", 5), "abc"},
		{textcut.Truncate("abc", 3), "abc"},
		{textcut.Truncate("abcd", 3), "abc…"},
		{textcut.Truncate("a😀b", 3), "a…"},
		{textcut.Fit("abcdef", 5, "~~"), "abc~~"},
		{textcut.Fit("abcdef", 1, "~~"), "~"},
		{textcut.Fit("abc", 5, "~~"), "abc"},
		{textcut.Valid("a\xffb", 10), "a\uFFFDb"},
		{textcut.Valid("a\xffbcdef", 4), "a\uFFFD…"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// FuzzCuts: every cut of valid UTF-8 is valid UTF-8 within its budget and
// a prefix of the input; Valid makes anything valid.
func FuzzCuts(f *testing.F) {
	f.Add("héllo wörld 😀", 5)
	f.Add("\xff\xfe", 1)
	f.Fuzz(func(t *testing.T, s string, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		p := textcut.Prefix(s, n)
		if len(p) > n || !strings.HasPrefix(s, p) {
			t.Fatalf("Prefix(%q, %d) = %q", s, n, p)
		}
		if utf8.ValidString(s) {
			if !utf8.ValidString(p) || !utf8.ValidString(textcut.Truncate(s, n)) {
				t.Fatalf("cut of valid %q at %d is invalid", s, n)
			}
			if f := textcut.Fit(s, n, "…"); len(f) > n || !utf8.ValidString(f) {
				t.Fatalf("Fit(%q, %d) = %q", s, n, f)
			}
		}
		if v := textcut.Valid(s, n); !utf8.ValidString(v) || len(v) > n+len(textcut.Mark) {
			t.Fatalf("Valid(%q, %d) = %q", s, n, v)
		}
	})
}
