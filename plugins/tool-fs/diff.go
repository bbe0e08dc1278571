package toolfs

import "strings"

// ContextLines is how many unchanged lines surround a hunk.
const ContextLines = 3

// Hunk is one changed region of a file with its surrounding context: the
// old and new text of lines [Start, Start+len(old)) (1-based Start in the
// old file).
type Hunk struct {
	Start   int
	OldText string
	NewText string
}

// hunk computes the single region in which before and after differ (the
// common leading and trailing lines are trimmed) and widens it by
// [ContextLines] lines on each side. ok is false when they are equal.
func hunk(before, after string) (h Hunk, ok bool) {
	if before == after {
		return Hunk{}, false
	}
	a, b := splitLines(before), splitLines(after)
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	lo := max(0, pre-ContextLines)
	aHi := min(len(a), len(a)-suf+ContextLines)
	bHi := min(len(b), len(b)-suf+ContextLines)
	return Hunk{
		Start:   lo + 1,
		OldText: strings.Join(a[lo:aHi], ""),
		NewText: strings.Join(b[lo:bHi], ""),
	}, true
}

// splitLines splits s into lines that keep their "\n".
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	ls := strings.SplitAfter(s, "\n")
	if ls[len(ls)-1] == "" {
		ls = ls[:len(ls)-1]
	}
	return ls
}
