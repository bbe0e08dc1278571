package toolbash_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	toolbash "github.com/dsh-go/dsh/plugins/tool-bash"
)

// TestOutput_NonUTF8OutputIsStillAResult: a command whose output is not
// valid UTF-8 (a binary file, a cap that falls inside a multi-byte
// character) still produces its terminal result — output and exit code —
// instead of an INVALID_RESULT because the text block is not valid UTF-8.
func TestOutput_NonUTF8OutputIsStillAResult(t *testing.T) {
	for name, tc := range map[string]struct {
		cfg     toolbash.Config
		command string
	}{
		"binary":          {toolbash.Config{}, `printf 'a\377b\n'; exit 2`},
		"cap inside rune": {toolbash.Config{MaxOutput: 4}, `printf 'aéééé'; exit 2`},
	} {
		t.Run(name, func(t *testing.T) {
			reg := boot(t, tc.cfg)
			r := run(context.Background(), reg, toolbash.Args{Command: tc.command, Description: "bytes"})
			if r.IsError {
				t.Fatalf("isError: %+v", r)
			}
			var m toolbash.Result
			if err := json.Unmarshal(r.Value, &m); err != nil {
				t.Fatal(err)
			}
			if m.ExitCode != 2 || !utf8.ValidString(m.Output) || !strings.HasPrefix(m.Output, "a") || !strings.HasSuffix(r.Content[0].Text, "[exit code 2]") {
				t.Fatalf("meta = %+v, text = %q", m, r.Content[0].Text)
			}
		})
	}
}

// TestSignal_NameIsTheSignalName: a command killed by a signal reports the
// signal's name (SIGKILL), not Go's description of it ("killed").
func TestSignal_NameIsTheSignalName(t *testing.T) {
	reg := boot(t, toolbash.Config{})
	r := run(context.Background(), reg, toolbash.Args{Command: "kill -TERM $$", Description: "suicide"})
	var m toolbash.Result
	if err := json.Unmarshal(r.Value, &m); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	if m.Signal != "SIGTERM" || m.ExitCode != -1 || !strings.HasSuffix(r.Content[0].Text, "[killed by signal SIGTERM]") {
		t.Fatalf("meta = %+v, text = %q", m, r.Content[0].Text)
	}
}
