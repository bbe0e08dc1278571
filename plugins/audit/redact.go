package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/dsh-go/dsh/internal/redact"
)

// DefaultRedactKeys are the argument names whose values are always
// replaced by "***" in the record (matched case-insensitively, as globs,
// at any depth), whatever the config adds.
var DefaultRedactKeys = []string{"*password*", "*passwd*", "*secret*", "*token*", "*api_key*", "*apikey*",
	"*api-key*", "authorization", "*credential*", "cookie", "set-cookie", "*private_key*", "*privatekey*"}

// maxRedactInput is the largest argument object the redactor parses; a
// larger one is recorded by size only.
const maxRedactInput = 4 << 20

// Redactor hides secrets in recorded arguments: the values of members
// whose names match its patterns, and the user info and query values of
// URLs in strings.
type Redactor struct {
	keys []string
}

// NewRedactor returns a redactor for [DefaultRedactKeys] plus patterns
// (globs of path.Match syntax over argument names, case-insensitive). A
// malformed pattern is an error.
func NewRedactor(patterns []string) (*Redactor, error) {
	r := &Redactor{}
	for _, p := range append(append([]string{}, DefaultRedactKeys...), patterns...) {
		p = strings.ToLower(p)
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("audit: redact pattern %q: %w", p, err)
		}
		r.keys = append(r.keys, p)
	}
	return r, nil
}

func (r *Redactor) secretKey(k string) bool {
	k = strings.ToLower(k)
	for _, p := range r.keys {
		if ok, _ := path.Match(p, k); ok {
			return true
		}
	}
	return false
}

// Args returns the argument object raw, redacted and cut to max bytes
// (reporting whether it was cut). Input that is not JSON is not recorded,
// only its size: it cannot be redacted.
func (r *Redactor) Args(raw []byte, max int) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if len(raw) > maxRedactInput {
		return fmt.Sprintf("(%d bytes of arguments, not recorded)", len(raw)), true
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Sprintf("(%d bytes of arguments that are not JSON, not recorded)", len(raw)), true
	}
	v = r.value(v, 0)
	out, err := json.Marshal(v)
	if err != nil {
		return "(arguments not recorded)", true
	}
	return Cut(string(out), max)
}

func (r *Redactor) value(v any, depth int) any {
	if depth > 64 {
		return "***"
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if r.secretKey(k) {
				x[k] = "***"
			} else {
				x[k] = r.value(e, depth+1)
			}
		}
	case []any:
		for i := range x {
			x[i] = r.value(x[i], depth+1)
		}
	case string:
		return Text(x)
	}
	return v
}

// Text redacts the URLs in s (user info and query values).
func Text(s string) string {
	if !strings.Contains(s, "://") {
		return s
	}
	fields := strings.Fields(s)
	for _, f := range fields {
		if i := strings.Index(f, "://"); i > 0 && (strings.Contains(f, "@") || strings.Contains(f, "?")) {
			s = strings.ReplaceAll(s, f, redact.URL(f))
		}
	}
	return s
}

// Cut returns s cut to at most max bytes at a rune boundary (max <= 0:
// no bound), and whether it was cut.
func Cut(s string, max int) (string, bool) {
	if max <= 0 || len(s) <= max {
		return s, false
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i], true
}
