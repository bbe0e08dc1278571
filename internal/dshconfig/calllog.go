package dshconfig

import (
	"path/filepath"
	"strconv"
	"strings"
)

// CallLog is the "callLog" object of dsh.json: `dsh mcp serve` writes one
// JSON line per finished tool call to a file.
//
//	"callLog": {
//	  "path": "dsh-calls.jsonl",   // beside this file when relative; "-" is stderr
//	  "arguments": false,          // record the (redacted) arguments
//	  "maxArgumentBytes": 1024,    // cut them to this many bytes
//	  "redact": ["*ssn*"]          // more argument names to hide (beyond the defaults)
//	}
type CallLog struct {
	// Path is the file lines are appended to ("-": standard error).
	Path string
	// Arguments records each call's arguments, redacted and cut to
	// MaxArgumentBytes; off by default (they may hold secrets).
	Arguments bool
	// MaxArgumentBytes bounds the recorded arguments (default 1024).
	MaxArgumentBytes int
	// Redact adds argument-name patterns to those always hidden.
	Redact []string
}

// DefaultMaxArgumentBytes is the default of "callLog.maxArgumentBytes".
const DefaultMaxArgumentBytes = 1024

func (p *parser) callLog(v value, cfg *Config) {
	o, ok := p.object("callLog", v, "path", "arguments", "maxArgumentBytes", "redact")
	if !ok {
		return
	}
	c := &CallLog{MaxArgumentBytes: DefaultMaxArgumentBytes}
	if pv, ok := o.get("path"); ok {
		if s, ok := p.str("callLog.path", pv); ok {
			c.Path = p.expand("callLog.path", s)
		}
	}
	switch {
	case c.Path == "":
		p.fail("callLog.path", "is required: a file to append lines to (relative to this file), or \"-\" for standard error")
	case c.Path != "-" && !filepath.IsAbs(c.Path):
		if dir, err := filepath.Abs(filepath.Dir(p.file)); err == nil {
			c.Path = filepath.Join(dir, c.Path)
		}
	}
	if av, ok := o.get("arguments"); ok {
		c.Arguments, _ = p.boolean("callLog.arguments", av)
	}
	if nv, ok := o.get("maxArgumentBytes"); ok {
		c.MaxArgumentBytes = p.posInt("callLog.maxArgumentBytes", nv)
	}
	if rv, ok := o.get("redact"); ok {
		c.Redact = p.strListX("callLog.redact", rv, false)
		for i, r := range c.Redact {
			if _, err := filepath.Match(strings.ToLower(r), ""); err != nil || r == "" {
				p.fail("callLog.redact["+strconv.Itoa(i)+"]", "%q is not a name pattern", r)
			}
		}
	}
	cfg.CallLog = c
}
