package permissions

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// base is the directory a path pattern is relative to.
type base uint8

const (
	baseRoot   base = iota + 1 // "//path", and "/path" in a key:pattern condition
	baseHome                   // "~/path"
	baseConfig                 // "/path" in Read(…)/Edit(…): the config file's directory
	baseCwd                    // "path", "./path": the current directory
)

// pathPat is a compiled path pattern: a regular expression over the path
// relative to its base directory (no leading "/").
type pathPat struct {
	base base
	re   *regexp.Regexp
}

// env is what places paths: the directories a pattern or a relative value
// is relative to. An empty directory is unknown.
type env struct {
	cwd, home, configDir string
}

func (e *env) dir(b base) string {
	switch b {
	case baseRoot:
		return "/"
	case baseHome:
		return e.home
	case baseConfig:
		return e.configDir
	}
	return e.cwd
}

// compileClaudePath compiles the pattern of a Read(…)/Edit(…) rule with
// Claude Code's gitignore-style meaning: "//p" from the root, "~/p" from
// the home directory, "/p" from the config file's directory, "p" and
// "./p" from the current directory. As in gitignore, a pattern without a
// "/" (but a trailing one) matches at any depth below its base, and a
// pattern matching a directory covers everything in it; "dir/**" covers
// dir itself too.
func compileClaudePath(p string) (pathPat, error) {
	var pp pathPat
	switch {
	case strings.HasPrefix(p, "//"):
		pp.base, p = baseRoot, p[2:]
	case p == "~" || strings.HasPrefix(p, "~/"):
		pp.base, p = baseHome, strings.TrimPrefix(p[1:], "/")
	case strings.HasPrefix(p, "/"):
		pp.base, p = baseConfig, p[1:]
	case strings.HasPrefix(p, "~"):
		return pp, errors.New(`"~user" paths are not supported; write ~/path or //absolute/path`)
	default:
		pp.base = baseCwd
		p = strings.TrimPrefix(p, "./")
	}
	body := strings.TrimSuffix(p, "/")
	anywhere := !strings.Contains(body, "/")
	re, err := pathRegexp(body)
	if err != nil {
		return pp, err
	}
	expr := re
	if anywhere && body != "" && body != "**" {
		expr = `(?:.*/)?` + re
	}
	pp.re, err = regexp.Compile(`^(?s:` + expr + `(?:/.*)?)$`)
	return pp, err
}

// compileArgPath compiles a key:pattern condition's path pattern (one
// that starts with "/", "//", "~/", "./" or "**/"): "/p" and "//p" are
// absolute, "~/p" from the home directory, "./p" from the current
// directory, and a pattern starting with "**/" matches at any depth. The whole path must match ("*" does
// not cross "/"); "dir/**" covers dir itself.
func compileArgPath(p string) (pathPat, error) {
	var pp pathPat
	switch {
	case strings.HasPrefix(p, "/"):
		pp.base, p = baseRoot, strings.TrimLeft(p, "/")
	case p == "~" || strings.HasPrefix(p, "~/"):
		pp.base, p = baseHome, strings.TrimPrefix(p[1:], "/")
	default:
		pp.base = baseCwd
		p = strings.TrimPrefix(p, "./")
	}
	re, err := pathRegexp(strings.TrimSuffix(p, "/"))
	if err != nil {
		return pp, err
	}
	if strings.HasPrefix(p, "**/") && pp.base == baseCwd {
		pp.base = baseRoot // "**/x" matches x anywhere
	}
	pp.re, err = regexp.Compile(`^(?s:` + re + `)$`)
	return pp, err
}

// isArgPath reports whether a key:pattern condition's pattern is a path
// pattern (see compileArgPath): it starts with "/", "~/", "./" or "**/".
// Any other pattern, a URL ("https://…") included, is matched as text.
func isArgPath(p string) bool {
	if strings.Contains(p, "://") {
		return false
	}
	return strings.HasPrefix(p, "/") || strings.HasPrefix(p, "~/") || p == "~" || strings.HasPrefix(p, "./") || strings.HasPrefix(p, "**/")
}

// pathRegexp translates a path glob (after its base prefix) into regexp
// syntax: "**" as a whole segment is any number of segments (none
// included), "*" any run without "/", "?" one character but "/",
// "[…]" a class of characters but "/", "\" makes the next character
// literal. The glob is cleaned first ("a/./b" is "a/b") and NFC-normalized.
func pathRegexp(p string) (string, error) {
	if p == "" {
		return `.*`, nil // the base itself and everything in it
	}
	if p != "**" {
		trail := strings.HasSuffix(p, "/**")
		p = path.Clean(p)
		if strings.HasPrefix(p, "../") || p == ".." {
			return "", errors.New(`a pattern cannot climb out of its base with ".."`)
		}
		if trail && !strings.HasSuffix(p, "/**") {
			p += "/**"
		}
	}
	p = norm.NFC.String(p)
	segs := strings.Split(p, "/")
	var b strings.Builder
	wild := 0
	for i, seg := range segs {
		last := i == len(segs)-1
		if seg == "**" {
			wild++
			switch {
			case len(segs) == 1:
				b.WriteString(`.*`)
			case last:
				// "dir/**": dir itself and everything in it.
				s := b.String()
				b.Reset()
				b.WriteString(strings.TrimSuffix(s, "/"))
				b.WriteString(`(?:/.*)?`)
			default:
				b.WriteString(`(?:.*/)?`)
			}
			continue
		}
		n, err := segRegexp(&b, seg)
		if err != nil {
			return "", err
		}
		wild += n
		if !last {
			b.WriteString("/")
		}
	}
	if wild > MaxWildcards {
		return "", fmt.Errorf("more than %d wildcards", MaxWildcards)
	}
	return b.String(), nil
}

