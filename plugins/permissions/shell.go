package permissions

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

// maxShellDepth bounds the nesting of command strings judged inside one
// another (`sh -c "eval 'bash -c …'"`); deeper strings are opaque.
const maxShellDepth = 8

// maxShellLen is the longest command line parsed; a longer one is judged
// as unparseable.
const maxShellLen = 256 << 10

// shellCmd is one simple command of a command line, as the rules see it.
type shellCmd struct {
	// canon is the text allow rules match: its words after quote removal,
	// with the wrappers Claude Code strips (timeout, time, nice, nohup,
	// stdbuf, bare xargs, env VAR=…, command) removed, joined by single
	// spaces. Empty when opaque.
	canon string
	// forms are the texts deny and ask rules match: canon, the command as
	// written, the command with its name's directory dropped (/bin/rm is
	// rm), and every command a wrapper could run.
	forms []string
	// opaque: the command's name is not a literal (an expansion, a glob,
	// a brace expansion) or a string it runs could not be read; no allow
	// rule allows it.
	opaque bool
	// rough, for a line that could not be parsed, holds its words: a deny
	// or ask rule whose first word is among them matches.
	rough map[string]bool
}

// shellWrappers are the commands that run their arguments as a command.
// For deny and ask, every run of arguments after one of them is a form of
// the command (so options need not be understood); for allow, only the
// wrappers in stripWrapper are removed, and only when their options are
// understood.
var shellWrappers = map[string]bool{
	"timeout": true, "time": true, "nice": true, "nohup": true, "stdbuf": true,
	"env": true, "command": true, "builtin": true, "exec": true, "xargs": true,
	"sudo": true, "doas": true, "setsid": true, "ionice": true, "flock": true,
	"watch": true, "chrt": true, "taskset": true, "unbuffer": true, "nsenter": true,
	"chroot": true, "runuser": true, "su": true, "strace": true, "ltrace": true,
	"caffeinate": true, "systemd-run": true, "busybox": true, "parallel": true,
	"find": true, "fd": true, "git": false,
}

// shells run a command string given with -c.
var shells = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"ash": true, "fish": true, "csh": true, "tcsh": true, "busybox": true,
}

// parseShell splits a command line into its simple commands. ok is false
// when the line cannot be parsed; cmds then holds one opaque command
// whose forms are every run of words of the line, so deny and ask rules
// err on the side of matching.
func parseShell(src string) (cmds []shellCmd, ok bool) {
	// Room for as many commands as the line has separators (bounded), so
	// the list is not regrown as it is walked.
	j := &shellJudge{cmds: make([]shellCmd, 0, min(1+strings.Count(src, " ")/2, 256))}
	if !j.line(src, 0) {
		return []shellCmd{roughCmd(src)}, false
	}
	return j.cmds, true
}

// lineCache remembers the commands of the last command lines parsed: a
// call is decided twice (tools/pre-execute and the guard), and agents
// repeat commands. The cached commands are never modified.
type lineCache struct {
	mu    sync.Mutex
	m     map[string]*parsedLine
	order []string
}

// parsedLine is a parsed command line: its commands (a clipped slice,
// never modified) and the first words of their forms.
type parsedLine struct {
	cmds   []shellCmd
	firsts map[string]bool
}

func newParsedLine(src string) *parsedLine {
	cmds, _ := parseShell(src)
	cmds = slices.Clip(cmds)
	return &parsedLine{cmds: cmds, firsts: firstWordsOf(cmds)}
}

// Bounds of the cache: how many lines, and the longest line kept.
const (
	lineCacheSize = 64
	lineCacheLen  = 16 << 10
)

func (lc *lineCache) parse(line string) *parsedLine {
	if len(line) > lineCacheLen {
		return newParsedLine(line)
	}
	lc.mu.Lock()
	cmds, ok := lc.m[line]
	lc.mu.Unlock()
	if ok {
		return cmds
	}
	cmds = newParsedLine(line)
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.m == nil {
		lc.m = map[string]*parsedLine{}
	}
	if _, ok := lc.m[line]; !ok {
		if len(lc.order) >= lineCacheSize {
			delete(lc.m, lc.order[0])
			lc.order = lc.order[1:]
		}
		lc.m[line] = cmds
		lc.order = append(lc.order, line)
	}
	return cmds
}

