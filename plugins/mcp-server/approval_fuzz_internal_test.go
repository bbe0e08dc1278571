package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"unicode"

	"github.com/dsh-go/dsh/plugins/codemode"
	"github.com/dsh-go/dsh/plugins/tools"
)

// The approval message of a run_code program (asked on run_code itself or
// on a call the program makes) shows every line of the program under its
// SHA-256, and no raw control or bidirectional character of it: a program
// cannot rewrite what the person approving sees.
func FuzzApprovalMessageShowsTheProgram(f *testing.F) {
	f.Add("const a = await tools.echo({text: \"x\"});\nreturn a;\n", "because")
	f.Add("\x1b[2J\r\n\u202etxt.exe\n\n", "r\x1b]0;x\a")
	f.Add("\xff\xfe\n", "")
	f.Fuzz(func(t *testing.T, code, reason string) {
		args, err := json.Marshal(map[string]string{"code": code})
		if err != nil {
			t.Fatal(err)
		}
		decoded, ok := runCodeProgram(codemode.RunCodeName, args)
		if !ok {
			t.Fatalf("run_code arguments %s not read", args)
		}
		sum := sha256.Sum256([]byte(decoded))
		lines := strings.Count(strings.TrimSuffix(decoded, "\n"), "\n") + 1
		req := tools.ApprovalRequest{Tool: codemode.RunCodeName, Reason: reason}
		own := approvalMessageArgs(context.Background(), req, args)
		req.Tool = "echo"
		sub := approvalMessageArgs(context.WithValue(context.Background(), programKey{}, code), req, []byte(`{"text":"x"}`))
		sumSub := sha256.Sum256([]byte(code))
		linesSub := strings.Count(strings.TrimSuffix(code, "\n"), "\n") + 1
		for i, msg := range []string{own, sub} {
			h, n := hex.EncodeToString(sum[:]), lines
			if i == 1 {
				h, n = hex.EncodeToString(sumSub[:]), linesSub
			}
			if !strings.Contains(msg, h) {
				t.Fatalf("no hash:\n%q", msg)
			}
			if got := strings.Count(msg, "\n  | "); got != n {
				t.Fatalf("%d program lines shown, want %d:\n%q", got, n, msg)
			}
			for _, r := range msg {
				if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
					t.Fatalf("raw %U in the message:\n%q", r, msg)
				}
			}
		}
	})
}
