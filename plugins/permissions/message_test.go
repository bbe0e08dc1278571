package permissions_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dsh-go/dsh/plugins/permissions"
)

// A refused rule is quoted shortened in the error, never cut inside a
// UTF-8 sequence.
func TestRefusedRuleIsQuotedAsValidUTF8(t *testing.T) {
	rule := "xy" + strings.Repeat("é", 60) + " (" // invalid: a space in the tool name
	_, err := permissions.ParseRule(rule)
	if err == nil {
		t.Fatal("accepted")
	}
	if !utf8.ValidString(err.Error()) || strings.Contains(err.Error(), "\\x") {
		t.Errorf("message not valid UTF-8: %q", err.Error())
	}
}