// parsers keeps Bash parsers for reuse: a new one allocates its buffers.
// A Parser holds no state from one Parse to the next that changes a parse.
var parsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}

type shellJudge struct {
	cmds   []shellCmd
	src    string // the line being walked, for the text of its nodes
	parser *syntax.Parser
}

// text returns a node's source text in the line being walked.
func (j *shellJudge) text(n syntax.Node) string {
	a, b := n.Pos().Offset(), n.End().Offset()
	if a > b || b > uint(len(j.src)) {
		return "\x00"
	}
	return j.src[a:b]
}

// line parses src and adds its commands; false when it cannot be parsed.
func (j *shellJudge) line(src string, depth int) bool {
	if len(src) > maxShellLen || depth > maxShellDepth {
		return false
	}
	if j.parser == nil {
		j.parser = parsers.Get().(*syntax.Parser)
		defer func() {
			parsers.Put(j.parser)
			j.parser = nil
		}()
	}
	f, err := j.parser.Parse(strings.NewReader(src), "")
	if err != nil {
		return false
	}
	outer := j.src
	j.src = src
	defer func() { j.src = outer }()
	syntax.Walk(f, func(n syntax.Node) bool {
		switch x := n.(type) {
		case *syntax.CallExpr:
			if len(x.Args) > 0 {
				j.call(x.Args, depth)
			}
		case *syntax.DeclClause:
			words := []string{x.Variant.Value}
			for _, a := range x.Args {
				words = append(words, j.text(a))
			}
			j.add(words, words, false)
		case *syntax.Stmt:
			j.stdinScript(x, depth)
			for _, r := range x.Redirs {
				if r.Word == nil {
					continue
				}
				if text, _ := j.literal(r.Word); writesFile(r, text) {
					// Writing a file is an edit, not the command's run:
					// no command rule allows it.
					j.cmds = append(j.cmds, shellCmd{opaque: true})
					break
				}
			}
		case *syntax.Assign:
			if x.Name != nil && dangerousVar(x.Name.Value) {
				j.cmds = append(j.cmds, shellCmd{opaque: true})
			}
		}
		return true
	})
	return true
}

// stdinScript judges the here-document or here-string a shell or eval-like
// command reads as its script (bash <<EOF … EOF).
func (j *shellJudge) stdinScript(s *syntax.Stmt, depth int) {
	call, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(call.Args) == 0 {
		return
	}
	name, _ := j.literal(call.Args[0])
	if !shells[path.Base(name)] && !shellWrappers[path.Base(name)] {
		return
	}
	for _, r := range s.Redirs {
		body := r.Hdoc
		if r.Op == syntax.WordHdoc {
			body = r.Word
		}
		if body == nil {
			continue
		}
		text, lit := j.literal(body)
		if !lit || !j.line(text, depth+1) {
			j.cmds = append(j.cmds, roughCmd(text))
		}
	}
}

// add records one command.
func (j *shellJudge) add(canon, written []string, opaque bool) {
	c := shellCmd{opaque: opaque}
	if !opaque {
		c.canon = strings.Join(canon, " ")
		c.forms = append(c.forms, c.canon)
	}
	w := strings.Join(written, " ")
	if w != c.canon {
		c.forms = append(c.forms, w)
	}
	j.cmds = append(j.cmds, c)
}

// call judges one simple command given its words.
func (j *shellJudge) call(args []*syntax.Word, depth int) {
	args, braced := braceExpand(args)
	if braced > maxBraceWords {
		j.cmds = append(j.cmds, shellCmd{opaque: true}) // not judged whole: never allowed
	}
	if len(args) == 0 {
		return
	}
	words := make([]string, len(args))
	lit := make([]bool, len(args))
	for i, w := range args {
		words[i], lit[i] = j.literal(w)
	}
	if !lit[0] {
		// rm${IFS}-rf: the literal start of a computed name could be the
		// name; judged as one more command for deny and ask.
		if pre := litPrefix(args[0]); pre != "" {
			j.add(nil, append([]string{pre}, words[1:]...), true)
		}
	}
	j.words(words, lit, depth)
}

