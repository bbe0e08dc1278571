package jsengine

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	coderuntime "github.com/dsh-go/dsh/codeRuntime"
)

// The bounds every program text (the model's TypeScript, and the JavaScript a program hands to eval
// or a Function constructor) must fit before any parser sees it. Parsers and compilers recurse once
// per level of nesting on the Go stack, where no budget applies: 200,000 `!` or 300,000 `(` overflow
// it (a fatal error that takes the process down), and goja's compiler is quadratic in the length of
// an operator chain. The scan that checks them is linear and needs no parse.
const (
	// MaxSourceBytes bounds the length of a program text, in bytes.
	MaxSourceBytes = 256 << 10
	// maxSourceDepth bounds the nesting of a program text, counted as brackets opened plus the
	// tokens of the unfinished expression at each open level (see ScanSource). Programs people write
	// stay far below it; goja compiles an operator chain this long in milliseconds.
	maxSourceDepth = 1000
)

// SourceScan is what ScanSource learnt about a text it accepted.
type SourceScan struct {
	// Depth is the greatest nesting reached (see ScanSource).
	Depth int
	// BigInt is the position of the first BigInt literal, when there is one.
	BigInt *ScanPos
	// UnicodeProperty is the position of the first regular expression literal with the u or v
	// flag that contains a Unicode property escape (\p{...} or \P{...}).
	UnicodeProperty *ScanPos
}

// ScanPos is a 1-based line and column (in characters) in a scanned text.
type ScanPos struct{ Line, Col int }

// BoundsError says why and where ScanSource refused a text.
type BoundsError struct {
	Pos ScanPos
	// Limit is true when a size or depth bound was exceeded (kind "limit"); false when the text is
	// ambiguous to the scan (kind "syntax": the program should be written another way).
	Limit bool
	Msg   string
}

func (e *BoundsError) Error() string {
	if e.Pos.Line == 0 {
		return e.Msg
	}
	return fmt.Sprintf("%s (line %d, column %d)", e.Msg, e.Pos.Line, e.Pos.Col)
}

// scanFrame is an open bracket: '(', '[', '{', or '$' for a template literal's ${. Opening one
// adds a level (plus the tokens before it in the unfinished expression); once closed, the bracketed
// group is one token of the enclosing expression.
type scanFrame struct {
	kind    byte
	outer   int  // the enclosing level's expression token count when the bracket opened
	control bool // a '(' after if, while, for or with: a regular expression may follow its ')'
}

// Token classes, for deciding what a '/' starts.
const (
	slashRegexp    = iota // a '/' here starts a regular expression
	slashDivide           // a '/' here is division
	slashAmbiguous        // the scan cannot tell without a parse: refused
)

// scanner is the state of one ScanSource.
type scanner struct {
	src      string
	maxDepth int
	i        int
	line     int // 1-based
	lineAt   int // byte offset where the current line starts

	stack []scanFrame
	base  int // sum over the open frames of (outer + 1)
	seg   int // tokens of the unfinished expression at the current level

	slash    int    // what a '/' starts now
	newline  bool   // a line terminator since the last token
	endsExpr bool   // the last token ends an expression (for automatic semicolon insertion)
	prevWord string // the last token when it was a word, else ""
	prevTok  string // the last token when it was a word or punctuator, else ""
	prevPrev string // the token before it (to recognise for await)
	// prevPostfix: the last punctuator followed an expression on the same line (so a second + or -
	// right after it makes a postfix ++ or --)
	prevPostfix bool

	res SourceScan
}

// ScanSource checks a program text against MaxSourceBytes and maxDepth with one linear pass that
// knows JavaScript's and TypeScript's lexical grammar well enough never to under-count: strings,
// template literals (and their ${} holes), comments, regular expression literals (told from division
// by the token before them, and refused where that token leaves it ambiguous), and Unicode
// whitespace and line terminators.
//
// The depth it bounds is, at every token, the number of brackets open plus, for each open level and
// the current one, the tokens of the expression not yet finished there (a statement or list ends one:
// ';', ',', a statement keyword, or a line break where no expression can continue). A parser's
// recursion depth at that token is at most a small multiple of it, whatever the grammar nests:
// brackets, unary and binary operator chains, member and call chains, arrows, conditionals.
func ScanSource(src string, maxDepth int) (SourceScan, *BoundsError) {
	if len(src) > MaxSourceBytes {
		return SourceScan{}, &BoundsError{Limit: true, Msg: fmt.Sprintf("the program text is %d bytes, over the %d-byte limit", len(src), MaxSourceBytes)}
	}
	s := &scanner{src: src, maxDepth: maxDepth, line: 1, slash: slashRegexp}
	if err := s.run(); err != nil {
		return SourceScan{}, err
	}
	return s.res, nil
}

