package cardtext

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/tools"
)

// Rendering limits: a card is shown to decide or to follow along, not to
// audit every byte. What is cut says so.
const (
	maxInputBytes  = 2000 // raw input / arguments shown
	maxDiffLines   = 60   // diff lines shown per file
	maxLCSCells    = 1 << 18
	diffContext    = 2
	maxContentText = 1000
)

// Call renders a pending call's card as indented plain text: a generic card
// as its title, kind, locations and salient input; a terminal card as its
// description, working directory and "$ command"; a diff card as a compact
// unified diff per file. Without a card (v is nil, as for a tool that
// presents nothing or arguments that no longer fit), it shows the tool
// name and its raw arguments. Everything that comes from the model or the
// tool is sanitized: control characters (terminal escape sequences could
// rewrite what a person sees) are shown as Go escapes, bidirectional
// overrides too, invalid UTF-8 as U+FFFD.
func Call(name string, args []byte, v tools.CallView) string {
	var b strings.Builder
	switch v := v.(type) {
	case tools.GenericCall:
		renderGeneric(&b, v)
	case *tools.GenericCall:
		if v != nil {
			renderGeneric(&b, *v)
		} else {
			renderRaw(&b, name, args)
		}
	case tools.TerminalCall:
		renderTerminal(&b, v)
	case *tools.TerminalCall:
		if v != nil {
			renderTerminal(&b, *v)
		} else {
			renderRaw(&b, name, args)
		}
	case tools.DiffCall:
		renderDiffCall(&b, v)
	case *tools.DiffCall:
		if v != nil {
			renderDiffCall(&b, *v)
		} else {
			renderRaw(&b, name, args)
		}
	default:
		renderRaw(&b, name, args)
	}
	return b.String()
}

// Result renders a completed call as indented plain text: a failed call as
// its error code and message; a terminal card as its output and an exit
// status line; a diff card as unified diffs; a generic card as its title
// and content. Without a card it shows the result's text content.
func Result(v tools.ResultView, r tools.ResultData, code string) string {
	var b strings.Builder
	if r.IsError {
		if code != "" {
			fmt.Fprintf(&b, "  error %s:\n", line(code))
		} else {
			b.WriteString("  error:\n")
		}
		renderContent(&b, r.Content)
		return b.String()
	}
	switch v := v.(type) {
	case tools.TerminalResult:
		renderTerminalResult(&b, v)
	case tools.DiffResult:
		if v.Title != "" {
			fmt.Fprintf(&b, "  %s\n", line(v.Title))
		}
		for _, d := range v.Diffs {
			renderDiff(&b, d)
		}
	case tools.GenericResult:
		if v.Title != "" {
			fmt.Fprintf(&b, "  %s\n", line(v.Title))
		}
		if v.Content != nil {
			renderContent(&b, v.Content)
		} else {
			renderContent(&b, r.Content)
		}
	default:
		renderContent(&b, r.Content)
	}
	return b.String()
}

func renderTerminalResult(b *strings.Builder, v tools.TerminalResult) {
	if v.Title != "" {
		fmt.Fprintf(b, "  %s\n", line(v.Title))
	}
	if v.Output != "" {
		writeBlock(b, "  | ", v.Output, maxContentText)
	}
	switch {
	case v.Signal != "":
		fmt.Fprintf(b, "  [killed by %s]\n", line(v.Signal))
	case v.ExitCode != nil:
		fmt.Fprintf(b, "  [exit %d]\n", *v.ExitCode)
	}
}

func renderContent(b *strings.Builder, cs []tools.Content) {
	for _, c := range cs {
		if c.Type == tools.ContentText {
			writeBlock(b, "  | ", c.Text, maxContentText)
		} else {
			fmt.Fprintf(b, "  [%s content]\n", line(c.Type))
		}
	}
}

func renderRaw(b *strings.Builder, name string, args []byte) {
	fmt.Fprintf(b, "  %s\n", line(name))
	if len(args) > 0 {
		writeBlock(b, "  input: ", string(compactJSON(args)), maxInputBytes)
	}
}

func renderGeneric(b *strings.Builder, v tools.GenericCall) {
	kind := v.Kind
	if kind == "" {
		kind = "other"
	}
	fmt.Fprintf(b, "  %s [%s]\n", line(v.Title), line(kind))
	renderLocations(b, v.Locations)
	if len(v.RawInput) > 0 {
		writeBlock(b, "  input: ", string(compactJSON(v.RawInput)), maxInputBytes)
	}
	renderContent(b, v.Content)
}

func renderTerminal(b *strings.Builder, v tools.TerminalCall) {
	if v.Description != "" {
		fmt.Fprintf(b, "  # %s\n", line(v.Description))
	}
	if v.Cwd != "" {
		fmt.Fprintf(b, "  (in %s)\n", line(v.Cwd))
	}
	writeBlock(b, "  $ ", v.Title, maxInputBytes)
}

func renderDiffCall(b *strings.Builder, v tools.DiffCall) {
	if v.Title != "" {
		fmt.Fprintf(b, "  %s\n", line(v.Title))
	}
	renderLocations(b, v.Locations)
	for _, d := range v.Diffs {
		renderDiff(b, d)
	}
}

func renderLocations(b *strings.Builder, locs []tools.Location) {
	if len(locs) == 0 {
		return
	}
	parts := make([]string, len(locs))
	for i, l := range locs {
		parts[i] = line(l.Path)
		if l.Line > 0 {
			parts[i] += ":" + strconv.Itoa(l.Line)
		}
	}
	fmt.Fprintf(b, "  locations: %s\n", strings.Join(parts, ", "))
}

