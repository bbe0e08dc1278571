package jsengine

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dop251/goja/ast"
	"github.com/dop251/goja/parser"
)

// TestScanSourceCountsNesting: brackets and unfinished expressions count, separators reset, and what
// hides inside strings, templates, comments and regular expressions does not count.
func TestScanSourceCountsNesting(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		depth int
	}{
		{"empty", "", 0},
		{"one token", "x", 1},
		{"statements reset", "a; b; c", 1},
		{"list items reset", "f(a, b, c)", 3},
		{"parentheses", "((((1))))", 5},
		{"operator chain", "1+1+1", 5},
		{"unary chain", "!!!1", 4},
		{"line breaks between statements reset", "a\nb\nc\nd", 1},
		{"line breaks inside an expression do not", "a\n+b\n+c", 5},
		{"statement keywords reset", "x = 1 + 2 if (a) return b", 5},
		{"keywords as property names do not", "a.if.if.if", 7},
		{"brackets in strings", `x = "((((" + '[[[['`, 5},
		{"brackets in comments", "x /* (((( */ // [[[[\n", 1},
		{"brackets in a regexp", "x = /[(]((/.test(s)", 7},
		{"template holes nest", "`a${ `b${ c }` }`", 5},
		{"division", "a / b / c", 5},
		{"regexp after a control paren", "if (a) /(((/.test(s)", 7},
		{"U+2028 ends a line comment", "// x\u2028((((1))))", 5},
		{"Unicode whitespace separates", "typeof\u00a0typeof\u3000x", 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := ScanSource(tc.src, maxSourceDepth)
			if err != nil {
				t.Fatalf("ScanSource(%q): %v", tc.src, err)
			}
			if res.Depth != tc.depth {
				t.Fatalf("ScanSource(%q).Depth = %d, want %d", tc.src, res.Depth, tc.depth)
			}
		})
	}
}

// TestScanSourceRefuses: over the bounds is a limit; where a '/' is ambiguous, or an HTML-like
// comment appears, the scan refuses rather than guess (and possibly under-count).
func TestScanSourceRefuses(t *testing.T) {
	cases := []struct {
		name  string
		src   string
		limit bool
		line  int
		col   int
	}{
		{"too deep", strings.Repeat("(", 2000), true, 1, maxSourceDepth + 1},
		{"too long a chain", strings.Repeat("1+", 600), true, 1, maxSourceDepth + 1},
		{"too long", strings.Repeat(" ", MaxSourceBytes+1), true, 0, 0},
		{"slash after a brace", "function f() {}\n/(((/.test(s)", false, 2, 1},
		{"slash after a non-null assertion", "x! / 2", false, 1, 4},
		{"slash after yield", "yield /x/", false, 1, 7},
		{"HTML open comment", "x <!-- y", false, 1, 3},
		{"HTML close comment", "x\n--> y", false, 2, 1},
		{"column in characters", "'ééé'; " + strings.Repeat("(", 2000), true, 1, 8 + maxSourceDepth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ScanSource(tc.src, maxSourceDepth)
			if err == nil {
				t.Fatalf("ScanSource(%.40q) accepted it", tc.src)
			}
			if err.Limit != tc.limit || err.Pos.Line != tc.line || err.Pos.Col != tc.col {
				t.Fatalf("ScanSource(%.40q) = %v (limit %v, %d:%d); want limit %v at %d:%d", tc.src, err, err.Limit, err.Pos.Line, err.Pos.Col, tc.limit, tc.line, tc.col)
			}
		})
	}
}

// TestScanSourceFindsBigIntAndUnicodeProperties: BigInt literals and Unicode property escapes in
// u-flagged regular expression literals are found (and not inside strings, nor without the flag).
func TestScanSourceFindsBigIntAndUnicodeProperties(t *testing.T) {
	cases := []struct {
		src             string
		bigint, uniprop bool
	}{
		{"1n", true, false},
		{"0xFFn + 1", true, false},
		{"'1n'", false, false},
		{"1 + n", false, false},
		{`/\p{L}/u`, false, true},
		{`/\p{L}/v`, false, true},
		{`/\p{L}/`, false, false},
		{`/\\p{L}/u`, false, false},
		{`"\p{L}"`, false, false},
	}
	for _, tc := range cases {
		res, err := ScanSource(tc.src, maxSourceDepth)
		if err != nil {
			t.Fatalf("ScanSource(%q): %v", tc.src, err)
		}
		if (res.BigInt != nil) != tc.bigint || (res.UnicodeProperty != nil) != tc.uniprop {
			t.Errorf("ScanSource(%q): bigint %v, unicode property %v; want %v, %v", tc.src, res.BigInt != nil, res.UnicodeProperty != nil, tc.bigint, tc.uniprop)
		}
	}
}