func (s *scanner) pos(at int) ScanPos {
	return ScanPos{Line: s.line, Col: utf8.RuneCountInString(s.src[s.lineAt:at]) + 1}
}

func (s *scanner) fail(at int, limit bool, format string, args ...any) *BoundsError {
	return &BoundsError{Pos: s.pos(at), Limit: limit, Msg: fmt.Sprintf(format, args...)}
}

// token counts one token at offset at in the current expression.
func (s *scanner) token(at int) *BoundsError {
	s.seg++
	s.newline = false
	if d := s.base + s.seg; d > s.res.Depth {
		s.res.Depth = d
		if d > s.maxDepth {
			return s.fail(at, true, "the program text is nested more than %d levels deep (brackets, plus the operators and operands of one unfinished expression)", s.maxDepth)
		}
	}
	return nil
}

// breakLine records a line terminator that ends at offset next.
func (s *scanner) breakLine(next int) {
	s.line++
	s.lineAt = next
	s.newline = true
}

// lineTerminator reports the length of the line terminator at i, or 0.
func (s *scanner) lineTerminator(i int) int {
	switch c := s.src[i]; {
	case c == '\n':
		return 1
	case c == '\r':
		if i+1 < len(s.src) && s.src[i+1] == '\n' {
			return 2
		}
		return 1
	case c == 0xE2 && i+2 < len(s.src) && s.src[i+1] == 0x80 && (s.src[i+2] == 0xA8 || s.src[i+2] == 0xA9):
		return 3 // U+2028, U+2029
	}
	return 0
}

// Statement keywords: no expression continues across them (unless they follow '.', '?.', '#', 'as'
// or '<', where they are a property name, a private name or a type), so they end the unfinished expression.
var statementKeywords = map[string]bool{
	"break": true, "case": true, "catch": true, "const": true, "continue": true, "debugger": true,
	"default": true, "do": true, "else": true, "finally": true, "for": true, "if": true, "return": true,
	"switch": true, "throw": true, "try": true, "var": true, "while": true, "with": true,
}

// regexpAfterWord are the words after which a '/' starts a regular expression; after the
// contextual ones in ambiguousAfterWord it depends on the context, and is refused.
var (
	regexpAfterWord = map[string]bool{
		"return": true, "typeof": true, "instanceof": true, "in": true, "new": true, "delete": true,
		"void": true, "throw": true, "case": true, "do": true, "else": true, "extends": true,
		// A line break after these ends the statement (a restricted production), so a '/' on the next
		// line starts one.
		"break": true, "continue": true, "debugger": true,
	}
	ambiguousAfterWord = map[string]bool{"of": true, "yield": true, "await": true}
	// continuingWords may continue an expression after a line break.
	continuingWords = map[string]bool{"in": true, "instanceof": true, "as": true, "satisfies": true, "of": true}
)

// IsIdentByte reports whether c can be part of an ASCII identifier.
func IsIdentByte(c byte) bool {
	return c == '_' || c == '$' || c == '\\' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// identRune reports whether the non-ASCII rune r may be part of an identifier. Every other
// non-ASCII rune is taken as a separator, which can only split a word in two (one more token).
func identRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Nd, unicode.Pc, unicode.Nl) ||
		r == 0x200C || r == 0x200D
}

