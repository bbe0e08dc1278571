package jsengine

import (
	"encoding/json"
	"strings"
)

// mapSegment is one decoded source-map segment with absolute fields: genCol is 0-based; line is
// the model's 0-based line and col its 1-based column in UTF-16 units (as ShiftSourceMap leaves
// them); n is the number of fields (1, 4 or 5).
type mapSegment struct {
	genCol, source, line, col, name, n int
}

// withBracketSegments adds to the source map m of code (esbuild's output for src, wrapped) a
// segment at each computed member's "[" and at each "(" of a call whose callee ends with a
// bracket, a parenthesis, a string or a template, where esbuild writes none. Both engines report
// such a failure at that character (a[0] at "[", o['f']() at "("), as V8 does, but with no segment
// there the position fell to the segment before: the object or the closing bracket, one column
// before Node's. A "(" after a name gets no segment: V8 reports such a call at the name, the
// segment before.
//
// A segment is added only where the model's text confirms it: going back from the position of the
// expression after the bracket (the index, the first argument or the closing parenthesis) over
// spaces, line breaks, comments and opening parentheses must reach the bracket. Otherwise the map
// keeps what it had. m is returned unchanged when it cannot be decoded.
func withBracketSegments(src, code string, m []byte) []byte {
	var sm map[string]json.RawMessage
	var mappings string
	if json.Unmarshal(m, &sm) != nil || json.Unmarshal(sm["mappings"], &mappings) != nil {
		return m
	}
	lines, ok := decodeSegments(mappings)
	if !ok {
		return m
	}
	srcLines := strings.Split(src, "\n")
	codeLines := strings.Split(code, "\n")
	added := false
	for l, segs := range lines {
		if l >= len(codeLines) {
			break
		}
		gl := codeLines[l]
		if !strings.ContainsAny(gl, "[(.") {
			continue
		}
		var out []mapSegment // made at the line's first change
		for k, s := range segs {
			p, addBracket := bracketSegment(srcLines, gl, segs, k)
			dot, call, moveDot := optionalChainRead(srcLines, gl, segs, k)
			if !addBracket && !moveDot {
				if out != nil {
					out = append(out, s)
				}
				continue
			}
			if out == nil {
				out = make([]mapSegment, k, len(segs)+4)
				copy(out, segs[:k])
			}
			added = true
			if addBracket {
				out = append(out, p)
			}
			if moveDot {
				out = append(out, dot)
				if call.n != 0 {
					out = append(out, call)
				}
				continue
			}
			out = append(out, s)
		}
		if out != nil {
			lines[l] = out
		}
	}
	if !added {
		return m
	}
	enc, err := json.Marshal(encodeSegments(lines))
	if err != nil {
		return m
	}
	sm["mappings"] = enc
	out, err := json.Marshal(sm)
	if err != nil {
		return m
	}
	return out
}

// bracketSegment returns the segment to add before segs[k] on the generated line gl, if one is due.
func bracketSegment(srcLines []string, gl string, segs []mapSegment, k int) (mapSegment, bool) {
	s := segs[k]
	g := s.genCol
	if s.n < 4 || s.line < 0 || s.line >= len(srcLines) || g < 2 || g > len(gl) {
		return mapSegment{}, false
	}
	if k > 0 && segs[k-1].genCol >= g-1 {
		return mapSegment{}, false // the bracket has a segment already
	}
	want := gl[g-1]
	prev := gl[g-2]
	switch want {
	case '[': // a computed member: after a name, a bracket, a parenthesis, a literal or "?."
		member := IsIdentByte(prev) || strings.IndexByte(")]\"'`", prev) >= 0 || prev == '.' && g >= 3 && gl[g-3] == '?'
		if !member {
			return mapSegment{}, false
		}
	case '(': // a call whose callee does not end with a name
		if strings.IndexByte(")]\"'`", prev) < 0 {
			return mapSegment{}, false
		}
	default:
		return mapSegment{}, false
	}
	line, col, ok := backToBracket(srcLines, s.line, s.col, want)
	if !ok {
		return mapSegment{}, false
	}
	return mapSegment{genCol: g - 1, source: s.source, line: line, col: col, name: s.name, n: 4}, true
}