// bracketModel is the simple model of nesting for texts made only of brackets, word characters,
// spaces, ';' and ',': brackets open plus tokens since the last separator at each level.
func bracketModel(src string, limit int) (depth int, ok bool) {
	type frame struct {
		kind byte
		seg  int
	}
	var stack []frame
	base, seg := 0, 0
	tok := func() bool {
		seg++
		if base+seg > depth {
			depth = base + seg
		}
		return depth <= limit
	}
	inWord := false
	for i := 0; i < len(src); i++ {
		c := src[i]
		isWord := c >= 'a' && c <= 'z'
		if isWord {
			if !inWord && !tok() {
				return depth, false
			}
			inWord = true
			continue
		}
		inWord = false
		switch c {
		case ' ':
		case ';', ',':
			seg = 0
		case '(', '[', '{':
			stack = append(stack, frame{c, seg})
			base += seg + 1
			seg = 0
			depth = max(depth, base)
			if depth > limit {
				return depth, false
			}
		case ')', ']', '}':
			want := map[byte]byte{')': '(', ']': '[', '}': '{'}[c]
			if n := len(stack); n > 0 && stack[n-1].kind == want {
				base -= stack[n-1].seg + 1
				seg = stack[n-1].seg + 1
				stack = stack[:n-1]
			} else if !tok() {
				return depth, false
			}
		}
	}
	return depth, true
}

// FuzzScanSourceMatchesBracketModel: on texts of brackets, lower-case words, spaces and separators,
// the scan agrees with the simple model (depth, and whether it is within the bound).
func FuzzScanSourceMatchesBracketModel(f *testing.F) {
	for _, s := range []string{"", "((a))", "[a, (b; c)]", "{a b} (c)", "((((((((((((((((((((((((((((((((", "a b c d e f g h i j k l m n o p q r s t u v w x y z a b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		var b strings.Builder
		for i := 0; i < len(raw); i++ {
			b.WriteByte("([{}]) ;,abc"[int(raw[i])%12])
		}
		src := b.String()
		const max = 20
		want, wantOK := bracketModel(src, max)
		got, err := ScanSource(src, max)
		if (err == nil) != wantOK {
			t.Fatalf("ScanSource(%q): err %v; model ok %v (depth %d)", src, err, wantOK, want)
		}
		if err == nil && got.Depth != want {
			t.Fatalf("ScanSource(%q).Depth = %d, model %d", src, got.Depth, want)
		}
	})
}

// astDepth is the deepest chain of nested AST nodes under n.
func astDepth(n any) int {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value) int
	nodeType := reflect.TypeFor[ast.Node]()
	walk = func(v reflect.Value) int {
		switch v.Kind() {
		case reflect.Interface:
			if v.IsNil() {
				return 0
			}
			return walk(v.Elem())
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return 0
			}
			seen[v.Pointer()] = true
			d := walk(v.Elem())
			if v.Type().Implements(nodeType) {
				d++
			}
			return d
		case reflect.Struct:
			best := 0
			for i := 0; i < v.NumField(); i++ {
				if !v.Type().Field(i).IsExported() {
					continue
				}
				best = max(best, walk(v.Field(i)))
			}
			return best
		case reflect.Slice, reflect.Array:
			best := 0
			for i := 0; i < v.Len(); i++ {
				best = max(best, walk(v.Index(i)))
			}
			return best
		}
		return 0
	}
	return walk(reflect.ValueOf(n))
}

// FuzzScanSourceBoundsTheParser: whatever the text, when the scan accepts it and goja parses it,
// the syntax tree is no deeper than a small multiple of the scan's depth: the scan cannot be fooled
// (by strings, templates, comments, regular expressions or line terminators) into under-counting.
func FuzzScanSourceBoundsTheParser(f *testing.F) {
	for _, s := range []string{
		"return !!!!!1", "x = '(' + ((1))", "if (a) /(/.test(s)", "`${`${(1)}`}`", "a\n+b\n+c",
		"f(a)(b)(c)[d].e?.f", "x => y => z => (w)", "a ? b : c ? d : e", "/* ( */ ((1))", "// (\n((1))",
		"var s = \"\\\n((\"", "a = b\n/(/g.exec(c)", "a.return + b.if", "class C { #x = 1; m() { return this.#x } }",
		"for (const x of [1]) { x }", "x = {a: [1, {b: (2)}]}", "a\u2028((1))", "'\u2028(('", "x\u00a0+\u00a0y",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		const max = 30
		res, err := ScanSource(src, max)
		if err != nil {
			return
		}
		prg, perr := parser.ParseFile(nil, "", "(function(){"+src+"\n})", 0)
		if perr != nil {
			return
		}
		if d := astDepth(prg); d > 6*res.Depth+12 {
			t.Fatalf("ScanSource(%q).Depth = %d, but the syntax tree is %d deep", src, res.Depth, d)
		}
	})
}
