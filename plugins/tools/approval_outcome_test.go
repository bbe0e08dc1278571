package tools_test

import (
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// ApprovalOutcomeOf maps each approval denial code to its outcome, and any
// other code to "failed" (never to a denial it is not).
func TestApprovalOutcomeOf(t *testing.T) {
	for code, want := range map[tools.ErrorCode]tools.ApprovalOutcome{
		tools.CodeApprovalRejected:    tools.Rejected,
		tools.CodeApprovalCancelled:   tools.Cancelled,
		tools.CodeApprovalUnavailable: tools.Unavailable,
		tools.CodeDenied:              "failed",
		"":                            "failed",
	} {
		if got := tools.ApprovalOutcomeOf(code); got != want {
			t.Errorf("ApprovalOutcomeOf(%q) = %q, want %q", code, got, want)
		}
	}
}
