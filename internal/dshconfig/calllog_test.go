package dshconfig

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestCallLog_KeysAreReadAndChecked(t *testing.T) {
	cfg, err := Parse("/etc/dsh/dsh.json", []byte(`{"callLog": {"path": "calls.jsonl", "arguments": true, "maxArgumentBytes": 64, "redact": ["*ssn*"]}}`), nil)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.CallLog
	if c == nil || c.Path != filepath.Join("/etc/dsh", "calls.jsonl") || !c.Arguments || c.MaxArgumentBytes != 64 || len(c.Redact) != 1 {
		t.Fatalf("callLog: %+v", c)
	}
	cfg, err = Parse("dsh.json", []byte(`{"callLog": {"path": "-"}}`), nil)
	if err != nil || cfg.CallLog.Path != "-" || cfg.CallLog.Arguments || cfg.CallLog.MaxArgumentBytes != DefaultMaxArgumentBytes {
		t.Fatalf("callLog to stderr: %+v %v", cfg.CallLog, err)
	}
	if cfg, err := Parse("dsh.json", []byte(`{}`), nil); err != nil || cfg.CallLog != nil {
		t.Fatalf("no callLog: %+v %v", cfg.CallLog, err)
	}
	for _, tc := range []struct{ doc, want string }{
		{`{"callLog": {}}`, "callLog.path: is required"},
		{`{"callLog": {"path": "x", "arguments": "yes"}}`, "callLog.arguments"},
		{`{"callLog": {"path": "x", "maxArgumentBytes": 0}}`, "callLog.maxArgumentBytes"},
		{`{"callLog": {"path": "x", "colour": 1}}`, "callLog.colour: unknown key"},
		{`{"callLog": {"path": "x", "redact": ["[x"]}}`, "callLog.redact[0]"},
		{`{"callLog": true}`, "callLog"},
	} {
		_, err := Parse("dsh.json", []byte(tc.doc), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
