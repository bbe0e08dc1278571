package jsengine

import (
	"encoding/json"
	"strings"
	"testing"
)

// bracketMaps returns the generated code of src and its source map before and after
// withBracketSegments, decoded; ok is false when src does not transform.
func bracketMaps(t *testing.T, src string) (code string, before, after [][]mapSegment, ok bool) {
	t.Helper()
	res := transformWrapped(src)
	if len(res.Errors) > 0 {
		return "", nil, nil, false
	}
	m, err := ShiftSourceMap(res.Map, -1, 1)
	if err != nil {
		t.Fatalf("ShiftSourceMap: %v", err)
	}
	decode := func(raw []byte) [][]mapSegment {
		var sm struct{ Mappings string }
		if err := json.Unmarshal(raw, &sm); err != nil {
			t.Fatalf("map: %v", err)
		}
		lines, ok := decodeSegments(sm.Mappings)
		if !ok {
			t.Fatalf("mappings do not decode: %q", sm.Mappings)
		}
		if enc := encodeSegments(lines); enc != sm.Mappings {
			t.Fatalf("mappings do not round-trip:\n%q\n%q", sm.Mappings, enc)
		}
		return lines
	}
	return string(res.Code), decode(m), decode(withBracketSegments(src, string(res.Code), m)), true
}

// mappedAt returns the model position (0-based line, 1-based UTF-16 column) a generated position
// (0-based line and column) maps to: the segment at or before it.
func mappedAt(lines [][]mapSegment, line, col int) (int, int) {
	l, c := -1, 0
	for _, s := range lines[line] {
		if s.genCol <= col && s.n >= 4 {
			l, c = s.line, s.col
		}
	}
	return l, c
}

// TestBracketSegments: a computed member's "[" and the "(" of a call whose callee ends with a
// bracket map to themselves in the model's text (they mapped to the object, or the "]"); a "(" after
// a name still maps to the name; a read after a dot inside an optional chain maps to the dot.
func TestBracketSegments(t *testing.T) {
	tests := []struct {
		src, gen  string // gen: a fragment of esbuild's output; the position is its last character
		line, col int    // where it must map (0-based line, 1-based column)
	}{
		{"a[0]", "a[", 0, 2},
		{"x\na [ (0) ]", "a[", 1, 3},
		{"o['f'] /* c */ ((1))", `o["f"](`, 0, 16},
		{"o['f']\n  (1)", `o["f"](`, 1, 3},
		{"o.f(1)", "o.f(", 0, 3},
		{"const s = '😀'; o[`k`]()", "o[`k`](", 0, 23},
		{"[1, 2][0]", "[1, 2][", 0, 7},
		{"a?.[0].x", "a?.[0].x", 0, 7},
		{"a?.b\n  .c", "a?.b.c", 1, 3},
		{"a?.b.c()", "a?.b.c(", 0, 6},
		{"x.y.z", "x.y.z", 0, 5},
		{"(a?.b).c", "(a?.b).c", 0, 8},
	}
	for _, tt := range tests {
		code, _, after, ok := bracketMaps(t, tt.src)
		if !ok {
			t.Fatalf("%q does not transform", tt.src)
		}
		lines := strings.Split(code, "\n")
		found := false
		for l, text := range lines {
			if i := strings.Index(text, tt.gen); i >= 0 {
				found = true
				if gl, gc := mappedAt(after, l, i+len(tt.gen)-1); gl != tt.line || gc != tt.col {
					t.Errorf("%q: %q maps to %d:%d, want %d:%d\n%s", tt.src, tt.gen, gl, gc, tt.line, tt.col, code)
				}
				break
			}
		}
		if !found {
			t.Fatalf("%q: %q not in the output\n%s", tt.src, tt.gen, code)
		}
	}
}

// TestBracketSegmentsLeaveArrayLiterals: an array literal's "[" and a "(" that opens no call get
// no segment: the map is the same.
func TestBracketSegmentsLeaveArrayLiterals(t *testing.T) {
	for _, src := range []string{"const a = [1]\nreturn [a, [2]]", "f((1), [2])", "return (1 + 2) * 3", "const r = /a[b]/.test('(')"} {
		_, before, after, ok := bracketMaps(t, src)
		if !ok {
			t.Fatalf("%q does not transform", src)
		}
		if encodeSegments(before) != encodeSegments(after) {
			t.Errorf("%q: the map changed: %q -> %q", src, encodeSegments(before), encodeSegments(after))
		}
	}
}

// FuzzBracketSegments: whatever the program, withBracketSegments keeps the map in order and every
// segment esbuild wrote at its generated column, except a name in an optional chain moved to its
// dot; what it adds or moves points into the model's text at a "[", a "(" or a "." (or, for an
// optional chain's call, at a name a segment already pointed at).
func FuzzBracketSegments(f *testing.F) {
	for _, s := range []string{"a[0]", "o['f']()", "a?.[0].x", "a?.b.c()", "o[`f`]\n  (1)", "x[ // c\n0]", "o[\"//\"]( // c\n1)", "const s = '😀'; o[k]()", "a?.b(x?.y).c", "[...[1]]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 2000 {
			return
		}
		if _, fail := CheckProgramBounds(src); fail != nil {
			return
		}
		code, before, after, ok := bracketMaps(t, src)
		if !ok {
			return
		}
		if len(before) != len(after) {
			t.Fatalf("%d lines, want %d", len(after), len(before))
		}
		srcLines := strings.Split(src, "\n")
		codeLines := strings.Split(code, "\n")
		for l := range after {
			orig := map[int]mapSegment{}
			pointed := map[[2]int]bool{}
			for _, s := range before[l] {
				orig[s.genCol] = s
				pointed[[2]int{s.line, s.col}] = true
			}
			last := -1
			for _, s := range after[l] {
				if s.genCol <= last {
					t.Fatalf("line %d: segments out of order: %v", l, after[l])
				}
				last = s.genCol
				if o, ok := orig[s.genCol]; ok && o == s {
					delete(orig, s.genCol)
					continue
				}
				delete(orig, s.genCol)
				if s.line < 0 || s.line >= len(srcLines) {
					t.Fatalf("line %d: segment %+v outside the model's text", l, s)
				}
				i, ok := utf16Offset(srcLines[s.line], s.col)
				if !ok || i >= len(srcLines[s.line]) {
					t.Fatalf("line %d: segment %+v outside its line %q", l, s, srcLines[s.line])
				}
				if c := srcLines[s.line][i]; c != '[' && c != '(' && c != '.' && !pointed[[2]int{s.line, s.col}] {
					t.Fatalf("line %d: segment %+v points at %q (%q), generated %q", l, s, c, srcLines[s.line], codeLines[l])
				}
			}
			if len(orig) != 0 {
				t.Fatalf("line %d: segments dropped: %v", l, orig)
			}
		}
	})
}
