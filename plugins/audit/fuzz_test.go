package audit_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/audit"
)

// The redactor never lets the value of a secret-named member through,
// keeps to its bound, and gives JSON (or a placeholder for input it cannot
// read), whatever the input.
func FuzzRedactorArgs(f *testing.F) {
	for _, s := range []string{`{"password":"hunter2"}`, `{"a":{"API_TOKEN":["x",{"y":"hunter2"}]}}`, `{"url":"https://u:hunter2@h/?k=hunter2"}`,
		`[1,2]`, `"s"`, `{`, `{"Authorization":"Bearer hunter2","n":1e400}`, "{\"a\":\"\xff\"}"} {
		f.Add([]byte(s), 64)
	}
	red, err := audit.NewRedactor(nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte, max int) {
		if max < 0 {
			max = -max
		}
		max = max%4096 + 1
		out, cut := red.Args(raw, max)
		if len(out) > max && !strings.HasPrefix(out, "(") {
			t.Fatalf("%d bytes > bound %d", len(out), max)
		}
		if !cut && out != "" && !json.Valid([]byte(out)) {
			t.Fatalf("not JSON: %q", out)
		}
		var in any
		if json.Unmarshal(raw, &in) == nil && strings.Contains(out, "hunter2") && onlyUnderSecretNames(in) {
			t.Fatalf("secret leaked: %s -> %s", raw, out)
		}
	})
}

// onlyUnderSecretNames reports whether every "hunter2" in v sits below a
// member named like a secret (password, token, secret, authorization).
func onlyUnderSecretNames(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			lk := strings.ToLower(k)
			if strings.Contains(lk, "password") || strings.Contains(lk, "token") || strings.Contains(lk, "secret") || lk == "authorization" {
				continue
			}
			if !onlyUnderSecretNames(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !onlyUnderSecretNames(e) {
				return false
			}
		}
		return true
	case string:
		return !strings.Contains(x, "hunter2")
	}
	return true
}