func (s *scanner) run() *BoundsError {
	src := s.src
	if len(src) >= 2 && src[0] == '#' && src[1] == '!' {
		s.skipLineComment()
	}
	for s.i < len(src) {
		c := src[s.i]
		if n := s.lineTerminator(s.i); n > 0 {
			s.i += n
			s.breakLine(s.i)
			continue
		}
		switch {
		case c == ' ' || c == '\t' || c < 0x20 || c == 0x7F:
			s.i++
		case c >= 0x80:
			r, size := utf8.DecodeRuneInString(src[s.i:])
			if identRune(r) {
				if err := s.word(); err != nil {
					return err
				}
				continue
			}
			s.i += size // whitespace (or a character no parser accepts here): a separator
		case c == '/' && s.i+1 < len(src) && src[s.i+1] == '/':
			s.skipLineComment()
		case c == '/' && s.i+1 < len(src) && src[s.i+1] == '*':
			s.skipBlockComment()
		case c == '/':
			switch s.slash {
			case slashAmbiguous:
				return s.fail(s.i, false, "a '/' right after %q is ambiguous (division or a regular expression) to the program's bounds check: put the expression in parentheses", s.prevTok)
			case slashRegexp:
				if err := s.regexp(); err != nil {
					return err
				}
			default:
				if err := s.punct(); err != nil {
					return err
				}
			}
		case c == '\'' || c == '"':
			if err := s.str(c); err != nil {
				return err
			}
		case c == '`':
			if err := s.token(s.i); err != nil {
				return err
			}
			s.i++
			if err := s.template(); err != nil {
				return err
			}
		case c >= '0' && c <= '9' || c == '.' && s.i+1 < len(src) && src[s.i+1] >= '0' && src[s.i+1] <= '9':
			if err := s.number(); err != nil {
				return err
			}
		case IsIdentByte(c):
			if err := s.word(); err != nil {
				return err
			}
		default:
			if err := s.punct(); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *scanner) skipLineComment() {
	for s.i < len(s.src) && s.lineTerminator(s.i) == 0 {
		s.i++
	}
}

func (s *scanner) skipBlockComment() {
	s.i += 2
	for s.i < len(s.src) {
		if s.src[s.i] == '*' && s.i+1 < len(s.src) && s.src[s.i+1] == '/' {
			s.i += 2
			return
		}
		if n := s.lineTerminator(s.i); n > 0 {
			s.i += n
			s.breakLine(s.i)
			continue
		}
		s.i++
	}
}

// asiReset ends the unfinished expression when a token that cannot continue it starts a new line.
func (s *scanner) asiReset(word string) {
	if s.newline && s.endsExpr && !continuingWords[word] {
		s.seg = 0
	}
}

// setPrev records the last token.
func (s *scanner) setPrev(tok string, word bool) {
	s.prevPrev = s.prevTok
	s.prevTok = tok
	if word {
		s.prevWord = tok
	} else {
		s.prevWord = ""
	}
}

func (s *scanner) word() *BoundsError {
	start := s.i
	for s.i < len(s.src) {
		c := s.src[s.i]
		if c < 0x80 {
			if !IsIdentByte(c) {
				break
			}
			if c == '\\' && s.i+1 < len(s.src) {
				s.i++ // an escape; its next byte is ASCII or starts a rune handled below
			}
			s.i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s.src[s.i:])
		if !identRune(r) {
			break
		}
		s.i += size
	}
	w := s.src[start:s.i]
	afterMember := s.prevTok == "." || s.prevTok == "?." || s.prevTok == "as" || s.prevTok == "<" || s.prevTok == "#"
	s.asiReset(w)
	if statementKeywords[w] && !afterMember {
		s.seg = 0
	}
	if err := s.token(start); err != nil {
		return err
	}
	switch {
	case afterMember:
		s.slash, s.endsExpr = slashDivide, true
	case regexpAfterWord[w]:
		s.slash, s.endsExpr = slashRegexp, false
	case ambiguousAfterWord[w]:
		s.slash, s.endsExpr = slashAmbiguous, true
	default:
		s.slash, s.endsExpr = slashDivide, true
	}
	s.setPrev(w, true)
	return nil
}

func (s *scanner) number() *BoundsError {
	start := s.i
	s.asiReset("")
	for s.i < len(s.src) && (IsIdentByte(s.src[s.i]) && s.src[s.i] != '\\' || s.src[s.i] == '.') {
		s.i++
	}
	if err := s.token(start); err != nil {
		return err
	}
	if s.src[s.i-1] == 'n' && s.res.BigInt == nil {
		p := s.pos(start)
		s.res.BigInt = &p
	}
	s.slash, s.endsExpr = slashDivide, true
	s.setPrev("", false)
	return nil
}

func (s *scanner) str(q byte) *BoundsError {
	start := s.i
	s.asiReset("")
	if err := s.token(start); err != nil {
		return err
	}
	s.i++
	for s.i < len(s.src) {
		c := s.src[s.i]
		if c == q {
			s.i++
			break
		}
		if c == '\\' && s.i+1 < len(s.src) {
			s.i++
			if n := s.lineTerminator(s.i); n > 0 {
				s.i += n
				s.line++
				s.lineAt = s.i
				continue
			}
			s.i++
			continue
		}
		if c == '\n' || c == '\r' {
			break // unterminated: no parser accepts it; the line break is scanned as one
		}
		s.i++
	}
	s.slash, s.endsExpr = slashDivide, true
	s.setPrev("", false)
	return nil
}

// template scans a template literal's text from just after its opening backquote (or a hole's
// closing brace) to its closing backquote or its next ${, which opens a frame.
func (s *scanner) template() *BoundsError {
	for s.i < len(s.src) {
		c := s.src[s.i]
		switch {
		case c == '`':
			s.i++
			s.slash, s.endsExpr = slashDivide, true
			s.newline = false
			s.setPrev("", false)
			return nil
		case c == '\\' && s.i+1 < len(s.src):
			s.i++
			if n := s.lineTerminator(s.i); n > 0 {
				s.i += n
				s.line++
				s.lineAt = s.i
				continue
			}
			s.i++
		case c == '$' && s.i+1 < len(s.src) && s.src[s.i+1] == '{':
			s.i += 2
			return s.open('$', s.i-1)
		default:
			if n := s.lineTerminator(s.i); n > 0 {
				s.i += n
				s.line++
				s.lineAt = s.i
				continue
			}
			s.i++
		}
	}
	return nil
}

// regexp scans a regular expression literal.
func (s *scanner) regexp() *BoundsError {
	start := s.i
	s.asiReset("")
	if err := s.token(start); err != nil {
		return err
	}
	s.i++
	inClass, property := false, false
loop:
	for s.i < len(s.src) {
		if s.lineTerminator(s.i) > 0 {
			break // unterminated: no parser accepts it
		}
		c := s.src[s.i]
		switch {
		case c == '\\' && s.i+1 < len(s.src):
			if n := s.src[s.i+1]; (n == 'p' || n == 'P') && s.i+2 < len(s.src) && s.src[s.i+2] == '{' {
				property = true
			}
			if s.lineTerminator(s.i+1) > 0 {
				s.i++
				break loop
			}
			s.i += 2
		case c == '[':
			inClass = true
			s.i++
		case c == ']':
			inClass = false
			s.i++
		case c == '/' && !inClass:
			s.i++
			break loop
		default:
			s.i++
		}
	}
	flagsAt := s.i
	for s.i < len(s.src) && IsIdentByte(s.src[s.i]) && s.src[s.i] != '\\' {
		s.i++
	}
	if property && s.res.UnicodeProperty == nil {
		for _, f := range s.src[flagsAt:s.i] {
			if f == 'u' || f == 'v' {
				p := s.pos(start)
				s.res.UnicodeProperty = &p
				break
			}
		}
	}
	s.slash, s.endsExpr = slashDivide, true
	s.setPrev("", false)
	return nil
}

// open pushes a bracket frame.
func (s *scanner) open(kind byte, at int) *BoundsError {
	control := false
	if kind == '(' {
		switch s.prevWord {
		case "if", "while", "for", "with":
			control = true
		case "await":
			control = s.prevPrev == "for"
		}
	}
	s.stack = append(s.stack, scanFrame{kind: kind, outer: s.seg, control: control})
	s.base += s.seg + 1
	s.seg = 0
	s.newline = false
	if s.base > s.res.Depth {
		s.res.Depth = s.base
		if s.base > s.maxDepth {
			return s.fail(at, true, "the program text is nested more than %d levels deep (brackets, plus the operators and operands of one unfinished expression)", s.maxDepth)
		}
	}
	s.slash, s.endsExpr = slashRegexp, false
	s.setPrev(string(kind), false)
	return nil
}

// closeFrame pops the top frame when closer matches it; a closer that does not match is an ordinary
// token (no parser accepts it, and counting it keeps the scan from ever under-counting).
func (s *scanner) closeFrame(closer byte) (matched bool, kind byte, control bool) {
	if len(s.stack) == 0 {
		return false, 0, false
	}
	top := s.stack[len(s.stack)-1]
	var want byte
	switch closer {
	case ')':
		want = '('
	case ']':
		want = '['
	default:
		want = '{'
	}
	if top.kind != want && !(closer == '}' && top.kind == '$') {
		return false, 0, false
	}
	s.stack = s.stack[:len(s.stack)-1]
	s.base -= top.outer + 1
	s.seg = top.outer
	return true, top.kind, top.control
}

// punct scans one punctuator character (a multi-character punctuator counts as several tokens,
// which only over-counts).
func (s *scanner) punct() *BoundsError {
	at := s.i
	c := s.src[at]
	s.i++
	switch c {
	case ';', ',':
		s.seg = 0
		s.newline = false
		s.slash, s.endsExpr = slashRegexp, false
		s.setPrev(string(c), false)
		return nil
	case '(', '[', '{':
		return s.open(c, at)
	case ')', ']', '}':
		matched, kind, control := s.closeFrame(c)
		if matched && kind == '$' {
			return s.template()
		}
		if matched {
			s.seg++ // the bracketed group is one token of the enclosing expression
			s.newline = false
		} else if err := s.token(at); err != nil {
			return err
		}
		switch {
		case c == ')' && control:
			s.slash, s.endsExpr = slashRegexp, false
		case c == '}':
			s.slash, s.endsExpr = slashAmbiguous, true
		default:
			s.slash, s.endsExpr = slashDivide, true
		}
		s.setPrev(string(c), false)
		return nil
	case '<':
		if s.i+2 < len(s.src) && s.src[s.i:s.i+3] == "!--" {
			return s.fail(at, false, "an HTML-like comment (<!--) is not accepted")
		}
	case '-':
		if s.i+1 < len(s.src) && s.src[s.i:s.i+2] == "->" && (s.newline || s.res.Depth == 0) {
			return s.fail(at, false, "an HTML-like comment (-->) is not accepted")
		}
	}
	wasEnd, hadNewline := s.endsExpr, s.newline
	if err := s.token(at); err != nil {
		return err
	}
	tok := string(c)
	if c == '.' && s.prevTok == "?" && at > 0 && s.src[at-1] == '?' {
		tok = "?."
	}
	switch {
	case c == '.' && !(at+1 < len(s.src) && s.src[at+1] == '.') && !(at > 0 && s.src[at-1] == '.'):
		s.slash, s.endsExpr = slashRegexp, false // a property name follows
	case (c == '+' || c == '-') && at > 0 && s.src[at-1] == c && s.prevTok == string(c) && s.prevPostfix:
		s.slash, s.endsExpr = slashDivide, true // a postfix ++ or --
	case c == '!' && wasEnd && !hadNewline:
		s.slash, s.endsExpr = slashAmbiguous, false // TypeScript's non-null assertion, or a syntax error
	case c == '>' && !(at > 0 && (s.src[at-1] == '=' || s.src[at-1] == '>')) && !(at+1 < len(s.src) && (s.src[at+1] == '=' || s.src[at+1] == '>')):
		s.slash, s.endsExpr = slashAmbiguous, false // a comparison, or the end of type arguments
	default:
		s.slash, s.endsExpr = slashRegexp, false
	}
	s.prevPostfix = wasEnd && !hadNewline
	s.setPrev(tok, false)
	return nil
}

// CheckProgramBounds scans a program text against the bounds before any parser sees it: nil when it
// fits, else a limit Failure (cause ErrSourceBounds) or, when the scan found it ambiguous, a syntax
// Failure, positioned in src.
func CheckProgramBounds(src string) (SourceScan, *coderuntime.Failure) {
	res, err := ScanSource(src, maxSourceDepth)
	if err != nil {
		return res, err.Failure()
	}
	return res, nil
}

// Failure is e as the Failure of a run.
func (e *BoundsError) Failure() *coderuntime.Failure {
	f := &coderuntime.Failure{Kind: coderuntime.KindSyntax, Message: e.Msg, Line: e.Pos.Line, Column: e.Pos.Col}
	if e.Limit {
		f.Kind, f.Cause = coderuntime.KindLimit, coderuntime.ErrSourceBounds
	}
	return f
}