// words judges one simple command given its words (lit[i]: word i is a
// literal, its text after quote removal; else its text as written).
func (j *shellJudge) words(words []string, lit []bool, depth int) {
	c := shellCmd{forms: make([]string, 0, 2)}
	add := func(s string) {
		if !slices.Contains(c.forms, s) {
			c.forms = append(c.forms, s)
		}
	}
	addForm := func(ws []string) {
		if len(ws) == 0 {
			return
		}
		add(strings.Join(ws, " "))
		// The name without its directory: /bin/rm is rm for deny and ask.
		if strings.Contains(ws[0], "/") {
			b := path.Base(ws[0])
			if b != "" && b != "." && b != "/" {
				add(strings.Join(append([]string{b}, ws[1:]...), " "))
			}
		}
	}
	// canonical form, for allow rules.
	canon, canonOK := stripWrappers(words, lit)
	if canonOK {
		addForm(canon)
		c.canon = c.forms[0]
	} else {
		c.opaque = true
	}
	if !canonOK || len(canon) != len(words) {
		// canon is a suffix of words: of the same length, it is words.
		addForm(words)
	}
	// Every run of words that a wrapper could run, for deny and ask.
	for i := 0; i < len(words); i++ {
		name := path.Base(words[i])
		if !lit[i] {
			// An unknown command name: the rest could be its command.
			if i+1 < len(words) {
				addForm(words[i+1:])
			}
			continue
		}
		if i > 0 && !isWrapperRun(words[:i], lit[:i]) {
			break
		}
		if shellWrappers[name] {
			for k := i + 1; k < len(words); k++ {
				addForm(words[k:])
			}
		}
		if name == "eval" || name == "." || name == "source" {
			if name == "eval" {
				j.nested(words[i+1:], lit[i+1:], depth, &c)
			} else {
				c.opaque = true // a script file: its commands are not seen
			}
		}
		if shells[name] {
			j.shellArgs(words[i+1:], lit[i+1:], depth, &c)
		}
		if name == "find" || name == "fd" || name == "xargs" || name == "parallel" {
			// -exec cmd … ; and xargs cmd: the command is judged as well.
			for k := i + 1; k < len(words); k++ {
				if words[k] == "-exec" || words[k] == "-execdir" || words[k] == "-ok" || words[k] == "-okdir" || words[k] == "-x" || words[k] == "--exec" {
					end := len(words)
					for e := k + 1; e < len(words); e++ {
						if words[e] == ";" || words[e] == "+" {
							end = e
							break
						}
					}
					if k+1 < end {
						j.words(words[k+1:end], lit[k+1:end], depth+1)
					}
				}
			}
		}
	}
	j.cmds = append(j.cmds, c)
}

// isWrapperRun reports whether words (a command's leading words) are one
// or more wrappers with their options, so that the word after them may be
// a command name.
func isWrapperRun(words []string, lit []bool) bool {
	for i, w := range words {
		if !lit[i] {
			return true // unknown: could be a wrapper
		}
		if shellWrappers[path.Base(w)] {
			return true
		}
	}
	return false
}

// nested judges the words of eval (joined by spaces) as a command line.
//
// A string with an expansion cannot be known: the command is opaque (no
// allow rule allows it), and its text as written is judged all the same,
// so that deny and ask rules see the commands it names.
func (j *shellJudge) nested(words []string, lit []bool, depth int, c *shellCmd) {
	for _, l := range lit {
		if !l {
			c.opaque = true
		}
	}
	if len(words) == 0 {
		return
	}
	if !j.line(strings.Join(words, " "), depth+1) {
		rc := roughCmd(strings.Join(words, " "))
		j.cmds = append(j.cmds, rc)
		c.opaque = true
	}
}

// shellArgs judges a shell's -c string; a shell without -c reads a
// script from a file or its input, which the rules cannot see.
func (j *shellJudge) shellArgs(words []string, lit []bool, depth int, c *shellCmd) {
	for i := 0; i < len(words); i++ {
		w := words[i]
		if !lit[i] {
			c.opaque = true
			return
		}
		if w == "--" || !strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "+") {
			break
		}
		if strings.HasPrefix(w, "-") && !strings.HasPrefix(w, "--") && strings.Contains(w, "c") {
			if i+1 >= len(words) {
				c.opaque = true
				return
			}
			j.nested(words[i+1:i+2], lit[i+1:i+2], depth, c)
			return
		}
	}
	c.opaque = true
}

