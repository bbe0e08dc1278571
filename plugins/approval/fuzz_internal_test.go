package approval

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/dsh-go/dsh/plugins/tools"
)

// answerOutcome is what the terminal's documented rules give for one typed
// line (without its line ending) when a second question would hit end of
// input: "y"/"yes" allow once, "n"/"no"/"" reject, anything else is asked
// again and so, here, ends as unavailable. Case is ASCII case (no other
// rune lower-cases to one of these letters) and blanks are Unicode white
// space, as strings.TrimSpace defines it.
func answerOutcome(line string) tools.ApprovalOutcome {
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return tools.AllowedOnce
	case "n", "no", "":
		return tools.Rejected
	}
	return tools.Unavailable
}

// FuzzTerminalAnswer: the outcome of one typed line follows the documented
// rules. In particular only a line that is y or yes (any case, surrounding
// blanks ignored) is ever allowed, and a parseable answer is decided on the
// first line; an unparseable one is asked again (here the second question
// meets end of input and so is unavailable, never allowed).
func FuzzTerminalAnswer(f *testing.F) {
	for _, s := range []string{
		"y", "Y", "yes", "YES", " yEs\t", "yes\r", "n", "No", "", "  ", "\r",
		"ye", "yess", "y y", "yes no", "no yes", "1", "ok", "sure", "\x00y",
		"y\x00", "\u00a0y\u00a0", "yeſ", "\u212a", "ｙ", "\xff",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		if strings.Contains(line, "\n") {
			t.Skip("one line at a time")
		}
		// A line longer than maxLineBytes is cut and then cannot be an
		// answer (fail closed): it is asked again, and the second
		// question meets end of input. See TestTerminalLongLineIsCut.
		kept := strings.TrimSuffix(line, "\r")
		if len(kept) > maxLineBytes {
			kept = "\x00 cut"
		}

		term := NewTerminal(strings.NewReader(line+"\n"), io.Discard)
		term.Attempts = 2
		got, err := term.Answer(context.Background(), tools.ApprovalRequest{Tool: "bash", CallID: "c1"})
		if err != nil {
			t.Fatalf("Answer(%q): %v", line, err)
		}
		if want := answerOutcome(kept); got != want {
			t.Fatalf("Answer(%q) = %v, want %v", line, got, want)
		}
		// Safety, stated on the whole line: a line is allowed only when it
		// is y or yes, whatever else it holds.
		if got == tools.AllowedOnce {
			if k := strings.ToLower(strings.TrimSpace(strings.TrimSuffix(line, "\r"))); k != "y" && k != "yes" {
				t.Fatalf("Answer(%q) allowed a line that is not y or yes", line)
			}
		}
	})
}

// TestTerminalLongLineIsCut pins what the terminal does with a line longer
// than maxLineBytes: only a prefix is kept, so the line cannot be read as
// an answer, whatever it starts with; it is asked again (fail closed: a
// "y" followed by 5000 blanks and "no" is not an approval).
func TestTerminalLongLineIsCut(t *testing.T) {
	pad := strings.Repeat(" ", maxLineBytes)
	for _, tc := range []struct {
		name, line string
		want       tools.ApprovalOutcome
	}{
		{"yes then blanks then no", "y" + pad + "no", tools.Unavailable},
		{"blanks then yes", pad + "y", tools.Unavailable},
		{"junk then yes", strings.Repeat("x", maxLineBytes) + "y", tools.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			term := NewTerminal(strings.NewReader(tc.line+"\n"), io.Discard)
			term.Attempts = 2
			got, err := term.Answer(context.Background(), tools.ApprovalRequest{Tool: "bash", CallID: "c1"})
			if err != nil || got != tc.want {
				t.Fatalf("Answer = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