// optionalChainRead returns, for segs[k] at a property name after a dot in an optional chain
// (a?.b.c: the c), that segment moved to the dot, where V8 reports a failed read of it inside an
// optional chain (outside one it reports the name, which the segment gives). When the name is
// called (a?.b.c()), V8 reports the call at the name, and both engines at its "(": call is a
// segment there at the name (call.n is 0 when there is none to add). ok is false for any other
// segment, or when the model's text does not show the dot just before the name (spaces, line breaks
// and comments between them allowed).
func optionalChainRead(srcLines []string, gl string, segs []mapSegment, k int) (dot, call mapSegment, ok bool) {
	s := segs[k]
	g := s.genCol
	if s.n < 4 || s.line < 0 || s.line >= len(srcLines) || g < 2 || g >= len(gl) || gl[g-1] != '.' || gl[g-2] == '?' ||
		!IsIdentByte(gl[g]) || gl[g] >= '0' && gl[g] <= '9' || !inOptionalChain(gl, g-1) {
		return mapSegment{}, mapSegment{}, false
	}
	line, col, ok := backToBracket(srcLines, s.line, s.col, '.')
	if !ok {
		return mapSegment{}, mapSegment{}, false
	}
	dot = s
	dot.line, dot.col = line, col
	e := g
	for e < len(gl) && IsIdentByte(gl[e]) {
		e++
	}
	if e < len(gl) && gl[e] == '(' && (k+1 == len(segs) || segs[k+1].genCol > e) {
		call = s
		call.genCol, call.n = e, 4
	}
	return dot, call, true
}

// inOptionalChain reports whether the "." at offset j of the generated line gl continues a chain
// with a "?." before it: going back over names, dots and bracketed or parenthesized parts (which
// must hold no string, template or slash: then it answers false) reaches a "?.".
func inOptionalChain(gl string, j int) bool {
	for j > 0 {
		if j >= 2 && gl[j-2:j] == "?." {
			return true
		}
		switch c := gl[j-1]; {
		case IsIdentByte(c) || c == '.':
			j--
		case c == ']' || c == ')':
			depth := 0
			for j > 0 {
				j--
				switch gl[j] {
				case ']', ')':
					depth++
				case '[', '(':
					depth--
				case '"', '\'', '`', '/':
					return false
				}
				if depth == 0 {
					break
				}
			}
			if depth != 0 {
				return false
			}
		default:
			return false
		}
	}
	return false
}

// backToBracket goes back in the model's text from line (0-based) and col (1-based, UTF-16 units)
// over spaces, line breaks, comments and opening parentheses, and returns the position of the
// bracket want it reaches: for "[" (or "."), the first character before them; for "(", the leftmost
// "(" among them. No "(" may stand between a "." and what follows it. ok is false when the text does not have that shape.
func backToBracket(srcLines []string, line, col int, want byte) (int, int, bool) {
	text := srcLines[line]
	i, ok := utf16Offset(text, col)
	if !ok {
		return 0, 0, false
	}
	foundLine, foundAt := -1, -1
	for steps := 0; steps < 64; steps++ {
		for i > 0 && (text[i-1] == ' ' || text[i-1] == '\t' || text[i-1] == '\r') {
			i--
		}
		switch {
		case i == 0:
			if line == 0 {
				return 0, 0, false
			}
			line--
			text = srcLines[line]
			i = endBeforeLineComment(text)
			continue
		case i >= 2 && text[i-2:i] == "*/":
			c := strings.LastIndex(text[:i-2], "/*")
			if c < 0 {
				return 0, 0, false // a comment over several lines: not followed
			}
			i = c
			continue
		case text[i-1] == '(':
			i--
			foundLine, foundAt = line, i
			continue
		}
		if want == '(' {
			if foundAt < 0 {
				return 0, 0, false
			}
			return foundLine, utf16Column(srcLines[foundLine], foundAt), true
		}
		if text[i-1] != want || want == '.' && foundAt >= 0 {
			return 0, 0, false
		}
		return line, utf16Column(text, i-1), true
	}
	return 0, 0, false
}

// endBeforeLineComment returns the offset in text before a line comment that ends it, or len(text).
// A "//" counts only where what precedes it on the line ends with "[" or "(" and spaces: the only
// line this walk crosses into is the bracket's own, with nothing but a comment after the bracket;
// a "//" in a string earlier on the line is not mistaken for one.
func endBeforeLineComment(text string) int {
	for c := strings.LastIndex(text, "//"); c >= 0; c = strings.LastIndex(text[:c], "//") {
		t := strings.TrimRight(text[:c], " \t")
		if t != "" && (t[len(t)-1] == '[' || t[len(t)-1] == '(') {
			return c
		}
	}
	return len(text)
}