// stripWrappers returns the command allow rules match: words without the
// wrappers Claude Code strips. ok is false when the command's name is not
// a literal or a wrapper's options are not understood.
func stripWrappers(words []string, lit []bool) ([]string, bool) {
	for len(words) > 0 {
		if !lit[0] || hasGlob(words[0]) {
			return nil, false
		}
		n := wrapperArgs(words, lit)
		if n == 0 {
			return words, true
		}
		if n < 0 || n >= len(words) {
			return nil, false
		}
		words, lit = words[n:], lit[n:]
	}
	return nil, false
}

// wrapperArgs returns how many leading words are a stripped wrapper and its
// options (0: words[0] is no such wrapper; -1: options not understood).
func wrapperArgs(words []string, lit []bool) int {
	i := 1
	opts := func(withValue string) int {
		for i < len(words) {
			w := words[i]
			if !lit[i] {
				return -1
			}
			if w == "--" {
				return i + 1
			}
			if !strings.HasPrefix(w, "-") || w == "-" {
				return i
			}
			if len(w) == 2 && strings.ContainsRune(withValue, rune(w[1])) {
				i++
			} else if strings.HasPrefix(w, "--") && !strings.Contains(w, "=") && !knownLongFlag(w) {
				return -1
			}
			i++
		}
		return i
	}
	switch words[0] {
	case "nohup":
		return 1
	case "time":
		if len(words) > 1 && words[1] == "-p" {
			return 2
		}
		return 1
	case "command":
		if len(words) > 1 && strings.HasPrefix(words[1], "-") {
			if words[1] == "-p" {
				return 2
			}
			return 0 // command -v / -V name: a look-up, not a run
		}
		return 1
	case "nice":
		n := opts("n")
		if n < 0 {
			return -1
		}
		return n
	case "stdbuf":
		n := opts("ioe")
		if n < 0 {
			return -1
		}
		return n
	case "timeout":
		n := opts("sk")
		if n < 0 || n >= len(words) || !lit[n] {
			return -1
		}
		return n + 1 // the duration
	case "xargs":
		if len(words) > 1 && strings.HasPrefix(words[1], "-") {
			return -1 // only bare xargs is stripped
		}
		return 1
	case "env":
		for i < len(words) {
			w := words[i]
			if !lit[i] {
				return -1
			}
			switch {
			case w == "-i" || w == "--ignore-environment" || w == "-":
			case w == "-u":
				i++
			case strings.HasPrefix(w, "-"):
				return -1
			case strings.Contains(w, "="):
				if name, _, _ := strings.Cut(w, "="); dangerousVar(name) {
					return -1
				}
			default:
				return i
			}
			i++
		}
		return i
	}
	return 0
}

func knownLongFlag(w string) bool {
	switch w {
	case "--preserve-status", "--foreground", "--verbose":
		return true
	}
	return false
}

// hasGlob reports whether a command name holds characters a shell would
// expand (pathname patterns, braces): such a name is not a literal.
func hasGlob(s string) bool {
	return strings.ContainsAny(s, "*?[{~") && !strings.HasPrefix(s, "~/") || strings.Contains(s, "{")
}

// literal returns a word's text after quote removal, and whether it is a
// literal (no expansion of any kind, no unquoted pattern characters).
func (j *shellJudge) literal(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		if l, ok := w.Parts[0].(*syntax.Lit); ok {
			return unescape(l.Value)
		}
	}
	var b strings.Builder
	ok := true
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v, lok := unescape(x.Value)
			b.WriteString(v)
			ok = ok && lok
		case *syntax.SglQuoted:
			if x.Dollar {
				v, dok := ansiC(x.Value)
				b.WriteString(v)
				ok = ok && dok
			} else {
				b.WriteString(x.Value)
			}
		case *syntax.DblQuoted:
			if x.Dollar {
				ok = false
			}
			for _, q := range x.Parts {
				if l, isLit := q.(*syntax.Lit); isLit {
					b.WriteString(unescapeDbl(l.Value))
				} else {
					b.WriteString(j.text(q))
					ok = false
				}
			}
		default:
			b.WriteString(j.text(p))
			ok = false
		}
	}
	return b.String(), ok
}

// maxBraceWords bounds the words one command's brace expansion is judged
// with ({rm,-rf,x} is rm -rf x); a larger expansion is judged by its first
// words and is never allowed.
const maxBraceWords = 256

