package events_test

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/events"
)

// nameGrammar is ValidateName's documented grammar.
var nameGrammar = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*(/[a-z0-9][a-z0-9._-]*)*$`)

func TestValidateName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"tools/pre-execute", true},
		{"internal/fiber", true},
		{"a", true},
		{"0/1.2_3", true},
		{"", false},
		{"Tools/x", false},
		{"a//b", false},
		{"a/", false},
		{"/a", false},
		{"a/-b", false},
		{"a b", false},
		{strings.Repeat("a", events.MaxNameLen), true},
		{strings.Repeat("a", events.MaxNameLen+1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := events.ValidateName(tt.name)
			if (err == nil) != tt.ok {
				t.Fatalf("ValidateName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
			}
			if err != nil && !errors.Is(err, events.ErrInvalidName) {
				t.Errorf("error %v does not wrap ErrInvalidName", err)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "events: ") {
				t.Errorf("error %q does not carry the package prefix", err)
			}
		})
	}
}

func FuzzValidateName(f *testing.F) {
	for _, s := range []string{"tools/pre-execute", "a//b", "A", "a/", "x.y_z-0", "é", "a/b/c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := events.ValidateName(s)
		want := nameGrammar.MatchString(s) && len(s) <= events.MaxNameLen
		if (err == nil) != want {
			t.Fatalf("ValidateName(%q) = %v, grammar says ok=%v", s, err, want)
		}
		if err != nil && !errors.Is(err, events.ErrInvalidName) {
			t.Fatalf("error %v does not wrap ErrInvalidName", err)
		}
	})
}