// utf16Offset returns the byte offset in text of the 1-based column col counted in UTF-16 units.
func utf16Offset(text string, col int) (int, bool) {
	units := 0
	for i, r := range text {
		if units == col-1 {
			return i, true
		}
		if units > col-1 {
			return 0, false
		}
		units++
		if r >= 0x10000 {
			units++
		}
	}
	if units == col-1 {
		return len(text), true
	}
	return 0, false
}

// utf16Column is the 1-based column, in UTF-16 units, of the byte offset i in text.
func utf16Column(text string, i int) int {
	units := 0
	for _, r := range text[:i] {
		units++
		if r >= 0x10000 {
			units++
		}
	}
	return units + 1
}

// decodeSegments decodes a mappings string into absolute segments per generated line.
func decodeSegments(mappings string) ([][]mapSegment, bool) {
	lines := make([][]mapSegment, 0, strings.Count(mappings, ";")+1)
	all := make([]mapSegment, 0, strings.Count(mappings, ",")+len(lines)) // one backing array
	var source, line, col, name, gen int
	lineStart := 0
	var f [5]int
	for i := 0; i <= len(mappings); {
		if i == len(mappings) || mappings[i] == ';' {
			lines = append(lines, all[lineStart:len(all):len(all)])
			lineStart, gen = len(all), 0
			i++
			if i > len(mappings) {
				break
			}
			continue
		}
		if mappings[i] == ',' {
			i++
			continue
		}
		n := 0 // fields of one segment
		shift, value := 0, 0
		for ; i < len(mappings) && mappings[i] != ',' && mappings[i] != ';'; i++ {
			d := vlqValue(mappings[i])
			if d < 0 {
				return nil, false
			}
			value += (d & 31) << shift
			if d&32 != 0 {
				if shift += 5; shift > 30 {
					return nil, false
				}
				continue
			}
			if n == len(f) {
				return nil, false
			}
			f[n] = value >> 1
			if value&1 != 0 {
				f[n] = -f[n]
			}
			n++
			shift, value = 0, 0
		}
		if shift != 0 || (n != 1 && n != 4 && n != 5) {
			return nil, false
		}
		gen += f[0]
		if len(all) > lineStart && all[len(all)-1].genCol > gen {
			return nil, false // not in order: left as it is
		}
		s := mapSegment{genCol: gen, n: n}
		if n >= 4 {
			source += f[1]
			line += f[2]
			col += f[3]
			if n == 5 {
				name += f[4]
			}
			s.source, s.line, s.col, s.name = source, line, col, name
		}
		all = append(all, s)
	}
	return lines, true
}

// vlqValue is the value of a base64 VLQ digit, or -1.
func vlqValue(c byte) int {
	switch {
	case c >= 'A' && c <= 'Z':
		return int(c - 'A')
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 26
	case c >= '0' && c <= '9':
		return int(c-'0') + 52
	case c == '+':
		return 62
	case c == '/':
		return 63
	}
	return -1
}

// encodeSegments is the mappings string of lines (decodeSegments' inverse).
func encodeSegments(lines [][]mapSegment) string {
	var b strings.Builder
	n := 0
	for _, segs := range lines {
		n += 1 + 8*len(segs)
	}
	b.Grow(n)
	var source, line, col, name int
	for l, segs := range lines {
		if l > 0 {
			b.WriteByte(';')
		}
		gen := 0
		for k, s := range segs {
			if k > 0 {
				b.WriteByte(',')
			}
			writeVLQ(&b, s.genCol-gen)
			gen = s.genCol
			if s.n >= 4 {
				writeVLQ(&b, s.source-source)
				writeVLQ(&b, s.line-line)
				writeVLQ(&b, s.col-col)
				source, line, col = s.source, s.line, s.col
				if s.n == 5 {
					writeVLQ(&b, s.name-name)
					name = s.name
				}
			}
		}
	}
	return b.String()
}

// writeVLQ writes one base64 VLQ field.
func writeVLQ(b *strings.Builder, n int) {
	v := n << 1
	if n < 0 {
		v = (-n << 1) | 1
	}
	for {
		d := v & 31
		v >>= 5
		if v > 0 {
			d |= 32
		}
		b.WriteByte(vlqChars[d])
		if v == 0 {
			return
		}
	}
}