// segRegexp writes one path segment's glob as regexp syntax and returns
// its number of wildcards.
func segRegexp(b *strings.Builder, seg string) (int, error) {
	wild := 0
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; c {
		case '\\':
			if i+1 >= len(seg) {
				return 0, errors.New(`a trailing "\" escapes nothing`)
			}
			i++
			_, size := utf8.DecodeRuneInString(seg[i:])
			b.WriteString(regexp.QuoteMeta(seg[i : i+size]))
			i += size - 1
		case '*':
			wild++
			if i+1 < len(seg) && seg[i+1] == '*' {
				b.WriteString(`.*`)
			} else {
				b.WriteString(`[^/]*`)
			}
			for i+1 < len(seg) && seg[i+1] == '*' {
				i++
			}
		case '?':
			wild++
			b.WriteString(`[^/]`)
		case '[':
			end := strings.IndexByte(seg[i+1:], ']')
			if end < 0 {
				return 0, errors.New(`"[" without a closing "]" (write \[ for the character)`)
			}
			class := seg[i+1 : i+1+end]
			if end == 0 {
				return 0, errors.New(`an empty "[]" class`)
			}
			wild++
			b.WriteString(`[`)
			if class[0] == '!' || class[0] == '^' {
				b.WriteString(`^/`)
				class = class[1:]
			}
			for _, r := range class {
				if r == '-' {
					b.WriteByte('-')
					continue
				}
				if r == '\\' || r == '[' || r == '/' {
					return 0, fmt.Errorf("%q inside a \"[…]\" class", r)
				}
				b.WriteString(regexp.QuoteMeta(string(r)))
			}
			b.WriteString(`]`)
			i += end + 1
		default:
			_, size := utf8.DecodeRuneInString(seg[i:])
			b.WriteString(regexp.QuoteMeta(seg[i : i+size]))
			i += size - 1
		}
	}
	return wild, nil
}

// match reports whether the absolute, cleaned path abs matches. A pattern
// whose base is unknown (no current directory) matches, for a cautious
// rule, a path in which any directory could be its base; for another rule
// it does not match.
func (pp *pathPat) match(abs string, e *env, cautious bool) bool {
	dir := e.dir(pp.base)
	if dir == "" {
		if !cautious {
			return false
		}
		// The base could be any directory above the path.
		rel := strings.TrimPrefix(abs, "/")
		for {
			if pp.re.MatchString(rel) {
				return true
			}
			i := strings.IndexByte(rel, '/')
			if i < 0 {
				return false
			}
			rel = rel[i+1:]
		}
	}
	var rel string
	switch {
	case dir == "/":
		rel = strings.TrimPrefix(abs, "/")
	case abs == dir:
		rel = ""
	case strings.HasPrefix(abs, dir) && abs[len(dir)] == '/':
		rel = abs[len(dir)+1:]
	default:
		return false
	}
	return pp.re.MatchString(rel)
}

// pathForms returns every absolute path a path value could name: the
// value cleaned lexically ("/a/./b/../c/" is "/a/c", NFC-normalized)
// and, when it or a directory above it exists, with its symbolic links
// resolved; a value starting with "~/" both as the home directory's (a
// server may expand it) and as a relative path. A relative value is placed
// in the current directory; without one, ok is false.
func pathForms(v string, e *env) (forms []string, ok bool) {
	if strings.IndexByte(v, 0) >= 0 {
		return nil, false
	}
	var raws []string
	switch {
	case v == "~" || strings.HasPrefix(v, "~/"):
		if e.home == "" {
			return nil, false
		}
		raws = append(raws, e.home+"/"+v[1:])
		if e.cwd == "" {
			return nil, false
		}
		raws = append(raws, e.cwd+"/"+v)
	case strings.HasPrefix(v, "/"):
		raws = append(raws, v)
	default:
		if e.cwd == "" {
			return nil, false
		}
		raws = append(raws, e.cwd+"/"+v)
	}
	add := func(p string) {
		p = norm.NFC.String(path.Clean(p))
		for _, f := range forms {
			if f == p {
				return
			}
		}
		forms = append(forms, p)
	}
	for _, r := range raws {
		add(r)
		if real, ok := resolve(r); ok {
			add(real)
		}
	}
	return forms, true
}

// resolve returns p with its symbolic links resolved: the whole path when
// it exists, else its longest existing directory's, followed by the rest.
func resolve(p string) (string, bool) {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		return real, true
	}
	dir, rest := path.Clean(p), ""
	for dir != "/" && dir != "." {
		d, f := path.Split(dir)
		d = path.Clean(d)
		if rest == "" {
			rest = f
		} else {
			rest = f + "/" + rest
		}
		if real, err := filepath.EvalSymlinks(d); err == nil {
			return path.Join(real, rest), true
		}
		dir = d
	}
	return "", false
}