// braceExpand returns args with their brace expansions done, as bash does
// before running a command, and the number of words the expansion makes
// (more than maxBraceWords: the words returned are its first ones).
func braceExpand(args []*syntax.Word) ([]*syntax.Word, int) {
	var out []*syntax.Word
	n := 0
	for i, w := range args {
		if !hasBrace(w) {
			if out != nil {
				out = append(out, w)
			}
			n++
			continue
		}
		// SplitBraces rewrites the word it is given: give it a copy, so
		// the tree being walked stays as parsed.
		wc := *w
		wc.Parts = slices.Clone(w.Parts)
		if !syntax.SplitBraces(&wc) {
			if out != nil {
				out = append(out, w)
			}
			n++
			continue
		}
		if out == nil {
			out = append(out, args[:i]...)
		}
		for e, err := range expand.BracesSeq(nil, &wc) {
			n++
			if err != nil || n > maxBraceWords {
				return out, maxBraceWords + 1
			}
			out = append(out, e)
		}
	}
	if out == nil {
		return args, n
	}
	return out, n
}

// hasBrace reports whether an unquoted literal part of w holds a "{".
func hasBrace(w *syntax.Word) bool {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.IndexByte(l.Value, '{') >= 0 {
			return true
		}
	}
	return false
}

// dangerousVar reports whether assigning the variable changes which
// program a command name runs or what a shell runs first (PATH,
// LD_PRELOAD, BASH_ENV, ...): a line assigning one is never allowed.
func dangerousVar(name string) bool {
	switch name {
	case "PATH", "BASH_ENV", "ENV", "IFS", "PS4", "SHELLOPTS", "BASHOPTS", "PROMPT_COMMAND", "GCONV_PATH",
		"NODE_OPTIONS", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "PERL5LIB", "RUBYOPT", "GIT_SSH", "GIT_SSH_COMMAND",
		"GIT_EXEC_PATH", "GIT_CONFIG_GLOBAL", "EDITOR", "VISUAL", "PAGER", "CDPATH", "HOME":
		return true
	}
	return strings.HasPrefix(name, "LD_") || strings.HasPrefix(name, "DYLD_") || strings.HasPrefix(name, "BASH_FUNC_")
}

// writesFile reports whether a redirection writes to a file (not a file
// descriptor, not /dev/null).
func writesFile(r *syntax.Redirect, text string) bool {
	switch r.Op {
	case syntax.RdrOut, syntax.AppOut, syntax.RdrInOut, syntax.RdrAll, syntax.AppAll, syntax.RdrClob, syntax.RdrAllClob, syntax.AppAllClob, syntax.AppClob:
		return text != "/dev/null"
	case syntax.DplOut:
		// >&N duplicates a descriptor; >&file writes a file.
		return strings.Trim(text, "0123456789-") != ""
	}
	return false
}

// litPrefix returns the literal text a word starts with, before its first
// expansion or pattern character.
func litPrefix(w *syntax.Word) string {
	var b strings.Builder
	for _, p := range w.Parts {
		switch x := p.(type) {
		case *syntax.Lit:
			v, ok := unescape(x.Value)
			if !ok {
				if i := strings.IndexAny(v, "*?["); i >= 0 {
					b.WriteString(v[:i])
				}
				return b.String()
			}
			b.WriteString(v)
		case *syntax.SglQuoted:
			v := x.Value
			if x.Dollar {
				v, _ = ansiC(v)
			}
			b.WriteString(v)
		default:
			return b.String()
		}
	}
	return b.String()
}

// unescape removes the backslashes of an unquoted literal; ok is false
// when it holds unescaped pattern characters.
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, `\*?[`) {
		return s, true
	}
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				if s[i] != '\n' {
					b.WriteByte(s[i])
				}
			}
			continue
		case '*', '?', '[':
			ok = false
		}
		b.WriteByte(s[i])
	}
	return b.String(), ok
}

// ansiC decodes the body of a $'…' string as bash does; ok is false for
// an escape it does not know (\c control characters), whose text is kept.
func ansiC(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			base, max := 16, map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			start := i + 1
			if c >= '0' && c <= '7' {
				base, max, start = 8, 3, i
			}
			end := start
			for end < len(s) && end-start < max && isDigitIn(s[end], base) {
				end++
			}
			if end == start {
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			n, err := strconv.ParseUint(s[start:end], base, 32)
			if err != nil {
				ok = false
			}
			if c == 'x' || base == 8 {
				b.WriteByte(byte(n))
			} else {
				b.WriteRune(rune(n))
			}
			i = end - 1
		default:
			ok = false
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), ok
}

