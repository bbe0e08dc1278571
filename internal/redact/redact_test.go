package redact_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/internal/redact"
)

func TestURL(t *testing.T) {
	for in, want := range map[string]string{
		"https://api.example/mcp?api_key=s3cret&v=1": "https://api.example/mcp?api_key=***&v=***",
		"https://user:pw@api.example/mcp":            "https://***@api.example/mcp",
		"https://api.example/mcp":                    "https://api.example/mcp",
		"https://api.example/mcp?%zz":                "https://api.example/mcp?***",
		"https://api.example/#tok=s3cret":            "https://api.example/",
		"://bad":                                     "(an unparsable URL)",
	} {
		if got := redact.URL(in); got != want {
			t.Errorf("URL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIn(t *testing.T) {
	raw := "http://u:pw@127.0.0.1:1/mcp?api_key=s3cret"
	msg := `Post "http://u:***@127.0.0.1:1/mcp?api_key=s3cret": dial tcp: refused; also ` + raw
	got := redact.In(msg, raw)
	if strings.Contains(got, "s3cret") || strings.Contains(got, "pw@") {
		t.Errorf("In: %q", got)
	}
}

func FuzzURL(f *testing.F) {
	f.Add("https://a:b@h/p?k=secretvalue")
	f.Add("?      =++++++")
	f.Fuzz(func(t *testing.T, s string) {
		out := redact.URL(s)
		u, err := url.Parse(out)
		if err != nil {
			if out != "(an unparsable URL)" {
				t.Fatalf("URL(%q) = %q does not parse", s, out)
			}
			return
		}
		if _, hasPw := u.User.Password(); u.User != nil && (u.User.Username() != "***" || hasPw) {
			t.Fatalf("URL(%q) = %q shows user info", s, out)
		}
		if u.RawQuery != "" && u.RawQuery != "***" {
			q, err := url.ParseQuery(u.RawQuery)
			if err != nil {
				t.Fatalf("URL(%q) = %q: query %v", s, out, err)
			}
			for k, vs := range q {
				for _, v := range vs {
					if v != "***" {
						t.Fatalf("URL(%q) = %q shows %s=%q", s, out, k, v)
					}
				}
			}
		}
		if u.Fragment != "" {
			t.Fatalf("URL(%q) = %q keeps a fragment", s, out)
		}
	})
}
