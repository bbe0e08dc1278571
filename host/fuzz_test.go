package host_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/dsh-go/dsh/host"
)

var (
	scopeGrammar   = regexp.MustCompile(`^[\x21-\x7e]+$`)
	serviceGrammar = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$`)
)

func FuzzValidateScopeKey(f *testing.F) {
	for _, s := range []string{"agent-1", "", "a b", "\x00", "é", "~!@#"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := host.ValidateScopeKey(s)
		want := scopeGrammar.MatchString(s) && len(s) <= host.MaxScopeKeyLen
		if (err == nil) != want {
			t.Fatalf("ValidateScopeKey(%q) = %v, grammar says ok=%v", s, err, want)
		}
		if err != nil && !errors.Is(err, host.ErrInvalidScopeKey) {
			t.Fatalf("error %v does not wrap ErrInvalidScopeKey", err)
		}
	})
}

func FuzzValidateServiceName(f *testing.F) {
	for _, s := range []string{"tools", "system-prompt", "systemPrompt", "a//b", "/x", "x/", "a.b_c/d-e", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := host.ValidateServiceName(s)
		want := serviceGrammar.MatchString(s) && len(s) <= host.MaxServiceNameLen
		if (err == nil) != want {
			t.Fatalf("ValidateServiceName(%q) = %v, grammar says ok=%v", s, err, want)
		}
		if err != nil && !errors.Is(err, host.ErrInvalidServiceName) {
			t.Fatalf("error %v does not wrap ErrInvalidServiceName", err)
		}
	})
}