// renderDiff writes one file's change as a compact unified diff: a header,
// then hunks of changed lines with diffContext lines of context, at most
// maxDiffLines lines.
func renderDiff(b *strings.Builder, d tools.FileDiff) {
	newLines := splitLines(d.NewText)
	if d.OldText == nil {
		fmt.Fprintf(b, "  new file %s (%d lines)\n", line(d.Path), len(newLines))
		writeDiffLines(b, prefixAll('+', newLines))
		return
	}
	fmt.Fprintf(b, "  --- %s\n  +++ %s\n", line(d.Path), line(d.Path))
	oldLines := splitLines(*d.OldText)
	ops := diffLines(oldLines, newLines)
	writeDiffLines(b, hunks(ops))
}

func writeDiffLines(b *strings.Builder, lines []string) {
	for i, l := range lines {
		if i == maxDiffLines {
			fmt.Fprintf(b, "  ... %d more diff lines\n", len(lines)-i)
			return
		}
		fmt.Fprintf(b, "  %s\n", l)
	}
}

func prefixAll(p byte, lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(p) + block(l)
	}
	return out
}

type diffOp struct {
	kind byte // ' ', '-', '+'
	text string
	a, b int // 1-based line numbers in old / new (of the line, or where it would be)
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	s = strings.TrimSuffix(s, "\n")
	return strings.Split(s, "\n")
}

// diffLines is a longest-common-subsequence line diff. Past maxLCSCells it
// gives up on alignment (everything old removed, everything new added):
// the card stays correct, only less compact.
func diffLines(a, b []string) []diffOp {
	// Trim the common prefix and suffix first: most edits are local.
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', a[i], i + 1, i + 1})
	}
	n, m := len(ma), len(mb)
	if n*m > maxLCSCells {
		for i, l := range ma {
			ops = append(ops, diffOp{'-', l, pre + i + 1, pre + 1})
		}
		for j, l := range mb {
			ops = append(ops, diffOp{'+', l, pre + n + 1, pre + j + 1})
		}
	} else {
		// lcs[i][j] = LCS length of ma[i:] and mb[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if ma[i] == mb[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && ma[i] == mb[j]:
				ops = append(ops, diffOp{' ', ma[i], pre + i + 1, pre + j + 1})
				i, j = i+1, j+1
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, diffOp{'-', ma[i], pre + i + 1, pre + j + 1})
				i++
			default:
				ops = append(ops, diffOp{'+', mb[j], pre + i + 1, pre + j + 1})
				j++
			}
		}
	}
	for k := 0; k < suf; k++ {
		ia, ib := len(a)-suf+k, len(b)-suf+k
		ops = append(ops, diffOp{' ', a[ia], ia + 1, ib + 1})
	}
	return ops
}

// hunks keeps the changed lines and diffContext lines around them, each run
// headed by "@@ -a,n +b,m @@".
func hunks(ops []diffOp) []string {
	keep := make([]bool, len(ops))
	changed := false
	for i, op := range ops {
		if op.kind == ' ' {
			continue
		}
		changed = true
		for k := max(0, i-diffContext); k <= min(len(ops)-1, i+diffContext); k++ {
			keep[k] = true
		}
	}
	if !changed {
		return []string{"(no changes)"}
	}
	var out []string
	for i := 0; i < len(ops); {
		if !keep[i] {
			i++
			continue
		}
		j := i
		for j < len(ops) && keep[j] {
			j++
		}
		var na, nb int
		for _, op := range ops[i:j] {
			if op.kind != '+' {
				na++
			}
			if op.kind != '-' {
				nb++
			}
		}
		out = append(out, fmt.Sprintf("@@ -%d,%d +%d,%d @@", ops[i].a, na, ops[i].b, nb))
		for _, op := range ops[i:j] {
			out = append(out, string(op.kind)+block(op.text))
		}
		i = j
	}
	return out
}

// writeBlock writes possibly multi-line text, the first line after prefix
// and the rest indented under it, cut at limit bytes.
func writeBlock(b *strings.Builder, prefix, text string, limit int) {
	cut := ""
	if len(text) > limit {
		end := limit
		for end > 0 && !utf8.RuneStart(text[end]) {
			end--
		}
		cut = fmt.Sprintf(" … (%d more bytes)", len(text)-end)
		text = text[:end]
	}
	indent := strings.Repeat(" ", utf8.RuneCountInString(prefix))
	for i, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if i == 0 {
			b.WriteString(prefix)
		} else {
			b.WriteString(indent)
		}
		b.WriteString(block(l))
		b.WriteString("\n")
	}
	if cut != "" {
		b.WriteString(indent + cut + "\n")
	}
}

func compactJSON(raw []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// Line sanitizes a single-line field for a terminal: every control
// character, newlines included, is escaped, as are bidirectional overrides.
func Line(s string) string { return line(s) }

// line sanitizes a single-line field: every control character, newlines
// included, is escaped.
func line(s string) string { return sanitize(s, false) }

// block sanitizes one line of a multi-line block: tabs stay.
func block(s string) string { return sanitize(s, true) }

func sanitize(s string, tabs bool) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && !(tabs && r == '\t')) || isBidi(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				b.WriteRune('\uFFFD')
				continue
			}
			b.WriteRune(r)
		case tabs && r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || isBidi(r):
			q := strconv.QuoteRuneToASCII(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// isBidi reports the bidirectional formatting characters that can reorder
// what a terminal shows ("Trojan Source").
func isBidi(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069') || r == '\u200E' || r == '\u200F'
}