func isDigitIn(c byte, base int) bool {
	switch {
	case c >= '0' && c <= '7':
		return true
	case c == '8' || c == '9':
		return base == 16
	}
	return base == 16 && (c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F')
}

// unescapeDbl removes the backslashes that escape inside double quotes.
func unescapeDbl(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\\n", s[i+1]) >= 0 {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// roughCmd is the opaque command of a line that could not be parsed (or
// is too long to): deny and ask rules whose first word is one of the
// line's words (split at white space and shell operators, with and without
// a directory) match it, and so does every rule whose first word is a
// pattern. The cost is linear in the line's length.
func roughCmd(src string) shellCmd {
	c := shellCmd{opaque: true, rough: map[string]bool{}}
	for _, w := range strings.FieldsFunc(src, func(r rune) bool {
		return r == ' ' || r == '\t' || r == '\n' || r == '\r' || strings.ContainsRune(";&|()`<>{}$'\"\\=", r)
	}) {
		c.rough[w] = true
		c.rough[path.Base(w)] = true
	}
	return c
}

// shellPat is a compiled Bash(…) command rule.
type shellPat struct {
	re *regexp.Regexp
	// first is the rule's first word when it holds no wildcard ("" when
	// it does): only commands starting with that word can match.
	first string
	// lit, when the pattern has no wildcard but maybe a trailing " *", is
	// its literal text: the match is a comparison (exact, or prefix at a
	// word boundary when prefix is set), not the expression.
	lit     string
	literal bool
	prefix  bool
}

// compileShellPat compiles a Bash rule's command pattern: "*" matches any
// run of characters (spaces and "/" included); a pattern ending in " *"
// also matches the command without arguments ("ls *" matches "ls" and
// "ls -la" but not "lsof"); the legacy "prefix:*" at the end means
// "prefix *". Runs of white space in the pattern are one space, as in the
// commands it is matched against.
func compileShellPat(p string) (*shellPat, error) {
	p = strings.Join(strings.Fields(p), " ")
	if legacy, ok := strings.CutSuffix(p, ":*"); ok {
		p = strings.TrimRight(legacy, " ") + " *"
	}
	if p == "" || p == "*" {
		return nil, errors.New("an empty command pattern")
	}
	if n := strings.Count(p, "*"); n > MaxWildcards {
		return nil, fmt.Errorf("more than %d wildcards", MaxWildcards)
	}
	bareToo := strings.HasSuffix(p, " *")
	body := p
	if bareToo {
		body = strings.TrimSuffix(p, " *")
	}
	var b strings.Builder
	b.WriteString(`^(?s:`)
	for i, part := range strings.Split(body, "*") {
		if i > 0 {
			b.WriteString(`.*`)
		}
		b.WriteString(regexp.QuoteMeta(part))
	}
	if bareToo {
		b.WriteString(`(?: .*)?`)
	}
	b.WriteString(`)$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, err
	}
	sp := &shellPat{re: re}
	if !strings.Contains(body, "*") {
		sp.lit, sp.literal, sp.prefix = body, true, bareToo
	}
	first, _, _ := strings.Cut(p, " ")
	if !strings.Contains(first, "*") {
		sp.first = first
	}
	return sp, nil
}

// firstOf reports whether command text s can match: it starts with the
// pattern's literal first word, or the pattern has none.
func (sp *shellPat) firstOf(s string) bool {
	return sp.first == "" || strings.HasPrefix(s, sp.first) && (len(s) == len(sp.first) || s[len(sp.first)] == ' ')
}

// matchAny reports whether the pattern matches any form of any command
// (the deny and ask direction).
func (sp *shellPat) matchAny(cmds []shellCmd) bool {
	for i := range cmds {
		if sp.matchCmd(&cmds[i]) {
			return true
		}
	}
	return false
}

func (sp *shellPat) matchCmd(c *shellCmd) bool {
	if c.rough != nil {
		return sp.first == "" || c.rough[sp.first]
	}
	for _, f := range c.forms {
		if sp.match(f) {
			return true
		}
	}
	return false
}

// match matches one command text.
func (sp *shellPat) match(s string) bool {
	if sp.literal {
		if !sp.prefix {
			return s == sp.lit
		}
		return strings.HasPrefix(s, sp.lit) && (len(s) == len(sp.lit) || s[len(sp.lit)] == ' ')
	}
	return sp.firstOf(s) && sp.re.MatchString(s)
}
