package dshconfig

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAudit_KeysAreReadAndCheckedWithFileAndKey(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "DSN" {
			return "postgres://u@h/db", true
		}
		return "", false
	}
	cfg, err := Parse("/etc/dsh/dsh.json", []byte(`{
		"mcpServers": {"fs": {"command": "x"}},
		"permissions": {"ask": ["mcp__fs__write_file"]},
		"audit": {"store": "postgres", "dsn": "${DSN}", "instance": "gw-1", "queue": 10, "onFull": "fail",
			"blockTimeout": "3s", "maxArgBytes": 100, "maxPreviewBytes": 50, "redact": ["*ssn*"]},
		"approval": {"approver": "client", "rules": {"mcp__fs__write_file": "console", "defaultMode": "console"}, "timeout": "5m", "identities": {"token:ci": "console"}},
		"console": {"tokens": {"ops": {"env": "OPS_TOKEN"}}, "allowedOrigins": ["https://x.example"]}
	}`), env)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.Audit
	if a.Store != "postgres" || a.DSN != "postgres://u@h/db" || a.Instance != "gw-1" || a.Queue != 10 || a.OnFull != "fail" ||
		a.BlockTimeout != 3*time.Second || a.MaxArgBytes != 100 || a.MaxPreviewBytes != 50 || len(a.Redact) != 1 {
		t.Fatalf("audit: %+v", a)
	}
	if cfg.Approval.Rules["mcp__fs__write_file"] != "console" || cfg.Approval.Timeout != 5*time.Minute || cfg.Approval.Approver != "client" || cfg.Approval.Identities["token:ci"] != "console" {
		t.Fatalf("approval: %+v", cfg.Approval)
	}
	if len(cfg.Console.Tokens) != 1 || cfg.Console.Tokens[0].Env != "OPS_TOKEN" || cfg.Console.Tokens[0].Key != "console.tokens.ops" {
		t.Fatalf("console: %+v", cfg.Console)
	}

	cfg, err = Parse("/etc/dsh/dsh.json", []byte(`{"audit": {}}`), nil)
	if err != nil || cfg.Audit.Store != "sqlite" || cfg.Audit.Path != filepath.Join("/etc/dsh", "dsh-audit.db") {
		t.Fatalf("default audit: %+v %v", cfg, err)
	}

	for _, tc := range []struct{ doc, want string }{
		{`{"audit": {"store": "mysql"}}`, "audit.store"},
		{`{"audit": {"store": "postgres"}}`, "audit.dsn: is required"},
		{`{"audit": {"dsn": "x"}}`, "audit.dsn: applies"},
		{`{"audit": {"onFull": "drop"}}`, "audit.onFull"},
		{`{"audit": {"queue": -1}}`, "audit.queue"},
		{`{"audit": {"colour": 1}}`, "audit.colour: unknown key"},
		{`{"audit": {"redact": ["[x"]}}`, "audit.redact[0]"},
		{`{"approval": {"approver": "agent"}}`, "approval.approver"},
		{`{"approval": {"identities": {"token:ci": "self"}}}`, "approval.identities.token:ci"},
		{`{"approval": {"rules": {"mcp__fs__read_file": "console"}}}`, "approval.rules.mcp__fs__read_file: is not one of permissions.ask"},
		{`{"console": {"tokens": {"ops": {"token": "inline"}}}}`, "console.tokens.ops.token: unknown key"},
	} {
		_, err := Parse("dsh.json", []byte(tc.doc), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}
